package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
)

// crasher returns a fresh backend that can simulate a crash, or skips.
func crasher(t *testing.T, nb newStorage) (backend.Storage, backend.Crasher) {
	t.Helper()
	s := nb(t)
	c, ok := s.(backend.Crasher)
	if !ok {
		t.Skip("backend cannot simulate a crash")
	}
	return s, c
}

// wantPrefix checks that name, after a crash, is a prefix of written that
// holds at least its first synced bytes. missingOK allows the file to be
// gone, for a file whose creation was never made durable.
func wantPrefix(t *testing.T, s backend.Storage, name string, written []byte, synced int, missingOK bool) {
	t.Helper()
	got, err := s.ReadFile(t.Context(), name)
	if errors.Is(err, fs.ErrNotExist) && missingOK && synced == 0 {
		return
	}
	if err != nil {
		t.Errorf("after the crash ReadFile(%q): %v", name, err)
		return
	}
	if !bytes.HasPrefix(written, got) {
		t.Errorf("after the crash %q is not a prefix of what was written: %s", name, diff(got, written[:min(len(got), len(written))]))
	}
	if len(got) < synced {
		t.Errorf("after the crash %q holds %d bytes, but %d were synced", name, len(got), synced)
	}
}

func testCrash(t *testing.T, nb newStorage) {
	crasher(t, nb) // skip the whole group at once when it cannot crash
	testCrashWrites(t, nb)
	testCrashAfter(t, nb)
}

// testCrashWrites checks what a crash leaves of appends, of files in every
// state and of WriteFile: what was synced, whole, and nothing half written.
func testCrashWrites(t *testing.T, nb newStorage) {
	t.Run("append-synced-and-not", func(t *testing.T) {
		s, c := crasher(t, nb)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		a, b := pattern(3000, 1), pattern(2000, 2)
		mustWriteTo(t, w, a)
		mustSync(t, w)
		mustWriteTo(t, w, b)
		c.Crash()
		wantPrefix(t, s, "log", append(a, b...), len(a), false)
		w.Close() // after the checks: may fail, may not resurrect anything checked
	})
	t.Run("files-in-every-state", func(t *testing.T) {
		s, c := crasher(t, nb)
		mustWrite(t, s, "base", []byte("durable"))
		type file struct {
			name             string
			written          []byte
			synced           int
			missingOK        bool
			closeBeforeCrash bool
		}
		files := []*file{
			{name: "synced-all"},
			{name: "synced-none", missingOK: true},
			{name: "closed-unsynced", missingOK: true, closeBeforeCrash: true},
			{name: "synced-then-closed", closeBeforeCrash: true},
			{name: "d/nested-synced"},
		}
		var open []backend.Writer
		for i, f := range files {
			w := openWriter(t, s, f.name, backend.WriterOptions{})
			f.written = pattern(1000+i, uint64(i))
			mustWriteTo(t, w, f.written[:500])
			if f.name != "synced-none" && f.name != "closed-unsynced" {
				mustSync(t, w)
				f.synced = 500
			}
			mustWriteTo(t, w, f.written[500:])
			if f.name == "synced-all" || f.name == "d/nested-synced" {
				mustSync(t, w)
				f.synced = len(f.written)
			}
			if f.closeBeforeCrash {
				mustClose(t, w)
			} else {
				open = append(open, w)
			}
		}
		// Append to a durable file without Sync.
		w := openWriter(t, s, "base", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("+unsynced"))
		mustClose(t, w)
		c.Crash()
		for _, f := range files {
			wantPrefix(t, s, f.name, f.written, f.synced, f.missingOK)
		}
		wantPrefix(t, s, "base", []byte("durable+unsynced"), len("durable"), false)
		for _, w := range open {
			w.Close()
		}
	})
	t.Run("WriteFile-is-durable", func(t *testing.T) {
		s, c := crasher(t, nb)
		mustWrite(t, s, "f", []byte("v1"))
		mustWrite(t, s, "f", []byte("v2"))
		mustWrite(t, s, "g", pattern(5000, 3))
		if _, err := s.WriteFrom(t.Context(), "h", bytes.NewReader(pattern(7000, 4))); err != nil {
			t.Fatalf("WriteFrom: %v", err)
		}
		c.Crash()
		wantContent(t, s, "f", []byte("v2"))
		wantContent(t, s, "g", pattern(5000, 3))
		wantContent(t, s, "h", pattern(7000, 4))
	})
	t.Run("WriteFile-old-or-new", func(t *testing.T) {
		// A crash while WriteFile runs leaves a whole version, at least
		// the last one acknowledged before the crash.
		s, c := crasher(t, nb)
		const versions = 20
		mustWrite(t, s, "f", version(0))
		acked := make(chan int, versions)
		var wg sync.WaitGroup
		wg.Go(func() {
			for v := 1; v < versions; v++ {
				if err := s.WriteFile(t.Context(), "f", version(v)); err != nil {
					t.Errorf("WriteFile version %d: %v", v, err)
					return
				}
				acked <- v
			}
		})
		first := <-acked // crash once the writer is under way
		c.Crash()
		got, err := s.ReadFile(t.Context(), "f")
		wg.Wait()
		close(acked)
		if err != nil {
			t.Fatalf("ReadFile after crash: %v", err)
		}
		v, err := checkVersion(got, versions)
		if err != nil {
			t.Errorf("after a crash during WriteFile: %v", err)
		} else if v < first {
			t.Errorf("after the crash f is version %d, but version %d was acknowledged before it", v, first)
		}
		wantContent(t, s, "f", version(versions-1))
	})
}

