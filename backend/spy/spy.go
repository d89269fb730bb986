package spy

import (
	"context"
	"fmt"
	"io"
	"iter"
	"slices"
	"sync"

	"github.com/trovekit/trove/backend"
)

// Call is one recorded call.
type Call struct {
	Op   string // method name: "WriteFile", "Writer.Write", ...
	Name string // the path argument; Rename's source
	To   string // Rename's destination
	N    int64  // bytes written or read, or entries listed
	Err  error
}

func (c Call) String() string {
	s := c.Op + " " + c.Name
	if c.To != "" {
		s += " -> " + c.To
	}
	if c.N != 0 {
		s += fmt.Sprintf(" n=%d", c.N)
	}
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}

// mutating are the ops that can change what the store holds.
var mutating = []string{"EnsureDir", "WriteFile", "CreateFile", "WriteFrom", "OpenWriter", "Writer.Write", "Rename", "Unlink"}

// Mutates reports whether the call can change what the store holds. Locks,
// syncs and closes do not count.
func (c Call) Mutates() bool { return slices.Contains(mutating, c.Op) }

// Storage records the calls made through it. Safe for concurrent use if the
// inner store is.
type Storage struct {
	inner backend.Storage

	mu    sync.Mutex
	calls []Call
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ backend.WriteOnce = (*Storage)(nil)
	_ backend.Crasher   = (*Storage)(nil)
)

// New wraps inner. A nil inner fails every call but Capabilities and Close
// with backend.ErrNotSupported, for tests that expect no call at all.
func New(inner backend.Storage) *Storage {
	if inner == nil {
		inner = unsupported{}
	}
	return &Storage{inner: inner}
}

// Calls returns a copy of the calls recorded so far, in the order they
// returned (a List when its iteration ended).
func (s *Storage) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Count returns how many calls of ops were recorded, of any op if none given.
func (s *Storage) Count(ops ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ops) == 0 {
		return len(s.calls)
	}
	n := 0
	for _, c := range s.calls {
		if slices.Contains(ops, c.Op) {
			n++
		}
	}
	return n
}

// Mutations returns the recorded calls that can change the store.
func (s *Storage) Mutations() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Mutates() {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the calls recorded so far.
func (s *Storage) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Inner returns the wrapped store.
func (s *Storage) Inner() backend.Storage { return s.inner }

func (s *Storage) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *Storage) Capabilities() backend.Capabilities {
	c := s.inner.Capabilities()
	s.record(Call{Op: "Capabilities"})
	return c
}

// Crash crashes the inner store when it can, and is recorded either way.
func (s *Storage) Crash() {
	if c, ok := s.inner.(backend.Crasher); ok {
		c.Crash()
	}
	s.record(Call{Op: "Crash"})
}

func (s *Storage) EnsureDir(ctx context.Context, dir string) error {
	err := s.inner.EnsureDir(ctx, dir)
	s.record(Call{Op: "EnsureDir", Name: dir, Err: err})
	return err
}

func (s *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	info, err := s.inner.Stat(ctx, name)
	s.record(Call{Op: "Stat", Name: name, Err: err})
	return info, err
}

// List is recorded when its iteration ends, with the number of entries
// yielded and the error that ended it, if any.
func (s *Storage) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		c := Call{Op: "List", Name: dir}
		defer func() { s.record(c) }()
		for info, err := range s.inner.List(ctx, dir) {
			if err != nil {
				c.Err = err
			} else {
				c.N++
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

func (s *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	data, err := s.inner.ReadFile(ctx, name)
	s.record(Call{Op: "ReadFile", Name: name, N: int64(len(data)), Err: err})
	return data, err
}

func (s *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := s.inner.Open(ctx, name)
	s.record(Call{Op: "Open", Name: name, Err: err})
	return s.reader(name, rc, err)
}

func (s *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	rc, err := s.inner.OpenRange(ctx, name, offset, length)
	s.record(Call{Op: "OpenRange", Name: name, Err: err})
	return s.reader(name, rc, err)
}

func (s *Storage) reader(name string, rc io.ReadCloser, err error) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	return &reader{s: s, name: name, rc: rc}, nil
}

func (s *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	data, err := s.inner.ReadPrefix(ctx, name, n)
	s.record(Call{Op: "ReadPrefix", Name: name, N: int64(len(data)), Err: err})
	return data, err
}

func (s *Storage) WriteFile(ctx context.Context, name string, data []byte) error {
	err := s.inner.WriteFile(ctx, name, data)
	s.record(Call{Op: "WriteFile", Name: name, N: int64(len(data)), Err: err})
	return err
}

// CreateFile records the write-once fast path (backend.WriteOnce), or
// WriteFile's fallback when the inner store has none.
func (s *Storage) CreateFile(ctx context.Context, name string, data []byte) error {
	err := backend.CreateFile(ctx, s.inner, name, data)
	s.record(Call{Op: "CreateFile", Name: name, N: int64(len(data)), Err: err})
	return err
}

// OpenInfo records the write-once fast path (backend.WriteOnce), or Stat
// and Open when the inner store has none.
func (s *Storage) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	rc, info, err := backend.OpenInfo(ctx, s.inner, name)
	s.record(Call{Op: "OpenInfo", Name: name, Err: err})
	rc, err = s.reader(name, rc, err)
	return rc, info, err
}

