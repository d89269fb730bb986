package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
)

// faultScript is a short run of the calls a persistence layer makes. It
// records what each call that returned nil promised, and stops at the first
// error, as a layer that latches its first error does.
type faultScript struct {
	dir      bool   // EnsureDir(data) acknowledged
	a        []byte // acknowledged content of data/a, nil if none
	unlinked bool   // Unlink(data/a) acknowledged
	wroteB   bool   // WriteFrom(data/b) acknowledged
	renamed  bool   // Rename(data/b, data/c) acknowledged
	logSeen  bool   // data/log created by OpenWriter
	log      []byte // acknowledged appends to data/log
	synced   int    // of which durable
	w        backend.Writer
}

var (
	scriptA1 = []byte("a version one")
	scriptA2 = pattern(3000, 11)
	scriptB  = pattern(20000, 12)
	scriptR  = [][]byte{[]byte("record 1;"), []byte("record 2;"), []byte("record 3 unsynced;")}
)

// run runs the script on s and returns the first error, or nil.
func (m *faultScript) run(t *testing.T, s backend.Storage) error {
	ctx := t.Context()
	steps := []func() error{
		func() error { return s.EnsureDir(ctx, "data") },
		func() error { m.dir = true; return nil },
		func() error { return s.WriteFile(ctx, "data/a", scriptA1) },
		func() error { m.a = scriptA1; return nil },
		func() error { return s.WriteFile(ctx, "data/a", scriptA2) },
		func() error { m.a = scriptA2; return nil },
		func() error {
			w, err := s.OpenWriter(ctx, "data/log", backend.WriterOptions{})
			m.w = w
			return err
		},
		func() error { m.logSeen = true; return nil },
	}
	for i, rec := range scriptR {
		steps = append(steps,
			func() error {
				n, err := m.w.Write(rec)
				if err == nil && n != len(rec) {
					return fmt.Errorf("short write without an error: %d of %d", n, len(rec))
				}
				return err
			},
			func() error { m.log = append(m.log, rec...); return nil })
		if i < 2 {
			steps = append(steps,
				func() error { return m.w.Sync() },
				func() error { m.synced = len(m.log); return nil })
		}
	}
	steps = append(steps,
		func() error { err := m.w.Close(); m.w = nil; return err },
		func() error {
			n, err := s.WriteFrom(ctx, "data/b", bytes.NewReader(scriptB))
			if err == nil && n != int64(len(scriptB)) {
				return fmt.Errorf("WriteFrom wrote %d of %d bytes without an error", n, len(scriptB))
			}
			return err
		},
		func() error { m.wroteB = true; return nil },
		func() error { return s.Rename(ctx, "data/b", "data/c") },
		func() error { m.renamed = true; return nil },
		func() error {
			info, err := s.Stat(ctx, "data/c")
			if err == nil && info.Size != int64(len(scriptB)) {
				return fmt.Errorf("Stat(data/c) size %d, want %d", info.Size, len(scriptB))
			}
			return err
		},
		func() error {
			got, err := s.ReadFile(ctx, "data/a")
			if err == nil && !bytes.Equal(got, scriptA2) {
				return fmt.Errorf("ReadFile(data/a): %s", diff(got, scriptA2))
			}
			return err
		},
		func() error { return s.Unlink(ctx, "data/a") },
		func() error { m.unlinked = true; return nil },
		func() error {
			_, err := firstErr(s.List(ctx, "data"))
			return err
		},
	)
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// check verifies the store holds all the script acknowledged. Without a
// crash that is exact. After one, only what the contract makes durable is
// required: WriteFile and WriteFrom content and synced appends; a Rename or
// Unlink may be found done or not done, never half done.
func (m *faultScript) check(t *testing.T, s backend.Storage, crashed bool) {
	t.Helper()
	ctx := t.Context()
	exists := func(name string) bool {
		_, err := s.Stat(ctx, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%q): %v", name, err)
		}
		return err == nil
	}
	var want []string
	// data/a
	switch {
	case m.unlinked && crashed && exists("data/a"):
		want = append(want, "data/a")
		wantContent(t, s, "data/a", scriptA2)
	case m.unlinked:
	case m.a != nil:
		want = append(want, "data/a")
		wantContent(t, s, "data/a", m.a)
	}
	// data/b, data/c
	switch {
	case m.renamed && crashed && exists("data/b"):
		want = append(want, "data/b")
		wantContent(t, s, "data/b", scriptB)
	case m.renamed:
		want = append(want, "data/c")
		wantContent(t, s, "data/c", scriptB)
	case m.wroteB:
		want = append(want, "data/b")
		wantContent(t, s, "data/b", scriptB)
	}
	// data/log
	if m.logSeen {
		if crashed {
			wantPrefix(t, s, "data/log", m.log, m.synced, true)
			if exists("data/log") {
				want = append(want, "data/log")
			}
		} else {
			wantContent(t, s, "data/log", m.log)
			want = append(want, "data/log")
		}
	}
	if len(want) > 0 || (m.dir && (!crashed || exists("data"))) {
		want = append(want, "data")
	}
	slices.Sort(want)
	wantTree(t, s, want...)
}

