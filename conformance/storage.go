package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/logging"
	"github.com/trovekit/trove/backend/retry"
	"github.com/trovekit/trove/backend/sub"
)

// newStorage makes a fresh, empty backend and registers its cleanup on tb.
type newStorage = func(tb testing.TB) backend.Storage

type storageGroup struct {
	name string
	run  func(t *testing.T, nb newStorage)
	sub  bool // also run under sub.New
}

// storageGroups is the suite, in the order it runs.
func storageGroups() []storageGroup {
	return []storageGroup{
		{"Paths", testPaths, true},
		{"Names", testNames, true},
		{"Missing", testMissing, true},
		{"WriteFile", testWriteFile, true},
		{"WriteFrom", testWriteFrom, true},
		{"WriteOnce", testWriteOnce, true},
		{"OpenWriter", testOpenWriter, true},
		{"Read", testRead, true},
		{"ReadPrefix", testReadPrefix, true},
		{"OpenRange", testOpenRange, true},
		{"Stat", testStat, true},
		{"List", testList, true},
		{"Dirs", testDirs, true},
		{"Unlink", testUnlink, true},
		{"Rename", testRename, true},
		{"Context", testContext, false},
		{"Concurrency", testConcurrency, false},
		{"Binary", testBinary, true},
		{"Big", testBig, false},
		{"Lock", testLock, true},
		{"Close", testClose, false},
		{"Lifecycle", testLifecycle, true},
		{"CrossCheck", testCrossCheck, true},
		{"Crash", testCrash, true},
		{"Faults", testFaults, false},
	}
}

// TestStorage runs the Storage conformance suite against the backends that
// newBackend makes. newBackend must return a fresh, empty backend on each call
// and register its own cleanup (closing it and removing what it stored).
//
// Subtests are grouped by method or property ("Paths/hostile/dotdot/Stat",
// "ReadPrefix/larger", ...). A representative part runs again under
// sub.New, as "Sub/...". Crash cases run only on a backend.Crasher and
// Lock cases only where Capabilities declares locks; both skip with a reason
// otherwise. With -short the 64 MiB streaming case is skipped.
func TestStorage(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	groups := storageGroups()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.run(t, newBackend) })
	}
	t.Run("Sub", func(t *testing.T) {
		nb := subStorage(newBackend)
		for _, g := range groups {
			if g.sub {
				t.Run(g.name, func(t *testing.T) { g.run(t, nb) })
			}
		}
		t.Run("Isolation", func(t *testing.T) { testSubIsolation(t, newBackend) })
	})
	// The decorators written on intercept.New (retries with a deadline
	// per attempt, logging) change no result.
	t.Run("Decorated", func(t *testing.T) {
		nb := func(tb testing.TB) backend.Storage {
			s := logging.New(newBackend(tb), slog.New(slog.DiscardHandler))
			return retry.New(s, retry.Options{Attempts: 2, Timeout: time.Minute})
		}
		for _, g := range groups {
			if decoratedGroups[g.name] {
				t.Run(g.name, func(t *testing.T) { g.run(t, nb) })
			}
		}
	})
}

// decoratedGroups run again on decorated backends.
var decoratedGroups = map[string]bool{
	"Missing": true, "WriteFile": true, "WriteFrom": true, "WriteOnce": true, "OpenWriter": true,
	"Read": true, "ReadPrefix": true, "OpenRange": true, "Stat": true, "List": true, "Rename": true,
	"Unlink": true, "Context": true, "Lock": true, "Crash": true,
}

const subRoot = "sub/root"

// subStorage wraps each new backend in sub.New, with a sibling file
// outside the sub-root so a leak through the prefix is visible.
func subStorage(nb newStorage) newStorage {
	return func(tb testing.TB) backend.Storage {
		tb.Helper()
		s := nb(tb)
		ctx := tb.Context()
		if err := s.WriteFile(ctx, "sub/outside", []byte("outside")); err != nil {
			tb.Fatalf("WriteFile(sub/outside): %v", err)
		}
		if err := s.EnsureDir(ctx, subRoot); err != nil {
			tb.Fatalf("EnsureDir(%s): %v", subRoot, err)
		}
		sb, err := sub.New(s, subRoot)
		if err != nil {
			tb.Fatalf("Sub(%s): %v", subRoot, err)
		}
		tb.Cleanup(func() {
			// The suite's own cases must never touch the sibling.
			got, err := s.ReadFile(context.Background(), "sub/outside")
			if err != nil || string(got) != "outside" {
				tb.Errorf("file outside the sub-root changed: %q, %v", got, err)
			}
		})
		if _, ok := sb.(backend.Crasher); ok && sb.Capabilities().Crash {
			return subCrasher{subStore{sb}}
		}
		return subStore{sb}
	}
}

// subStore marks a store cut by sub.New, for the few cases that must
// know: its names share the inner store's length budget with the prefix.
type subStore struct{ backend.Storage }

