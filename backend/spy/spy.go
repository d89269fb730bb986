package spy

import (
	"context"
	"fmt"
	"io"
	"iter"
	"slices"
	"sync"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
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
var mutating = []string{"EnsureDir", "WriteFile", "CreateFile", "PutFile", "WriteFrom", "OpenWriter", "Writer.Write", "Rename", "Unlink", "RemoveFile"}

// Mutates reports whether the call can change what the store holds. Locks,
// syncs and closes do not count.
func (c Call) Mutates() bool { return slices.Contains(mutating, c.Op) }

// Storage records the calls made through it. Safe for concurrent use if the
// inner store is.
type Storage struct {
	*intercept.Store

	mu    sync.Mutex
	calls []Call
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ backend.Crasher   = (*Storage)(nil)
	_ backend.WriteOnce = (*Storage)(nil)
	_ backend.WholeFile = (*Storage)(nil)
)

// New wraps inner. A nil inner fails every call but Capabilities and Close
// with backend.ErrNotSupported, for tests that expect no call at all.
func New(inner backend.Storage) *Storage {
	if inner == nil {
		inner = unsupported{}
	}
	s := &Storage{}
	s.Store = intercept.New(inner, s.intercept)
	return s
}

// intercept records each call when it returns (a List when its iteration
// ends, with the number of entries yielded).
func (s *Storage) intercept(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
	err := next(ctx)
	s.record(Call{Op: c.Op, Name: c.Name, To: c.To, N: c.N, Err: err})
	return err
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

func (s *Storage) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
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