// faultCalls counts the calls the script makes on a healthy store.
func faultCalls(t *testing.T, nb newStorage) int {
	calls := 0
	s := faulty.New(nb(t), faulty.WithHook(func(op, name string) error {
		calls++
		return nil
	}))
	var m faultScript
	if err := m.run(t, s); err != nil {
		t.Fatalf("the fault script fails without faults: %v", err)
	}
	n := calls
	m.check(t, s.Inner(), false)
	return n
}

func testFaults(t *testing.T, nb newStorage) {
	calls := faultCalls(t, nb)
	for _, crash := range []bool{false, true} {
		mode := "fail-nth"
		if crash {
			mode = "fail-nth-then-crash"
		}
		t.Run(mode, func(t *testing.T) {
			if _, ok := nb(t).(backend.Crasher); crash && !ok {
				t.Skip("backend cannot simulate a crash")
			}
			for n := 1; n <= calls; n++ {
				t.Run(fmt.Sprint(n), func(t *testing.T) {
					inner := nb(t)
					c, _ := inner.(backend.Crasher)
					s := faulty.New(inner, faulty.FailNth(n, nil))
					var m faultScript
					err := m.run(t, s)
					if !errors.Is(err, faulty.ErrInjected) {
						t.Errorf("call %d failed, the script saw %v; want the injected fault", n, err)
					}
					if f := s.Faults(); f != 1 {
						t.Errorf("%d faults injected, want 1", f)
					}
					s.Clear()
					if crash {
						c.Crash()
					} else if m.w != nil {
						m.w.Close() // what was acknowledged becomes visible
					}
					m.check(t, inner, crash)
				})
			}
		})
	}
	testFaultsShortWrites(t, nb)
	testFaultsIOErrors(t, nb)
}

