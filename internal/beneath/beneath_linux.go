//go:build linux

package beneath

import (
	"errors"
	iofs "io/fs"

	"golang.org/x/sys/unix"
)

// Open opens the directory path; a Root that cannot be opened has no fast
// path, and every OpenFile on it says so.
func Open(path string) *Root {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	return &Root{fd: fd}
}

// Close closes the root's descriptor.
func (r *Root) Close() {
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

// OpenFile opens name, a slash path relative to the root, with flags
// (O_CLOEXEC and O_NOCTTY added) and, when it creates the file, mode
// (before the umask), never through a symlink that leads out of the root,
// nor through any symlink when noSymlinks is set. A failure is
// ErrUnsupported or an *fs.PathError; see Undecided.
func (r *Root) OpenFile(name string, flags int, mode uint32, noSymlinks bool) (fd int, err error) {
	if r.fd < 0 || r.off.Load() {
		return -1, ErrUnsupported
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC | unix.O_NOCTTY),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode) // openat2 refuses a mode with neither
	}
	if noSymlinks {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	fd, err = unix.Openat2(r.fd, name, &how)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		r.off.Store(true)
		return -1, ErrUnsupported
	}
	return -1, &iofs.PathError{Op: "open", Path: name, Err: err}
}

// Undecided reports whether err from OpenFile leaves the answer to os.Root:
// no fast path, a symlink in the way (ELOOP: one was refused; EXDEV: it
// leads out of the root, which os.Root refuses too, in its own words), or
// a rename racing the lookup (EAGAIN).
func Undecided(err error) bool {
	return errors.Is(err, ErrUnsupported) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EAGAIN)
}
