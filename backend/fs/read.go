package fs

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"slices"

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
func (s *fsDriver) Stat(_ context.Context, name string) (backend.Info, error) {
	fi, err := s.t.stat(name)
	if err != nil {
		return backend.Info{}, missing(err)
	}
	return info(name, fi), nil
}

// List returns the children of dir. Temp files, and names that are not
// valid trove names, are left to the portable layer to drop; symlinks that
// are dangling or lead out of the root are left out here.
func (s *fsDriver) List(_ context.Context, dir string) ([]backend.Info, error) {
	d, err := s.t.openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return nil, missing(err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, classify(err)
	}
	if !fi.IsDir() {
		return nil, notDir(dir)
	}
	fis, err := d.Readdir(-1)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]backend.Info, 0, len(fis))
	for _, fi := range fis {
		name := backend.Join(dir, fi.Name())
		if fi.Mode()&iofs.ModeSymlink != 0 && backend.ValidPath(name) == nil {
			target, err := s.t.stat(name)
			if err != nil {
				s.log.Debug("trove/fs: not listing a symlink", "name", name, "err", err)
				continue
			}
			fi = target
		}
		out = append(out, info(name, fi))
	}
	return out, nil
}

// openRead opens name for reading and returns its size; a directory is ErrIsDir.
func (s *fsDriver) openRead(name string) (afero.File, int64, error) {
	f, err := s.t.openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, missing(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = isDir(name)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, classify(err)
	}
	return f, fi.Size(), nil
}

// ReadFile is the driver.FileReader fast path: one buffer sized from stat.
func (s *fsDriver) ReadFile(ctx context.Context, name string) ([]byte, error) {
	f, size, err := s.openRead(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Grown if the file grew meanwhile.
	buf := make([]byte, 0, size+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, copyChunk)
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), len(buf)+copyChunk)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) { // see reader.Read
			return buf, nil
		}
		if err != nil {
			return nil, classify(err)
		}
	}
}

// OpenRange seeks rather than reading what comes before offset.
func (s *fsDriver) OpenRange(_ context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	f, size, err := s.openRead(name)
	if err != nil {
		return nil, err
	}
	// Clip at the size: MemMapFs fails a read positioned past the end.
	offset = min(offset, size)
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, classify(err)
		}
	}
	r := &reader{f: f, r: f}
	if length >= 0 {
		r.r = io.LimitReader(f, length)
	}
	return r, nil
}

// reader reads an open file.
type reader struct {
	f afero.File
	r io.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	// MemMapFs reports a read positioned past the end, after a concurrent
	// truncation, as ErrUnexpectedEOF; for a reader that is just the end.
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	if err != nil && err != io.EOF {
		err = classify(err)
	}
	return n, err
}

func (r *reader) Close() error { return classify(r.f.Close()) }
