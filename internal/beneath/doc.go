// Package beneath opens files below a root directory in one system call
// where the kernel can: Linux's openat2 with RESOLVE_BENEATH resolves a
// whole name, refusing any symlink that leads out of the root, where
// os.Root opens each directory on the way in turn. The file system
// backend's reads and the checkpoint walk use it; where it says it cannot
// decide, they ask os.Root, whose answer stands.
//
// Imports: the standard library and golang.org/x/sys/unix.
package beneath
