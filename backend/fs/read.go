package fs

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
)

func info(name string, fi iofs.FileInfo) backend.Info {
	in := backend.Info{Name: name, ModTime: fi.ModTime(), IsDir: fi.IsDir()}
	if !in.IsDir {
		in.Size = fi.Size() // MemMapFs reports 42 for directories
	}
	return in
}

// Stat describes name, following symlinks that stay inside the root.
func (s *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	if err := s.begin(ctx, op, name, true); err != nil {
		return backend.Info{}, err
	}
	fi, err := s.t.stat(name)
	if err != nil {
		return backend.Info{}, s.fail(op, name, missing(err))
	}
	return info(name, fi), nil
}

// List yields the direct children of dir sorted by name. Reserved names (temp
// files), names that are not valid trove names and symlinks that are dangling
// or lead out of the root are left out.
func (s *Storage) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		const op = "list"
		if err := s.begin(ctx, op, dir, true); err != nil {
			yield(backend.Info{}, err)
			return
		}
		infos, err := s.readDir(dir)
		if err != nil {
			yield(backend.Info{}, s.fail(op, dir, err))
			return
		}
		for _, in := range infos {
			if err := ctx.Err(); err != nil {
				yield(backend.Info{}, backend.PathErr(op, dir, err))
				return
			}
			if !yield(in, nil) {
				return
			}
		}
	}
}

func (s *Storage) readDir(dir string) ([]backend.Info, error) {
	d, err := s.t.openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return nil, missing(err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, notDir(dir)
	}
	fis, err := d.Readdir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]backend.Info, 0, len(fis))
	for _, fi := range fis {
		base := fi.Name()
		if strings.HasPrefix(base, backend.ReservedPrefix) {
			continue
		}
		name := backend.Join(dir, base)
		if backend.ValidPath(name) != nil {
			s.log.Debug("trove/fs: not listing an invalid name", "dir", dir, "base", base)
			continue
		}
		if fi.Mode()&iofs.ModeSymlink != 0 {
			target, err := s.t.stat(name)
			if err != nil {
				s.log.Debug("trove/fs: not listing a symlink", "name", name, "err", err)
				continue
			}
			fi = target
		}
		out = append(out, info(name, fi))
	}
	slices.SortFunc(out, func(a, b backend.Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// openRead opens name for reading and returns its size; a directory is ErrIsDir.
func (s *Storage) openRead(op, name string) (afero.File, int64, error) {
	f, err := s.t.openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, s.fail(op, name, missing(err))
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = isDir(name)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, s.fail(op, name, err)
	}
	return f, fi.Size(), nil
}

// ReadFile returns the whole content of name.
func (s *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	const op = "read"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	f, size, err := s.openRead(op, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized from stat, grown if the file grew meanwhile.
	buf := make([]byte, 0, size+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, backend.PathErr(op, name, err)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, copyChunk)
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), len(buf)+copyChunk)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, s.fail(op, name, err)
		}
	}
}

// Open streams name; each Read first checks ctx.
func (s *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.OpenRange(ctx, name, 0, -1)
}

// OpenRange streams length bytes from offset (to the end if length < 0),
// seeking rather than reading what comes before.
func (s *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	const op = "open"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	f, size, err := s.openRead(op, name)
	if err != nil {
		return nil, err
	}
	// Clip at the size: MemMapFs fails a read positioned past the end.
	offset = min(offset, size)
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, s.fail(op, name, err)
		}
	}
	r := &reader{ctx: ctx, name: name, f: f, r: f}
	if length >= 0 {
		r.r = io.LimitReader(f, length)
	}
	return r, nil
}

// ReadPrefix returns the first min(n, size) bytes of name, reading no more.
func (s *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	const op = "read"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	f, size, err := s.openRead(op, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, min(int64(n), size))
	k, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		return nil, s.fail(op, name, err)
	}
	return buf[:k], nil
}

// reader is what Open returns: a file that gives up once ctx is done.
type reader struct {
	ctx    context.Context
	name   string
	f      afero.File
	r      io.Reader
	closed bool
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, backend.PathErr("read", r.name, iofs.ErrClosed)
	}
	if err := r.ctx.Err(); err != nil {
		return 0, backend.PathErr("read", r.name, err)
	}
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = backend.PathErr("read", r.name, classify(err))
	}
	return n, err
}

func (r *reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.f.Close()
}
