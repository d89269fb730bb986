package backend

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"strings"
	"sync/atomic"
)

// RemoveAll removes name and, when it is a directory, everything below it.
// A missing name is not an error.
func RemoveAll(ctx context.Context, s Storage, name string) error {
	info, err := s.Stat(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir {
		var children []Info
		for c, err := range s.List(ctx, name) {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				return err
			}
			children = append(children, c)
		}
		for _, c := range children {
			if err := RemoveAll(ctx, s, c.Name); err != nil {
				return err
			}
		}
		if name == "." {
			return nil
		}
	}
	if err := s.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Walk yields every file and directory below dir, depth first, in name order.
// A missing dir yields nothing.
func Walk(ctx context.Context, s Storage, dir string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		walk(ctx, s, dir, yield)
	}
}

func walk(ctx context.Context, s Storage, dir string, yield func(Info, error) bool) bool {
	for info, err := range s.List(ctx, dir) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return true
			}
			return yield(Info{}, err)
		}
		if !yield(info, nil) {
			return false
		}
		if info.IsDir && !walk(ctx, s, info.Name, yield) {
			return false
		}
	}
	return true
}

// Sub returns a Storage rooted at dir inside s. Names given to it and names
// it returns are relative to dir. Closing it does not close s.
func Sub(s Storage, dir string) (Storage, error) {
	if err := ValidPath(dir); err != nil {
		return nil, PathErr("sub", dir, err)
	}
	return &sub{s: s, dir: dir}, nil
}

type sub struct {
	s      Storage
	dir    string
	closed atomic.Bool
}

func (b *sub) full(op, name string, isDir bool) (string, error) {
	if b.closed.Load() {
		return "", PathErr(op, name, ErrClosed)
	}
	check := ValidPath
	if isDir {
		check = ValidDir
	}
	if err := check(name); err != nil {
		return "", PathErr(op, name, err)
	}
	return Join(b.dir, name), nil
}

// rel maps errors and infos from the inner names back to ours.
func (b *sub) rel(name string) string {
	if name == b.dir {
		return "."
	}
	return strings.TrimPrefix(name, b.dir+"/")
}

func (b *sub) err(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: b.rel(pe.Path), Err: pe.Err}
	}
	return err
}

// Capabilities are the parent's, with the name limit shortened by the prefix.
func (b *sub) Capabilities() Capabilities {
	c := b.s.Capabilities()
	if c.MaxNameBytes > 0 {
		c.MaxNameBytes = max(c.MaxNameBytes-len(b.dir)-1, 0)
	}
	return c
}

// Crash crashes the parent when it can (Capabilities.Crash says whether).
func (b *sub) Crash() {
	if c, ok := b.s.(Crasher); ok {
		c.Crash()
	}
}

func (b *sub) EnsureDir(ctx context.Context, dir string) error {
	full, err := b.full("mkdir", dir, true)
	if err != nil {
		return err
	}
	return b.err(b.s.EnsureDir(ctx, full))
}

func (b *sub) Stat(ctx context.Context, name string) (Info, error) {
	full, err := b.full("stat", name, true)
	if err != nil {
		return Info{}, err
	}
	info, err := b.s.Stat(ctx, full)
	info.Name = b.rel(info.Name)
	return info, b.err(err)
}

func (b *sub) List(ctx context.Context, dir string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		full, err := b.full("list", dir, true)
		if err != nil {
			yield(Info{}, err)
			return
		}
		for info, err := range b.s.List(ctx, full) {
			info.Name = b.rel(info.Name)
			if !yield(info, b.err(err)) {
				return
			}
		}
	}
}

func (b *sub) ReadFile(ctx context.Context, name string) ([]byte, error) {
	full, err := b.full("read", name, false)
	if err != nil {
		return nil, err
	}
	data, err := b.s.ReadFile(ctx, full)
	return data, b.err(err)
}

func (b *sub) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	full, err := b.full("open", name, false)
	if err != nil {
		return nil, err
	}
	rc, err := b.s.Open(ctx, full)
	return rc, b.err(err)
}

func (b *sub) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	full, err := b.full("open", name, false)
	if err != nil {
		return nil, err
	}
	rc, err := b.s.OpenRange(ctx, full, offset, length)
	return rc, b.err(err)
}

func (b *sub) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	full, err := b.full("read", name, false)
	if err != nil {
		return nil, err
	}
	data, err := b.s.ReadPrefix(ctx, full, n)
	return data, b.err(err)
}

func (b *sub) WriteFile(ctx context.Context, name string, data []byte) error {
	full, err := b.full("write", name, false)
	if err != nil {
		return err
	}
	return b.err(b.s.WriteFile(ctx, full, data))
}

func (b *sub) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	full, err := b.full("write", name, false)
	if err != nil {
		return 0, err
	}
	n, err := b.s.WriteFrom(ctx, full, r)
	return n, b.err(err)
}

func (b *sub) CreateFile(ctx context.Context, name string, data []byte) error {
	full, err := b.full("write", name, false)
	if err != nil {
		return err
	}
	return b.err(CreateFile(ctx, b.s, full, data))
}

func (b *sub) OpenInfo(ctx context.Context, name string) (io.ReadCloser, Info, error) {
	full, err := b.full("open", name, false)
	if err != nil {
		return nil, Info{}, err
	}
	rc, info, err := OpenInfo(ctx, b.s, full)
	info.Name = b.rel(info.Name)
	return rc, info, b.err(err)
}

func (b *sub) OpenWriter(ctx context.Context, name string, opt WriterOptions) (Writer, error) {
	full, err := b.full("open", name, false)
	if err != nil {
		return nil, err
	}
	w, err := b.s.OpenWriter(ctx, full, opt)
	return w, b.err(err)
}

func (b *sub) Rename(ctx context.Context, from, to string) error {
	f, err := b.full("rename", from, false)
	if err != nil {
		return err
	}
	t, err := b.full("rename", to, false)
	if err != nil {
		return err
	}
	return b.err(b.s.Rename(ctx, f, t))
}

func (b *sub) Unlink(ctx context.Context, name string) error {
	full, err := b.full("unlink", name, false)
	if err != nil {
		return err
	}
	return b.err(b.s.Unlink(ctx, full))
}

func (b *sub) Lock(ctx context.Context, name string, wait bool) (Unlocker, error) {
	full, err := b.full("lock", name, false)
	if err != nil {
		return nil, err
	}
	u, err := b.s.Lock(ctx, full, wait)
	return u, b.err(err)
}

// Close makes the sub refuse further calls; the parent stays open.
func (b *sub) Close() error {
	b.closed.Store(true)
	return nil
}
