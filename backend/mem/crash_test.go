package mem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

func gone(t *testing.T, s backend.Storage, name string) {
	t.Helper()
	if _, err := s.Stat(context.Background(), name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s survived the crash: %v", name, err)
	}
}

func appendTo(t *testing.T, w backend.Writer, data string) {
	t.Helper()
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, s backend.Storage, name string, opt backend.WriterOptions) backend.Writer {
	t.Helper()
	w, err := s.OpenWriter(context.Background(), name, opt)
	must(t, err)
	return w
}

func TestCrashKeepsSyncedAppends(t *testing.T) {
	s := mem.New()
	w := open(t, s, "log", backend.WriterOptions{})
	appendTo(t, w, "one\n")
	must(t, w.Sync())
	appendTo(t, w, "two\n")
	must(t, w.Close()) // Close makes visible, not durable.
	if read(t, s, "log") != "one\ntwo\n" {
		t.Fatal("not visible before the crash")
	}
	s.Crash()
	if got := read(t, s, "log"); got != "one\n" {
		t.Errorf("after crash %q, want the synced prefix", got)
	}

	// Appending to an existing durable file, never synced: back to before.
	w = open(t, s, "log", backend.WriterOptions{})
	appendTo(t, w, "three\n")
	s.Crash()
	if got := read(t, s, "log"); got != "one\n" {
		t.Errorf("after second crash %q", got)
	}
}

func TestCrashDropsNeverSyncedFiles(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	must(t, s.EnsureDir(ctx, "kept"))
	w := open(t, s, "kept/new/deeper/file", backend.WriterOptions{})
	appendTo(t, w, "data")
	must(t, w.Close())
	empty := open(t, s, "empty", backend.WriterOptions{})
	must(t, empty.Close())
	s.Crash()
	gone(t, s, "kept/new/deeper/file")
	gone(t, s, "kept/new")
	gone(t, s, "empty")
	if got := list(t, s, "."); strings.Join(got, "|") != "kept" {
		t.Errorf("after crash: %v", got)
	}

	// Sync makes the file and the directories created for it durable.
	w = open(t, s, "a/b/c", backend.WriterOptions{})
	must(t, w.Sync())
	appendTo(t, w, "unsynced")
	s.Crash()
	if i, err := s.Stat(ctx, "a/b/c"); err != nil || i.Size != 0 {
		t.Errorf("synced empty file: %+v %v", i, err)
	}
}

func TestCrashWriteFileIsDurable(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "x/f", "v1")
	w := open(t, s, "x/f", backend.WriterOptions{})
	appendTo(t, w, "+tail")
	write(t, s, "x/f", "v2") // replaces the file under the writer
	must(t, w.Sync())        // syncs the orphan, not x/f
	_, err := s.WriteFrom(ctx, "y/g", strings.NewReader("streamed"))
	must(t, err)
	s.Crash()
	if read(t, s, "x/f") != "v2" || read(t, s, "y/g") != "streamed" {
		t.Errorf("x/f=%q y/g=%q", read(t, s, "x/f"), read(t, s, "y/g"))
	}
}

func TestCrashAfterRename(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "target", "old")

	// The right way: write a temp, sync, rename.
	w := open(t, s, "tmp1", backend.WriterOptions{})
	appendTo(t, w, "new")
	must(t, w.Sync())
	must(t, w.Close())
	must(t, s.Rename(ctx, "tmp1", "dir/target"))
	// The wrong way: rename before syncing the data.
	w = open(t, s, "tmp2", backend.WriterOptions{})
	appendTo(t, w, "lost")
	must(t, s.Rename(ctx, "tmp2", "target"))
	appendTo(t, w, "+more") // the writer follows its file
	s.Crash()
	if got := read(t, s, "dir/target"); got != "new" {
		t.Errorf("synced then renamed: %q", got)
	}
	if got := read(t, s, "target"); got != "" {
		t.Errorf("renamed unsynced: %q, want empty (the rename is durable, the data not)", got)
	}
	gone(t, s, "tmp1")
	gone(t, s, "tmp2")

	// Syncing after the rename makes the data durable at the new name.
	w = open(t, s, "tmp3", backend.WriterOptions{})
	appendTo(t, w, "late")
	must(t, s.Rename(ctx, "tmp3", "t3"))
	must(t, w.Sync())
	s.Crash()
	if got := read(t, s, "t3"); got != "late" {
		t.Errorf("synced after rename: %q", got)
	}
}

