package faulty

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
)

// ErrInjected is the error injected when an option is given a nil error.
var ErrInjected = errors.New("injected fault")

// Storage is a backend.Storage that forwards to an inner one and fails calls
// as its rules say. Safe for concurrent use if the inner store is.
type Storage struct {
	*intercept.Store

	mu     sync.Mutex
	rules  []*rule
	hook   func(op, name string) error
	space  int64 // bytes left before ENOSPC; < 0 for no limit
	faults int
}

// rule fails matching calls. Each rule counts the calls of its ops on its own,
// from when it was added.
type rule struct {
	ops   []string // empty: every op
	nth   int      // fires at this call (1-based)
	from  bool     // and at every later one
	rnd   *rand.Rand
	rate  float64
	short bool // on Writer.Write: pass half of p, then fail
	err   error
	seen  int
}

// fires counts the call and says whether the rule fails it. Callers hold mu.
func (r *rule) fires(op string) bool {
	if len(r.ops) > 0 && !slices.Contains(r.ops, op) {
		return false
	}
	r.seen++
	switch {
	case r.rnd != nil:
		return r.rnd.Float64() < r.rate
	case r.from:
		return r.seen >= r.nth
	}
	return r.seen == r.nth
}

// Option adds a fault to a Storage.
type Option func(*Storage)

func addRule(r *rule) Option {
	if r.err == nil {
		r.err = ErrInjected
	}
	return func(s *Storage) { s.rules = append(s.rules, r) }
}

// FailNth fails the nth call (1-based) of ops, or of every op if none is
// given, with err (ErrInjected if nil).
func FailNth(n int, err error, ops ...string) Option {
	return addRule(&rule{ops: ops, nth: n, err: err})
}

// FailFrom fails the nth call of ops and every one after it: a disk that died.
func FailFrom(n int, err error, ops ...string) Option {
	return addRule(&rule{ops: ops, nth: n, from: true, err: err})
}

// FailRandomly fails each call of ops with probability rate, drawn from a
// generator seeded with seed: the same calls in the same order fail alike.
func FailRandomly(seed uint64, rate float64, err error, ops ...string) Option {
	return addRule(&rule{ops: ops, rnd: rand.New(rand.NewPCG(seed, ^seed)), rate: rate, err: err})
}

// FailSync fails the nth Writer.Sync with EIO, without syncing: the bytes
// since the last good Sync stay undurable.
func FailSync(n int) Option {
	return FailNth(n, syscall.EIO, "Writer.Sync")
}

// ShortWrite makes the nth Writer.Write pass only the first half of its bytes
// to the inner writer and return that count with io.ErrShortWrite.
func ShortWrite(n int) Option {
	return addRule(&rule{ops: []string{"Writer.Write"}, nth: n, short: true, err: io.ErrShortWrite})
}

// NoSpaceAfter lets n more bytes be written (by WriteFile, WriteFrom and
// Writer.Write) and fails writes past them with ENOSPC. Bytes are counted as
// they are written, those of failed writes included, and never given back.
// A Writer.Write that crosses the limit passes the bytes that fit and returns
// their count with the error.
func NoSpaceAfter(n int64) Option {
	return func(s *Storage) { s.space = max(n, 0) }
}

// WithHook calls hook before every counted call that no rule failed; a
// non-nil result fails the call. It runs without faulty's lock, so it may
// call the Storage (those calls are counted and hooked too).
func WithHook(hook func(op, name string) error) Option {
	return func(s *Storage) { s.hook = hook }
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ backend.Crasher   = (*Storage)(nil)
	_ backend.WriteOnce = (*Storage)(nil)
	_ backend.WholeFile = (*Storage)(nil)
)

// New wraps inner with the given faults.
func New(inner backend.Storage, opts ...Option) *Storage {
	s := &Storage{space: -1}
	s.Store = intercept.New(inner, s.intercept)
	s.Inject(opts...)
	return s
}