// testFaultsShortWrites checks short writes and running out of space: an
// error for the part not written, and nothing acknowledged lost.
func testFaultsShortWrites(t *testing.T, nb newStorage) {
	t.Run("short-write", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		a, b := pattern(1000, 1), pattern(600, 2)
		mustWriteTo(t, w, a)
		mustSync(t, w)
		s.Inject(faulty.ShortWrite(1))
		n, err := w.Write(b)
		if err == nil || n >= len(b) {
			t.Errorf("short Write = %d, %v; want fewer than %d bytes and an error", n, err, len(b))
		}
		n = max(n, 0)
		s.Clear()
		wantPrefix(t, inner, "log", append(slices.Clone(a), b[:n]...), len(a), false)
		mustClose(t, w)
		// The n bytes the Write owned up to are there, nothing more.
		wantContent(t, inner, "log", append(slices.Clone(a), b[:n]...))
	})
	t.Run("enospc-append", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		a, b := pattern(1000, 3), pattern(600, 4)
		mustWriteTo(t, w, a)
		mustSync(t, w)
		s.Inject(faulty.NoSpaceAfter(100))
		n, err := w.Write(b)
		if !errors.Is(err, syscall.ENOSPC) || n > 100 {
			t.Errorf("Write past the space = %d, %v; want at most 100 bytes and ENOSPC", n, err)
		}
		n = max(n, 0)
		if _, err := w.Write([]byte("more")); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("Write on a full disk = %v, want ENOSPC", err)
		}
		wantPrefix(t, inner, "log", append(slices.Clone(a), b[:n]...), len(a), false)
		s.Clear()
		if c, ok := inner.(backend.Crasher); ok {
			c.Crash()
			wantPrefix(t, inner, "log", append(slices.Clone(a), b[:n]...), len(a), false)
		} else {
			w.Close()
			wantContent(t, inner, "log", append(slices.Clone(a), b[:n]...))
		}
	})
	t.Run("enospc-WriteFile", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		mustWrite(t, s, "f", []byte("old"))
		s.Inject(faulty.NoSpaceAfter(1000))
		err := s.WriteFile(t.Context(), "f", pattern(5000, 5))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("WriteFile past the space = %v, want ENOSPC", err)
		}
		wantContent(t, inner, "f", []byte("old"))
		wantTree(t, inner, "f")
	})
	// Here the inner backend itself meets the failure: its source reader
	// runs out of space midway through the copy.
	t.Run("enospc-WriteFrom", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		mustWrite(t, s, "f", []byte("old"))
		s.Inject(faulty.NoSpaceAfter(64 << 10))
		_, err := s.WriteFrom(t.Context(), "f", newSource(pattern(256<<10, 6)))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("WriteFrom past the space = %v, want ENOSPC", err)
		}
		_, err = s.WriteFrom(t.Context(), "d/g", newSource(pattern(256<<10, 7)))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("WriteFrom of a new file past the space = %v, want ENOSPC", err)
		}
		s.Clear()
		wantContent(t, inner, "f", []byte("old"))
		wantMissing(t, inner, "d/g")
		for _, n := range walkNames(t, inner) {
			if n != "f" && n != "d" {
				t.Errorf("a WriteFrom that ran out of space left %q", n)
			}
		}
	})
}

// testFaultsIOErrors checks that an I/O error at Sync or on a read comes back
// to the caller.
func testFaultsIOErrors(t *testing.T, nb newStorage) {
	t.Run("eio-on-sync", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		a, b := []byte("synced;"), []byte("lost?;")
		mustWriteTo(t, w, a)
		mustSync(t, w)
		s.Inject(faulty.FailSync(1))
		mustWriteTo(t, w, b)
		if err := w.Sync(); !errors.Is(err, syscall.EIO) {
			t.Errorf("Sync with an I/O error = %v, want EIO", err)
		} else {
			wantPathErr(t, "Sync", err, "log")
		}
		s.Clear()
		if c, ok := inner.(backend.Crasher); ok {
			c.Crash()
			wantPrefix(t, inner, "log", append(slices.Clone(a), b...), len(a), false)
		} else {
			mustClose(t, w)
			wantContent(t, inner, "log", append(slices.Clone(a), b...))
		}
	})
	t.Run("read-error-comes-back", func(t *testing.T) {
		inner := nb(t)
		s := faulty.New(inner)
		mustWrite(t, s, "f", pattern(10000, 8))
		s.Inject(faulty.FailNth(1, nil, "Reader.Read"))
		rc, err := s.Open(t.Context(), "f")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		_, err = io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
		if !errors.Is(err, faulty.ErrInjected) {
			t.Errorf("reading through a failing reader = %v, want the injected fault", err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			t.Errorf("read error %v is not a *fs.PathError", err)
		}
	})
}