func (subStore) isSub() {}

// subCrasher is a subStore whose backend can crash.
type subCrasher struct{ subStore }

func (s subCrasher) Crash() { s.Storage.(backend.Crasher).Crash() }

func isSub(s backend.Storage) bool {
	_, ok := s.(interface{ isSub() })
	return ok
}

// ---- helpers shared by the storage cases ----

var errBoom = errors.New("conformance: injected reader failure")

func mustWrite(tb testing.TB, s backend.Storage, name string, data []byte) {
	tb.Helper()
	if err := s.WriteFile(tb.Context(), name, data); err != nil {
		tb.Fatalf("WriteFile(%q): %v", name, err)
	}
}

func mustEnsureDir(tb testing.TB, s backend.Storage, dir string) {
	tb.Helper()
	if err := s.EnsureDir(tb.Context(), dir); err != nil {
		tb.Fatalf("EnsureDir(%q): %v", dir, err)
	}
}

func mustRead(tb testing.TB, s backend.Storage, name string) []byte {
	tb.Helper()
	b, err := s.ReadFile(tb.Context(), name)
	if err != nil {
		tb.Fatalf("ReadFile(%q): %v", name, err)
	}
	return b
}

// wantContent checks name holds exactly want, through ReadFile.
func wantContent(tb testing.TB, s backend.Storage, name string, want []byte) {
	tb.Helper()
	got, err := s.ReadFile(tb.Context(), name)
	if err != nil {
		tb.Errorf("ReadFile(%q): %v", name, err)
		return
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("ReadFile(%q): %s", name, diff(got, want))
	}
}

// wantMissing checks that Stat reports name as not existing.
func wantMissing(tb testing.TB, s backend.Storage, name string) {
	tb.Helper()
	info, err := s.Stat(tb.Context(), name)
	if !errors.Is(err, fs.ErrNotExist) {
		tb.Errorf("Stat(%q) = %+v, %v; want fs.ErrNotExist", name, info, err)
	}
}

// diff describes how got differs from want without printing megabytes.
func diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return "equal"
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("got %d bytes %s, want %d bytes %s, first difference at byte %d",
		len(got), snippet(got, i), len(want), snippet(want, i), i)
}

func snippet(b []byte, at int) string {
	lo, hi := max(at-8, 0), min(at+8, len(b))
	if lo >= hi {
		return "(end)"
	}
	return fmt.Sprintf("[%d:%d]=%q", lo, hi, b[lo:hi])
}

// wantErr checks that err wraps target and is a *fs.PathError naming path.
func wantErr(tb testing.TB, what string, err, target error, path string) {
	tb.Helper()
	if err == nil {
		tb.Errorf("%s: got no error, want %v", what, target)
		return
	}
	if target != nil && !errors.Is(err, target) {
		tb.Errorf("%s: error %q (%T) does not wrap %q", what, err, err, target)
	}
	wantPathErr(tb, what, err, path)
}

// wantPathErr checks that err is a *fs.PathError naming path and an op.
func wantPathErr(tb testing.TB, what string, err error, path string) {
	tb.Helper()
	var pe *fs.PathError
	switch {
	case !errors.As(err, &pe):
		tb.Errorf("%s: error %q (%T) is not a *fs.PathError", what, err, err)
	case pe.Path != path:
		tb.Errorf("%s: PathError names path %q, want %q (error %q)", what, pe.Path, path, err)
	case pe.Op == "":
		tb.Errorf("%s: PathError names no operation (error %q)", what, err)
	}
}

// list collects dir's listing; it stops at and returns the first error and
// fails the test if the iterator yields anything after it.
func list(tb testing.TB, ctx context.Context, s backend.Storage, dir string) ([]backend.Info, error) {
	tb.Helper()
	var out []backend.Info
	var first error
	for info, err := range s.List(ctx, dir) {
		if first != nil {
			tb.Errorf("List(%q) yielded %+v, %v after the error %v", dir, info, err, first)
			break
		}
		if err != nil {
			first = err
			continue
		}
		out = append(out, info)
	}
	return out, first
}

func mustList(tb testing.TB, s backend.Storage, dir string) []backend.Info {
	tb.Helper()
	infos, err := list(tb, tb.Context(), s, dir)
	if err != nil {
		tb.Fatalf("List(%q): %v", dir, err)
	}
	return infos
}

func infoNames(infos []backend.Info) []string {
	out := make([]string, len(infos))
	for i, info := range infos {
		out[i] = info.Name
	}
	return out
}

// wantList checks that dir lists exactly names (full names, sorted).
func wantList(tb testing.TB, s backend.Storage, dir string, names ...string) {
	tb.Helper()
	infos, err := list(tb, tb.Context(), s, dir)
	if err != nil {
		tb.Errorf("List(%q): %v", dir, err)
		return
	}
	if got := infoNames(infos); !slices.Equal(got, names) {
		tb.Errorf("List(%q) = %q, want %q", dir, got, names)
	}
}