// Inject adds faults; their call counts start now.
func (s *Storage) Inject(opts ...Option) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range opts {
		o(s)
	}
}

// Clear removes every fault: rules, hook and space limit.
func (s *Storage) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules, s.hook, s.space = nil, nil, -1
}

// Faults reports how many faults have been injected so far, so a test can
// check that the one it set up happened.
func (s *Storage) Faults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// check counts a call and returns whether the fault is a short write, and
// the fault to inject, if any.
func (s *Storage) check(op, name string) (short bool, err error) {
	s.mu.Lock()
	for _, r := range s.rules {
		// Every matching rule counts the call, even after one fired.
		if r.fires(op) && err == nil {
			err, short = r.err, r.short
		}
	}
	hook := s.hook
	s.mu.Unlock()
	if err == nil && hook != nil {
		err = hook(op, name)
	}
	if err == nil {
		return false, nil
	}
	s.count()
	return short, backend.PathErr(op, name, err)
}

func (s *Storage) fail(op, name string) error {
	_, err := s.check(op, name)
	return err
}

func (s *Storage) count() {
	s.mu.Lock()
	s.faults++
	s.mu.Unlock()
}

// reserve takes up to n bytes from the space left and returns how many.
func (s *Storage) reserve(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.space < 0 {
		return n
	}
	k := int(min(int64(n), s.space))
	s.space -= int64(k)
	return k
}

// noSpace is the ENOSPC error, counted as a fault.
func (s *Storage) noSpace(op, name string) error {
	s.count()
	return backend.PathErr(op, name, syscall.ENOSPC)
}

// intercept fails the call as the rules, the hook and the space left say.
// Capabilities and Crash are not counted. Close, Writer.Close,
// Reader.Close and Unlocker.Unlock always reach the inner store (they
// release), and then report an injected fault. Writes pass the part that
// fits; WriteFrom's source fails with ENOSPC once the space is spent, so
// the inner store sees a failing source mid-copy.
func (s *Storage) intercept(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
	op, name := c.Op, c.Name
	switch op {
	case "Capabilities", "Crash":
		return next(ctx)
	case "Close", "Writer.Close", "Reader.Close", "Unlocker.Unlock":
		if op == "Close" {
			name = "."
		}
		ferr := s.fail(op, name)
		if err := next(ctx); err != nil {
			return err
		}
		return ferr
	case "Writer.Write":
		short, err := s.check(op, name)
		if err != nil && !short {
			return err
		}
		n := len(c.Data)
		if short {
			n /= 2
		}
		if k := s.reserve(n); k < n {
			n = k
			if err == nil {
				err = s.noSpace(op, name)
			}
		}
		c.Data = c.Data[:n]
		if werr := next(ctx); werr != nil {
			return werr
		}
		return err
	}
	if err := s.fail(op, name); err != nil {
		return err
	}
	switch op {
	case "WriteFile", "CreateFile", "PutFile":
		// Nothing reaches the inner store when the data does not fit, as
		// a temp file that ran out of space is removed.
		if s.reserve(len(c.Data)) < len(c.Data) {
			return s.noSpace(op, name)
		}
	case "WriteFrom":
		c.Src = &spaceReader{s: s, name: name, r: c.Src}
	}
	return next(ctx)
}

type spaceReader struct {
	s    *Storage
	name string
	r    io.Reader
}

func (r *spaceReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.r.Read(p)
	}
	k := r.s.reserve(len(p))
	if k == 0 {
		return 0, r.s.noSpace("WriteFrom", r.name)
	}
	n, err := r.r.Read(p[:k])
	if n < k {
		// Give back what the source did not fill: only bytes read count.
		r.s.mu.Lock()
		if r.s.space >= 0 {
			r.s.space += int64(k - max(n, 0))
		}
		r.s.mu.Unlock()
	}
	return n, err
}