func TestCrashUnlinkAndEnsureDirAreDurable(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "d/f", "f")
	must(t, s.Unlink(ctx, "d/f"))
	must(t, s.EnsureDir(ctx, "e/f/g"))
	// A directory first created by OpenWriter becomes durable with EnsureDir.
	w := open(t, s, "h/i", backend.WriterOptions{})
	must(t, w.Close())
	must(t, s.EnsureDir(ctx, "h"))
	s.Crash()
	gone(t, s, "d/f")
	gone(t, s, "h/i")
	for _, d := range []string{"d", "e/f/g", "h"} {
		if i, err := s.Stat(ctx, d); err != nil || !i.IsDir {
			t.Errorf("%s: %+v %v", d, i, err)
		}
	}
}

func TestCrashUndoesUnsyncedTruncate(t *testing.T) {
	s := mem.New()
	write(t, s, "f", "original")
	w := open(t, s, "f", backend.WriterOptions{Truncate: true})
	appendTo(t, w, "short")
	s.Crash()
	if got := read(t, s, "f"); got != "original" {
		t.Errorf("unsynced truncate: %q", got)
	}
	w = open(t, s, "f", backend.WriterOptions{Truncate: true})
	appendTo(t, w, "short")
	must(t, w.Sync())
	appendTo(t, w, "er")
	s.Crash()
	if got := read(t, s, "f"); got != "short" {
		t.Errorf("synced truncate: %q", got)
	}
}

func TestCrashInvalidatesWritersAndLocks(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	w := open(t, s, "f", backend.WriterOptions{})
	appendTo(t, w, "a")
	must(t, w.Sync())
	u, err := s.Lock(ctx, "lk", false)
	must(t, err)
	s.Crash()
	_, err = w.Write([]byte("b"))
	wantErr(t, err, backend.ErrClosed)
	wantErr(t, w.Sync(), backend.ErrClosed)
	wantErr(t, w.Close(), backend.ErrClosed)
	must(t, w.Close())

	// The lock's holder died with the crash; its late Unlock must not
	// release the new holder's lock.
	u2, err := s.Lock(ctx, "lk", false)
	must(t, err)
	must(t, u.Unlock())
	_, err = s.Lock(ctx, "lk", false)
	wantErr(t, err, backend.ErrLocked)
	must(t, u2.Unlock())

	// The store itself goes on working.
	w = open(t, s, "f", backend.WriterOptions{})
	appendTo(t, w, "c")
	must(t, w.Close())
	if got := read(t, s, "f"); got != "ac" {
		t.Errorf("after crash: %q", got)
	}
}

func TestCrashWakesLockWaiters(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	_, err := s.Lock(ctx, "lk", false)
	must(t, err)
	got := make(chan error)
	go func() {
		u, err := s.Lock(ctx, "lk", true)
		if err == nil {
			err = u.Unlock()
		}
		got <- err
	}()
	s.Crash()
	must(t, <-got)
}

func TestCrashKeep(t *testing.T) {
	type call struct {
		name            string
		synced, written int
	}
	var got []call
	s := mem.New(mem.WithCrashKeep(func(name string, synced, written int) int {
		got = append(got, call{name, synced, written})
		return 1 << 30 // clamped to written
	}))
	for _, name := range []string{"b", "a"} {
		w := open(t, s, name, backend.WriterOptions{})
		appendTo(t, w, "12")
		must(t, w.Sync())
		appendTo(t, w, "345")
	}
	write(t, s, "whole", "w") // nothing unsynced: not asked
	s.Crash()
	if fmt.Sprint(got) != "[{a 2 5} {b 2 5}]" {
		t.Errorf("keep called with %v", got)
	}
	if read(t, s, "a") != "12345" {
		t.Errorf("a = %q", read(t, s, "a"))
	}

	// Below synced is clamped up.
	s = mem.New(mem.WithCrashKeep(func(string, int, int) int { return -1 }))
	w := open(t, s, "f", backend.WriterOptions{})
	appendTo(t, w, "ab")
	must(t, w.Sync())
	appendTo(t, w, "cd")
	s.Crash()
	if read(t, s, "f") != "ab" {
		t.Errorf("f = %q", read(t, s, "f"))
	}
}