// walkNames is every name below the root, depth first in name order.
func walkNames(tb testing.TB, s backend.Storage) []string {
	tb.Helper()
	var out []string
	for info, err := range backend.Walk(tb.Context(), s, ".") {
		if err != nil {
			tb.Errorf("Walk: %v", err)
			break
		}
		out = append(out, info.Name)
	}
	return out
}

// wantTree checks that the whole store holds exactly names (Walk order) and
// that nothing reserved (temp files, segments) is listed.
func wantTree(tb testing.TB, s backend.Storage, names ...string) {
	tb.Helper()
	got := walkNames(tb, s)
	if !slices.Equal(got, names) {
		tb.Errorf("store holds %q, want %q", got, names)
	}
}

// pattern is n deterministic bytes that differ with seed and position.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	fillGen(b, int64(seed)<<40)
	return b
}

// splitmix64 is a tiny mixing function; good enough for test data.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fillGen fills p with the generator stream's bytes at offset off: byte k
// of the stream is byte k%8 of splitmix64(k/8), so any range can be
// recomputed without the rest.
func fillGen(p []byte, off int64) {
	for i := 0; i < len(p); {
		pos := uint64(off) + uint64(i)
		if pos%8 == 0 && len(p)-i >= 8 {
			binary.LittleEndian.PutUint64(p[i:], splitmix64(pos/8))
			i += 8
			continue
		}
		p[i] = byte(splitmix64(pos/8) >> (8 * (pos % 8)))
		i++
	}
}

// genReader streams size bytes of the generator, of unknown size to the
// reader's consumer, hashing what it hands out.
type genReader struct {
	off, size int64
	h         io.Writer // may be nil
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), g.size-g.off))
	fillGen(p[:n], g.off)
	if g.h != nil {
		g.h.Write(p[:n])
	}
	g.off += int64(n)
	return n, nil
}

// sourceReader feeds data in odd-sized chunks, optionally fails after
// failAfter bytes, calls onRead after each chunk, and records Close calls so
// the suite can check the backend leaves the caller's reader open.
type sourceReader struct {
	data      []byte
	off       int
	chunk     int
	failAfter int // <0: never
	failErr   error
	onRead    func(off int)
	closed    atomic.Int32
}

func newSource(data []byte) *sourceReader {
	return &sourceReader{data: data, chunk: 4093, failAfter: -1}
}

func (r *sourceReader) Read(p []byte) (int, error) {
	if r.failAfter >= 0 && r.off >= r.failAfter {
		return 0, r.failErr
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := min(len(p), r.chunk, len(r.data)-r.off)
	if r.failAfter >= 0 {
		n = min(n, r.failAfter-r.off)
	}
	copy(p, r.data[r.off:r.off+n])
	r.off += n
	if r.onRead != nil {
		r.onRead(r.off)
	}
	return n, nil
}

func (r *sourceReader) Close() error {
	r.closed.Add(1)
	return nil
}

// readAll reads an Open or OpenRange result and closes it.
func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// firstErr returns the first error a List yields, or nil.
func firstErr(seq func(func(backend.Info, error) bool)) (n int, err error) {
	for _, e := range seq {
		if e != nil {
			return n, e
		}
		n++
	}
	return n, nil
}

// watchCtx tells, through waiting, when the backend starts to watch it
// (calls Done, or Err a second time): the moment to cancel it or to release
// what it waits for, with no sleep.
type watchCtx struct {
	context.Context
	once    sync.Once
	errs    atomic.Int32
	waiting chan struct{}
}

func newWatchCtx(parent context.Context) *watchCtx {
	return &watchCtx{Context: parent, waiting: make(chan struct{})}
}

func (c *watchCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

func (c *watchCtx) Err() error {
	if c.errs.Add(1) >= 2 {
		c.once.Do(func() { close(c.waiting) })
	}
	return c.Context.Err()
}

// longName is a valid name of exactly n bytes made of 99-byte elements.
func longName(n int) string {
	s := []byte(strings.Repeat(strings.Repeat("n", 99)+"/", n/100+1)[:n])
	if s[n-1] == '/' {
		s[n-1] = 'n'
	}
	return string(s)
}

// nameLimits are the longest name and element this backend must accept.
func nameLimits(s backend.Storage) (name, elem int) {
	name, elem = backend.MaxNameBytes, backend.MaxElemBytes
	c := s.Capabilities()
	if c.MaxNameBytes > 0 && c.MaxNameBytes < name {
		name = c.MaxNameBytes
	}
	if c.MaxElemBytes > 0 && c.MaxElemBytes < elem {
		elem = c.MaxElemBytes
	}
	if isSub(s) {
		// The prefix uses part of the inner store's budget.
		name = min(name, backend.MaxNameBytes-len(subRoot)-1)
	}
	return name, elem
}
