//go:build linux && (amd64 || arm64)

package checkpoint

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// lstatAt is fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW) of a NUL-terminated
// path, without the copy unix.Fstatat makes of a string.
func lstatAt(dirfd int, path []byte, st *unix.Stat_t) error {
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
