//go:build linux && !(amd64 || arm64)

package checkpoint

import "golang.org/x/sys/unix"

// lstatAt is fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW) of a NUL-terminated
// path (raw: see the amd64 and arm64 version).
func lstatAt(dirfd int, path []byte, st *unix.Stat_t, _ bool) error {
	return unix.Fstatat(dirfd, string(path[:len(path)-1]), st, unix.AT_SYMLINK_NOFOLLOW)
}
