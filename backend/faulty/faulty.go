package faulty

import (
	"context"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"

	"github.com/trovekit/trove/backend"
)

// ErrInjected is the error injected when an option is given a nil error.
var ErrInjected = errors.New("injected fault")

// Storage is a backend.Storage that forwards to an inner one and fails calls
// as its rules say. Safe for concurrent use if the inner store is.
type Storage struct {
	inner backend.Storage

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
	_ backend.Storage = (*Storage)(nil)
	_ backend.Crasher = (*Storage)(nil)
)

// New wraps inner with the given faults.
func New(inner backend.Storage, opts ...Option) *Storage {
	s := &Storage{inner: inner, space: -1}
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

// Inner returns the wrapped store.
func (s *Storage) Inner() backend.Storage { return s.inner }

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

// Capabilities passes the inner store's through.
func (s *Storage) Capabilities() backend.Capabilities { return s.inner.Capabilities() }

// Crash crashes the inner store when it can; it is not counted.
func (s *Storage) Crash() {
	if c, ok := s.inner.(backend.Crasher); ok {
		c.Crash()
	}
}

func (s *Storage) EnsureDir(ctx context.Context, dir string) error {
	if err := s.fail("EnsureDir", dir); err != nil {
		return err
	}
	return s.inner.EnsureDir(ctx, dir)
}

func (s *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	if err := s.fail("Stat", name); err != nil {
		return backend.Info{}, err
	}
	return s.inner.Stat(ctx, name)
}

// List counts the call when iteration starts, as the inner store's work does.
func (s *Storage) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		if err := s.fail("List", dir); err != nil {
			yield(backend.Info{}, err)
			return
		}
		for i, err := range s.inner.List(ctx, dir) {
			if !yield(i, err) {
				return
			}
		}
	}
}

func (s *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := s.fail("ReadFile", name); err != nil {
		return nil, err
	}
	return s.inner.ReadFile(ctx, name)
}

func (s *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := s.fail("Open", name); err != nil {
		return nil, err
	}
	rc, err := s.inner.Open(ctx, name)
	return s.reader(name, rc, err)
}

func (s *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := s.fail("OpenRange", name); err != nil {
		return nil, err
	}
	rc, err := s.inner.OpenRange(ctx, name, offset, length)
	return s.reader(name, rc, err)
}

// reader wraps the result of an inner Open.
func (s *Storage) reader(name string, rc io.ReadCloser, err error) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	return &reader{s: s, name: name, rc: rc}, nil
}

func (s *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	if err := s.fail("ReadPrefix", name); err != nil {
		return nil, err
	}
	return s.inner.ReadPrefix(ctx, name, n)
}

// WriteFile passes nothing to the inner store when the data does not fit,
// as a temp file that ran out of space is removed.
func (s *Storage) WriteFile(ctx context.Context, name string, data []byte) error {
	const op = "WriteFile"
	if err := s.fail(op, name); err != nil {
		return err
	}
	if s.reserve(len(data)) < len(data) {
		return s.noSpace(op, name)
	}
	return s.inner.WriteFile(ctx, name, data)
}

// CreateFile is WriteFile's write-once form (backend.WriteOnce), with the
// inner store's fallback when it has none.
func (s *Storage) CreateFile(ctx context.Context, name string, data []byte) error {
	const op = "CreateFile"
	if err := s.fail(op, name); err != nil {
		return err
	}
	if s.reserve(len(data)) < len(data) {
		return s.noSpace(op, name)
	}
	return backend.CreateFile(ctx, s.inner, name, data)
}

// OpenInfo is Open with the file's description (backend.WriteOnce).
func (s *Storage) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	if err := s.fail("OpenInfo", name); err != nil {
		return nil, backend.Info{}, err
	}
	rc, info, err := backend.OpenInfo(ctx, s.inner, name)
	rc, err = s.reader(name, rc, err)
	return rc, info, err
}

// WriteFrom hands the inner store a reader that fails with ENOSPC once the
// space is spent, so the inner store sees a failing source mid-copy.
func (s *Storage) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	const op = "WriteFrom"
	if err := s.fail(op, name); err != nil {
		return 0, err
	}
	return s.inner.WriteFrom(ctx, name, &spaceReader{s: s, name: name, r: r})
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

func (s *Storage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	if err := s.fail("OpenWriter", name); err != nil {
		return nil, err
	}
	w, err := s.inner.OpenWriter(ctx, name, opt)
	if err != nil {
		return nil, err
	}
	return &writer{s: s, name: name, w: w}, nil
}

func (s *Storage) Rename(ctx context.Context, from, to string) error {
	if err := s.fail("Rename", from); err != nil {
		return err
	}
	return s.inner.Rename(ctx, from, to)
}

func (s *Storage) Unlink(ctx context.Context, name string) error {
	if err := s.fail("Unlink", name); err != nil {
		return err
	}
	return s.inner.Unlink(ctx, name)
}

func (s *Storage) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	if err := s.fail("Lock", name); err != nil {
		return nil, err
	}
	u, err := s.inner.Lock(ctx, name, wait)
	if err != nil {
		return nil, err
	}
	return &unlocker{s: s, name: name, u: u}, nil
}

// Close always closes the inner store, and then reports an injected fault.
func (s *Storage) Close() error {
	ferr := s.fail("Close", ".")
	if err := s.inner.Close(); err != nil {
		return err
	}
	return ferr
}

type writer struct {
	s    *Storage
	name string
	w    backend.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	const op = "Writer.Write"
	short, err := w.s.check(op, w.name)
	if err != nil && !short {
		return 0, err
	}
	n := len(p)
	if short {
		n /= 2
	}
	if k := w.s.reserve(n); k < n {
		n = k
		if err == nil {
			err = w.s.noSpace(op, w.name)
		}
	}
	m, werr := w.w.Write(p[:n])
	if werr != nil {
		return m, werr
	}
	return m, err
}

func (w *writer) Sync() error {
	if err := w.s.fail("Writer.Sync", w.name); err != nil {
		return err
	}
	return w.w.Sync()
}

// Close always closes the inner writer, and then reports an injected fault.
func (w *writer) Close() error {
	ferr := w.s.fail("Writer.Close", w.name)
	if err := w.w.Close(); err != nil {
		return err
	}
	return ferr
}

type reader struct {
	s    *Storage
	name string
	rc   io.ReadCloser
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.s.fail("Reader.Read", r.name); err != nil {
		return 0, err
	}
	return r.rc.Read(p)
}

// Close always closes the inner reader, and then reports an injected fault.
func (r *reader) Close() error {
	ferr := r.s.fail("Reader.Close", r.name)
	if err := r.rc.Close(); err != nil {
		return err
	}
	return ferr
}

type unlocker struct {
	s    *Storage
	name string
	u    backend.Unlocker
}

// Unlock always releases the inner lock, and then reports an injected fault.
func (u *unlocker) Unlock() error {
	ferr := u.s.fail("Unlocker.Unlock", u.name)
	if err := u.u.Unlock(); err != nil {
		return err
	}
	return ferr
}
