package fs_test

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"sync"
	"testing"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
	trovefs "github.com/trovekit/trove/backend/fs"
)

// flavour is one way to make a fresh Storage, on the OS or on a MemMapFs,
// with the Fs it sits on for looking behind its back.
type flavour struct {
	name string
	open func(t *testing.T) (*trovefs.Storage, afero.Fs)
}

func flavours() []flavour {
	return []flavour{
		{"os", func(t *testing.T) (*trovefs.Storage, afero.Fs) {
			return openOS(t, t.TempDir()+"/root"), afero.NewOsFs()
		}},
		{"mem", func(t *testing.T) (*trovefs.Storage, afero.Fs) {
			fsys := afero.NewMemMapFs()
			return openMem(t, fsys, "/root"), fsys
		}},
	}
}

func openOS(t *testing.T, root string, opts ...trovefs.Option) *trovefs.Storage {
	t.Helper()
	s, err := trovefs.NewOS(root, opts...)
	if err != nil {
		t.Fatalf("NewOS(%q): %v", root, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openMem(t *testing.T, fsys afero.Fs, root string, opts ...trovefs.Option) *trovefs.Storage {
	t.Helper()
	s, err := trovefs.New(fsys, root, opts...)
	if err != nil {
		t.Fatalf("New(mem, %q): %v", root, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func each(t *testing.T, f func(t *testing.T, s *trovefs.Storage)) {
	eachRaw(t, func(t *testing.T, s *trovefs.Storage, _ afero.Fs) { f(t, s) })
}

func eachRaw(t *testing.T, f func(t *testing.T, s *trovefs.Storage, fsys afero.Fs)) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			s, fsys := fl.open(t)
			f(t, s, fsys)
		})
	}
}

func mustWrite(t *testing.T, s backend.Storage, name, data string) {
	t.Helper()
	if err := s.WriteFile(context.Background(), name, []byte(data)); err != nil {
		t.Fatalf("WriteFile(%q): %v", name, err)
	}
}

func mustRead(t *testing.T, s backend.Storage, name string) string {
	t.Helper()
	b, err := s.ReadFile(context.Background(), name)
	if err != nil {
		t.Fatalf("ReadFile(%q): %v", name, err)
	}
	return string(b)
}

func list(t *testing.T, s backend.Storage, dir string) []string {
	t.Helper()
	var names []string
	for in, err := range s.List(context.Background(), dir) {
		if err != nil {
			t.Fatalf("List(%q): %v", dir, err)
		}
		names = append(names, in.Name)
	}
	return names
}

// wantErr checks errors.Is against every target and that err is a
// *fs.PathError naming op and path.
func wantErr(t *testing.T, err error, op, path string, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s %q: no error, want %v", op, path, targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("%s %q: %v is not %v", op, path, err, target)
		}
	}
	var pe *iofs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("%s %q: %T is not a *fs.PathError", op, path, err)
		return
	}
	if op != "" && (pe.Op != op || pe.Path != path) {
		t.Errorf("error names %s %q, want %s %q: %v", pe.Op, pe.Path, op, path, err)
	}
}

// countingFs counts the bytes read and the Syncs per name on any afero.Fs.
type countingFs struct {
	afero.Fs
	mu    sync.Mutex
	read  int64
	syncs map[string]int
}

func newCountingFs() *countingFs {
	return &countingFs{Fs: afero.NewMemMapFs(), syncs: map[string]int{}}
}

func (c *countingFs) Open(name string) (afero.File, error) {
	f, err := c.Fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (c *countingFs) OpenFile(name string, flag int, perm iofs.FileMode) (afero.File, error) {
	f, err := c.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (c *countingFs) snapshot() (int64, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	syncs := map[string]int{}
	for k, v := range c.syncs {
		syncs[k] = v
	}
	return c.read, syncs
}

func (c *countingFs) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read = 0
	c.syncs = map[string]int{}
}

type countingFile struct {
	afero.File
	fs *countingFs
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.fs.mu.Lock()
	f.fs.read += int64(n)
	f.fs.mu.Unlock()
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.fs.mu.Lock()
	f.fs.read += int64(n)
	f.fs.mu.Unlock()
	return n, err
}

func (f *countingFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[f.Name()]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// errReader fails after giving some bytes, or runs fn before each Read.
type errReader struct {
	data   []byte
	err    error
	before func()
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.before != nil {
		r.before()
	}
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var _ io.Reader = (*errReader)(nil)