func (s *Storage) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	n, err := s.inner.WriteFrom(ctx, name, r)
	s.record(Call{Op: "WriteFrom", Name: name, N: n, Err: err})
	return n, err
}

func (s *Storage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	w, err := s.inner.OpenWriter(ctx, name, opt)
	s.record(Call{Op: "OpenWriter", Name: name, Err: err})
	if err != nil {
		return nil, err
	}
	return &writer{s: s, name: name, w: w}, nil
}

func (s *Storage) Rename(ctx context.Context, from, to string) error {
	err := s.inner.Rename(ctx, from, to)
	s.record(Call{Op: "Rename", Name: from, To: to, Err: err})
	return err
}

func (s *Storage) Unlink(ctx context.Context, name string) error {
	err := s.inner.Unlink(ctx, name)
	s.record(Call{Op: "Unlink", Name: name, Err: err})
	return err
}

func (s *Storage) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	u, err := s.inner.Lock(ctx, name, wait)
	s.record(Call{Op: "Lock", Name: name, Err: err})
	if err != nil {
		return nil, err
	}
	return &unlocker{s: s, name: name, u: u}, nil
}

func (s *Storage) Close() error {
	err := s.inner.Close()
	s.record(Call{Op: "Close", Err: err})
	return err
}

type writer struct {
	s    *Storage
	name string
	w    backend.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.s.record(Call{Op: "Writer.Write", Name: w.name, N: int64(n), Err: err})
	return n, err
}

func (w *writer) Sync() error {
	err := w.w.Sync()
	w.s.record(Call{Op: "Writer.Sync", Name: w.name, Err: err})
	return err
}

func (w *writer) Close() error {
	err := w.w.Close()
	w.s.record(Call{Op: "Writer.Close", Name: w.name, Err: err})
	return err
}

type reader struct {
	s    *Storage
	name string
	rc   io.ReadCloser
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.s.record(Call{Op: "Reader.Read", Name: r.name, N: int64(n), Err: err})
	return n, err
}

func (r *reader) Close() error {
	err := r.rc.Close()
	r.s.record(Call{Op: "Reader.Close", Name: r.name, Err: err})
	return err
}

type unlocker struct {
	s    *Storage
	name string
	u    backend.Unlocker
}

func (u *unlocker) Unlock() error {
	err := u.u.Unlock()
	u.s.record(Call{Op: "Unlocker.Unlock", Name: u.name, Err: err})
	return err
}

// unsupported is the inner store of New(nil).
type unsupported struct{}

func no(op, name string) error { return backend.PathErr(op, name, backend.ErrNotSupported) }

func (unsupported) Capabilities() backend.Capabilities            { return backend.Capabilities{} }
func (unsupported) EnsureDir(_ context.Context, dir string) error { return no("mkdir", dir) }
func (unsupported) Stat(_ context.Context, name string) (backend.Info, error) {
	return backend.Info{}, no("stat", name)
}
func (unsupported) List(_ context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) { yield(backend.Info{}, no("list", dir)) }
}
func (unsupported) ReadFile(_ context.Context, name string) ([]byte, error) {
	return nil, no("read", name)
}
func (unsupported) Open(_ context.Context, name string) (io.ReadCloser, error) {
	return nil, no("open", name)
}
func (unsupported) OpenRange(_ context.Context, name string, _, _ int64) (io.ReadCloser, error) {
	return nil, no("open", name)
}
func (unsupported) ReadPrefix(_ context.Context, name string, _ int) ([]byte, error) {
	return nil, no("read", name)
}
func (unsupported) WriteFile(_ context.Context, name string, _ []byte) error {
	return no("write", name)
}
func (unsupported) WriteFrom(_ context.Context, name string, _ io.Reader) (int64, error) {
	return 0, no("write", name)
}
func (unsupported) OpenWriter(_ context.Context, name string, _ backend.WriterOptions) (backend.Writer, error) {
	return nil, no("open", name)
}
func (unsupported) Rename(_ context.Context, from, _ string) error { return no("rename", from) }
func (unsupported) Unlink(_ context.Context, name string) error    { return no("unlink", name) }
func (unsupported) Lock(_ context.Context, name string, _ bool) (backend.Unlocker, error) {
	return nil, no("lock", name)
}
func (unsupported) Close() error { return nil }
