package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovekit/trove/internal/beneath"
)

// errTooBig: a file over the size limit of a read.
var errTooBig = errors.New("file over the size limit")

// dirWorkspace is a real directory, reached only through an os.Root, so no
// operation can leave the directory even if the tree changes under it.
type dirWorkspace struct {
	root *os.Root
	path string
	// Linux fast path of readDir (see ws_dir_linux.go).
	fast *beneath.Root
	bufs sync.Pool
	// rawOK (WithRawStats), born, rawAfter (a time since born), rawOff
	// and slowStats decide which stats are made raw (see rawEvery).
	rawOK     atomic.Bool
	born      time.Time
	rawAfter  atomic.Int64
	rawOff    atomic.Bool
	slowStats atomic.Int32
}

// Dir opens the workspace at the directory path. Close it when done (the
// Manager that uses it does so in its own Close).
func Dir(dir string) (Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint workspace %q: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("checkpoint workspace: %w", err)
	}
	w := &dirWorkspace{root: root, path: abs, fast: beneath.Open(abs), born: time.Now()}
	w.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	return w, nil
}

func osName(name string) string { return filepath.FromSlash(name) }

func (w *dirWorkspace) abs() string     { return w.path }
func (w *dirWorkspace) dirMtimes() bool { return true }
func (w *dirWorkspace) Close() error {
	w.fast.Close()
	return w.root.Close()
}

func (w *dirWorkspace) lstat(name string) (fileStat, error) {
	fi, err := w.root.Lstat(osName(name))
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}

func (w *dirWorkspace) readDir(dir string) ([]dirEntry, error) {
	if ents, ok, err := w.readDirFast(dir); ok {
		return ents, err
	}
	f, err := w.root.Open(osName(dir))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while we listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{name: e.Name(), st: statOf(fi)})
	}
	return out, nil
}

func (w *dirWorkspace) statNames(dir string, names []string, buf []dirEntry) ([]dirEntry, error) {
	if ents, ok, err := w.statNamesFast(dir, names, buf); ok {
		return ents, err
	}
	return statNamesWith(w.lstat, dir, names, buf)
}

func (w *dirWorkspace) readFile(name string, limit int64, buf []byte) ([]byte, error) {
	f, ok, err := w.openFast(name)
	if !ok {
		f, err = w.root.Open(osName(name))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name, limit, buf)
}

// readLimited reads f whole, refusing more than limit bytes (limit < 0: no
// limit). It sizes the buffer from Stat and copes with a file that grows.
func readLimited(f interface {
	io.Reader
	Stat() (fs.FileInfo, error)
}, name string, limit int64, buf []byte) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	size := fi.Size()
	if limit >= 0 && size > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errTooBig}
	}
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1) // +1: see EOF without growing
	}
	buf = buf[:0]
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if limit >= 0 && int64(len(buf)) > limit {
			return nil, &fs.PathError{Op: "read", Path: name, Err: errTooBig}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

func (w *dirWorkspace) readlink(name string) (string, error) {
	return w.root.Readlink(osName(name))
}

func (w *dirWorkspace) mkdir(name string, perm fs.FileMode) error {
	return w.root.Mkdir(osName(name), perm)
}

func (w *dirWorkspace) remove(name string) error { return w.root.Remove(osName(name)) }

func (w *dirWorkspace) symlink(target, name string) error {
	return w.root.Symlink(target, osName(name))
}

func (w *dirWorkspace) rename(from, to string) error {
	return w.root.Rename(osName(from), osName(to))
}

func (w *dirWorkspace) chmod(name string, perm fs.FileMode) error {
	return w.root.Chmod(osName(name), perm)
}

func (w *dirWorkspace) open(name string) (io.ReadCloser, error) {
	return w.root.Open(osName(name))
}

func (w *dirWorkspace) writeTemp(name string, src io.Reader, perm fs.FileMode, sync bool) (string, error) {
	tmp := tempName(name)
	f, err := w.root.OpenFile(osName(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if err := writeClose(f, src, sync, func() error { return f.Chmod(perm) }); err != nil {
		_ = w.root.Remove(osName(tmp))
		return "", err
	}
	return tmp, nil
}

func (w *dirWorkspace) syncDir(dir string) error {
	f, err := w.root.Open(osName(dir))
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeClose writes data, sets the exact mode with chmod (the umask does
// not apply to it), syncs when asked and closes.
func writeClose(f interface {
	io.Writer
	Sync() error
	Close() error
}, src io.Reader, sync bool, chmod func() error) error {
	_, err := io.Copy(f, src)
	if err == nil {
		err = chmod()
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tempName is a fresh temporary name beside name.
func tempName(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return path.Join(path.Dir(name), tempPrefix+hex.EncodeToString(b[:]))
}
