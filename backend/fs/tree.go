package fs

import (
	iofs "io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/internal/beneath"
)

// tree is the little a Storage needs from a file system, with names that are
// slash paths relative to the root ("." is the root).
type tree interface {
	openFile(name string, flag int, perm iofs.FileMode) (afero.File, error)
	mkdir(name string, perm iofs.FileMode) error
	stat(name string) (iofs.FileInfo, error)
	lstat(name string) (iofs.FileInfo, error) // does not follow a final symlink
	rename(from, to string) error
	remove(name string) error
	close() error
}

// osTree resolves every name through an os.Root: the kernel walks each
// element with openat and O_NOFOLLOW, so a symlink out of the root is refused
// even if it is swapped in between a check and the use.
// Opens resolve in one call where the kernel can (see package beneath):
// os.Root opens each directory on the way, and a store opens a file for
// every read, append and atomic write.
type osTree struct {
	r *os.Root
	b *beneath.Root
}

func newOSTree(r *os.Root, abs string) osTree { return osTree{r: r, b: beneath.Open(abs)} }

func (t osTree) openFile(name string, flag int, perm iofs.FileMode) (afero.File, error) {
	fd, err := t.b.OpenFile(name, flag, unixMode(perm), false)
	if err == nil {
		return os.NewFile(uintptr(fd), name), nil
	}
	if !beneath.Undecided(err) {
		return nil, err
	}
	f, err := t.r.OpenFile(filepath.FromSlash(name), flag, perm)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return f, nil
}

// unixMode is perm as open(2) takes it, as os does.
func unixMode(perm iofs.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&iofs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if perm&iofs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if perm&iofs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

func (t osTree) mkdir(name string, perm iofs.FileMode) error {
	return t.r.Mkdir(filepath.FromSlash(name), perm)
}
func (t osTree) stat(name string) (iofs.FileInfo, error) { return t.r.Stat(filepath.FromSlash(name)) }
func (t osTree) lstat(name string) (iofs.FileInfo, error) {
	return t.r.Lstat(filepath.FromSlash(name))
}
func (t osTree) rename(from, to string) error {
	return t.r.Rename(filepath.FromSlash(from), filepath.FromSlash(to))
}
func (t osTree) remove(name string) error { return t.r.Remove(filepath.FromSlash(name)) }
func (t osTree) close() error {
	t.b.Close()
	return t.r.Close()
}

// aferoTree is any afero.Fs below a base directory. It relies on the Fs for
// containment; names are validated before they get here.
type aferoTree struct {
	fs   afero.Fs
	base string
	// excl makes an exclusive create atomic: afero's MemMapFs checks
	// O_EXCL and creates in two steps, so two racers could both create.
	excl *sync.Mutex
}

func (t aferoTree) path(name string) string {
	if name == "." {
		return t.base
	}
	return filepath.Join(t.base, filepath.FromSlash(name))
}

func (t aferoTree) openFile(name string, flag int, perm iofs.FileMode) (afero.File, error) {
	if flag&os.O_EXCL != 0 {
		t.excl.Lock()
		defer t.excl.Unlock()
	}
	return t.fs.OpenFile(t.path(name), flag, perm)
}
func (t aferoTree) mkdir(name string, perm iofs.FileMode) error {
	return t.fs.Mkdir(t.path(name), perm)
}
func (t aferoTree) stat(name string) (iofs.FileInfo, error) { return t.fs.Stat(t.path(name)) }
func (t aferoTree) lstat(name string) (iofs.FileInfo, error) {
	if l, ok := t.fs.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(t.path(name))
		return fi, err
	}
	return t.fs.Stat(t.path(name))
}
func (t aferoTree) rename(from, to string) error { return t.fs.Rename(t.path(from), t.path(to)) }
func (t aferoTree) remove(name string) error     { return t.fs.Remove(t.path(name)) }
func (t aferoTree) close() error                 { return nil }
