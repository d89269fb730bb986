package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/spf13/afero"
)

// fsWorkspace is a directory inside an afero.Fs. It checks every parent of a
// path it writes (see Manager), but unlike Dir it cannot close the window
// between a check and a write on a real disk; use Dir for real directories.
type fsWorkspace struct {
	fs   afero.Fs
	root string
}

// FS makes the directory dir of fsys the workspace ("/" for all of it, as
// with afero.NewMemMapFs or afero.NewBasePathFs).
func FS(fsys afero.Fs, dir string) Workspace {
	return &fsWorkspace{fs: fsys, root: filepath.Clean(dir)}
}

func (w *fsWorkspace) name(rel string) string {
	if rel == "." {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

func (w *fsWorkspace) abs() string {
	if _, ok := w.fs.(*afero.OsFs); ok {
		if a, err := filepath.Abs(w.root); err == nil {
			return a
		}
	}
	return ""
}

func (w *fsWorkspace) Close() error { return nil }

func (w *fsWorkspace) dirMtimes() bool {
	_, os := w.fs.(*afero.OsFs)
	return os
}

func (w *fsWorkspace) lstatInfo(name string) (fs.FileInfo, error) {
	if l, ok := w.fs.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(name)
		return fi, err
	}
	return w.fs.Stat(name)
}

func (w *fsWorkspace) lstat(rel string) (fileStat, error) {
	fi, err := w.lstatInfo(w.name(rel))
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}

func (w *fsWorkspace) readDir(dir string) ([]dirEntry, error) {
	f, err := w.fs.Open(w.name(dir))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(names))
	for _, n := range names {
		// Readdir's infos follow symlinks on some Fs; lstat each instead.
		fi, err := w.lstatInfo(filepath.Join(w.name(dir), n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{name: n, st: statOf(fi)})
	}
	return out, nil
}

func (w *fsWorkspace) statNames(dir string, names []string, buf []dirEntry) ([]dirEntry, error) {
	return statNamesWith(w.lstat, dir, names, buf)
}

func (w *fsWorkspace) readFile(rel string, limit int64, buf []byte) ([]byte, error) {
	f, err := w.fs.Open(w.name(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, rel, limit, buf)
}

func (w *fsWorkspace) readlink(rel string) (string, error) {
	if l, ok := w.fs.(afero.LinkReader); ok {
		return l.ReadlinkIfPossible(w.name(rel))
	}
	return "", &fs.PathError{Op: "readlink", Path: rel, Err: afero.ErrNoReadlink}
}

func (w *fsWorkspace) mkdir(rel string, perm fs.FileMode) error {
	return w.fs.Mkdir(w.name(rel), perm)
}

// remove removes a file or an empty directory, as os.Remove does: afero's
// memory Fs removes a directory whatever it holds, and a rewind relies on
// the refusal to keep what it does not cover.
func (w *fsWorkspace) remove(rel string) error {
	name := w.name(rel)
	if st, err := w.lstat(rel); err == nil && st.IsDir() {
		d, err := w.fs.Open(name)
		if err != nil {
			return err
		}
		names, err := d.Readdirnames(1)
		d.Close()
		if len(names) > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return w.fs.Remove(name)
}

func (w *fsWorkspace) symlink(target, rel string) error {
	if l, ok := w.fs.(afero.Linker); ok {
		return l.SymlinkIfPossible(target, w.name(rel))
	}
	return &fs.PathError{Op: "symlink", Path: rel, Err: afero.ErrNoSymlink}
}

func (w *fsWorkspace) rename(from, to string) error {
	return w.fs.Rename(w.name(from), w.name(to))
}

func (w *fsWorkspace) chmod(rel string, perm fs.FileMode) error {
	return w.fs.Chmod(w.name(rel), perm)
}

func (w *fsWorkspace) open(rel string) (io.ReadCloser, error) {
	return w.fs.Open(w.name(rel))
}

func (w *fsWorkspace) writeTemp(rel string, src io.Reader, perm fs.FileMode, sync bool) (string, error) {
	tmp := tempName(rel)
	f, err := w.fs.OpenFile(w.name(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if err := writeClose(f, src, sync, func() error { return w.fs.Chmod(w.name(tmp), perm) }); err != nil {
		_ = w.fs.Remove(w.name(tmp))
		return "", err
	}
	return tmp, nil
}

func (w *fsWorkspace) syncDir(dir string) error {
	if _, ok := w.fs.(*afero.MemMapFs); ok {
		return nil
	}
	f, err := w.fs.Open(w.name(dir))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path.Clean(dir), err)
	}
	return nil
}