// TestCrashRandomKeep checks the contract over many seeded crashes: after
// each, every file is a prefix of what was written and holds at least what
// was synced; the same seed gives the same result.
func TestCrashRandomKeep(t *testing.T) {
	run := func(seed uint64) string {
		s := mem.New(mem.WithCrashKeep(mem.RandomKeep(seed)))
		var written, synced [3]string
		var out strings.Builder
		for round := range 20 {
			for i := range 3 {
				name := fmt.Sprintf("f%d", i)
				w := open(t, s, name, backend.WriterOptions{})
				for k := range 3 {
					chunk := fmt.Sprintf("<%d.%d.%d>", round, i, k)
					appendTo(t, w, chunk)
					written[i] += chunk
					if (round+i+k)%3 == 0 {
						must(t, w.Sync())
						synced[i] = written[i]
					}
				}
			}
			s.Crash()
			for i := range 3 {
				got := read(t, s, fmt.Sprintf("f%d", i))
				if !strings.HasPrefix(written[i], got) || !strings.HasPrefix(got, synced[i]) {
					t.Fatalf("seed %d round %d f%d: %q is not between %q and %q", seed, round, i, got, synced[i], written[i])
				}
				written[i], synced[i] = got, got
				out.WriteString(got)
			}
		}
		return out.String()
	}
	for seed := range uint64(10) {
		first, again := run(seed), run(seed)
		if first != again {
			t.Errorf("seed %d: not reproducible", seed)
		}
	}
	if run(1) == run(2) {
		t.Error("seeds 1 and 2 crashed alike")
	}
}

func TestConcurrentDistinctFiles(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	const workers, files = 16, 50
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range files {
				name := fmt.Sprintf("g%d/sub/f%d", g, i)
				if err := s.WriteFile(ctx, name, []byte(name)); err != nil {
					t.Error(err)
					return
				}
				w, err := s.OpenWriter(ctx, name, backend.WriterOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := w.Write([]byte("+")); err != nil {
					t.Error(err)
				}
				if err := w.Sync(); err != nil {
					t.Error(err)
				}
				if err := w.Close(); err != nil {
					t.Error(err)
				}
				for range s.List(ctx, fmt.Sprintf("g%d/sub", g)) {
				}
			}
		})
	}
	wg.Wait()
	s.Crash()
	for g := range workers {
		names := list(t, s, fmt.Sprintf("g%d/sub", g))
		if len(names) != files {
			t.Fatalf("g%d: %d files", g, len(names))
		}
		for _, name := range names {
			if got := read(t, s, name); got != name+"+" {
				t.Errorf("%s = %q", name, got)
			}
		}
	}
}

func TestReadersSeeOldOrNew(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	a := bytes.Repeat([]byte("a"), 4096)
	b := bytes.Repeat([]byte("b"), 8192)
	must(t, s.WriteFile(ctx, "f", a))
	check := func(got []byte) {
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Errorf("read a mix: %d bytes starting %q", len(got), got[:min(len(got), 8)])
		}
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.ReadFile(ctx, "f")
				if err != nil {
					t.Error(err)
					return
				}
				check(got)
				rc, err := s.Open(ctx, "f")
				if err != nil {
					t.Error(err)
					return
				}
				got, err = io.ReadAll(rc)
				if err != nil {
					t.Error(err)
				}
				check(got)
			}
		})
	}
	for i := range 500 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if i%3 == 0 {
			_, err := s.WriteFrom(ctx, "f", bytes.NewReader(data))
			must(t, err)
		} else {
			must(t, s.WriteFile(ctx, "f", data))
		}
	}
	close(stop)
	readers.Wait()
}

// TestReadersDuringAppends reads while a writer appends, syncs and the store
// crashes: every read is a prefix of the writer's stream.
func TestReadersDuringAppends(t *testing.T) {
	ctx := context.Background()
	s := mem.New(mem.WithCrashKeep(mem.RandomKeep(7)))
	var all strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&all, "%d,", i)
	}
	stream := all.String()
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.ReadFile(ctx, "log")
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.HasPrefix(stream, string(got)) {
					t.Errorf("read %d bytes that are not a prefix", len(got))
					return
				}
			}
		})
	}
	w := open(t, s, "log", backend.WriterOptions{})
	must(t, w.Sync())
	written := 0 // bytes of stream handed to a writer
	for i := range 2000 {
		item := fmt.Sprintf("%d,", i)
		if i%500 == 499 {
			// Resume after a crash from what survived, as a recovering writer would.
			s.Crash()
			w = open(t, s, "log", backend.WriterOptions{})
			have := read(t, s, "log")
			appendTo(t, w, stream[len(have):written+len(item)])
		} else {
			appendTo(t, w, item)
		}
		written += len(item)
		if i%7 == 0 {
			must(t, w.Sync())
		}
	}
	must(t, w.Close())
	close(done)
	readers.Wait()
	if read(t, s, "log") != stream {
		t.Error("final content differs")
	}
}