// testCrashAfter checks renames across a crash, a store used after one, and
// crashes repeated.
func testCrashAfter(t *testing.T, nb newStorage) {
	t.Run("rename", func(t *testing.T) {
		// A crash after a rename keeps either the state before it or the
		// state after it: never both names, never neither.
		s, c := crasher(t, nb)
		mustWrite(t, s, "dst", []byte("old"))
		mustWrite(t, s, "tmp", []byte("new"))
		if err := s.Rename(t.Context(), "tmp", "dst"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		c.Crash()
		dst := mustRead(t, s, "dst")
		_, err := s.Stat(t.Context(), "tmp")
		tmpGone := errors.Is(err, fs.ErrNotExist)
		switch {
		case string(dst) == "new" && tmpGone:
		case string(dst) == "old" && !tmpGone:
			wantContent(t, s, "tmp", []byte("new"))
		default:
			t.Errorf("after a crash dst = %q and tmp gone = %v (%v): neither before nor after the rename", dst, tmpGone, err)
		}
	})
	t.Run("rename-synced-writer", func(t *testing.T) {
		s, c := crasher(t, nb)
		w := openWriter(t, s, "a", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("synced"))
		mustSync(t, w)
		mustClose(t, w)
		if err := s.Rename(t.Context(), "a", "d/b"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		c.Crash()
		got, errB := s.ReadFile(t.Context(), "d/b")
		if errB != nil {
			got, errA := s.ReadFile(t.Context(), "a")
			if errA != nil || string(got) != "synced" {
				t.Errorf("after a crash neither d/b (%v) nor a (%q, %v) holds the synced bytes", errB, got, errA)
			}
			return
		}
		if string(got) != "synced" {
			t.Errorf("after a crash d/b = %q, want \"synced\"", got)
		}
	})
	t.Run("usable-after-crash", func(t *testing.T) {
		s, c := crasher(t, nb)
		mustWrite(t, s, "f", []byte("before"))
		c.Crash()
		mustWrite(t, s, "g", []byte("after"))
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("+more"))
		mustSync(t, w)
		mustClose(t, w)
		c.Crash()
		wantContent(t, s, "f", []byte("before+more"))
		wantContent(t, s, "g", []byte("after"))
		wantTree(t, s, "f", "g")
	})
	t.Run("repeated", func(t *testing.T) {
		// Crash after each of several synced appends: what was synced
		// before any crash is never lost by a later one.
		s, c := crasher(t, nb)
		var all []byte
		for i := range 5 {
			w := openWriter(t, s, "log", backend.WriterOptions{})
			rec := fmt.Appendf(nil, "record %d;", i)
			mustWriteTo(t, w, rec)
			mustSync(t, w)
			all = append(all, rec...)
			mustWriteTo(t, w, []byte("torn"))
			c.Crash()
			w.Close()
			// A torn tail may survive; the next writer appends after it,
			// so cut it off as a recovering reader would.
			got := mustRead(t, s, "log")
			if !bytes.HasPrefix(got, all) {
				t.Fatalf("crash %d: log = %q, want it to start with %q", i, got, all)
			}
			if len(got) > len(all) {
				mustWrite(t, s, "log", all)
			}
		}
		wantContent(t, s, "log", all)
	})
}
