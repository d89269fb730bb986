//go:build linux && (amd64 || arm64)

package checkpoint

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// lstatAt is fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW) of a NUL-terminated
// path, without the copy unix.Fstatat makes of a string. raw makes it
// without telling the scheduler, which then cannot hand the thread's P to
// another goroutine while the call blocks: see statNamesFast.
func lstatAt(dirfd int, path []byte, st *unix.Stat_t, raw bool) error {
	if raw {
		_, _, e := unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	}
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
