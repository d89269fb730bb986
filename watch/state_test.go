package watch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/trovekit/trove"
)

// copyTree copies the files under from to to, replacing what is there.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// TestWatchResumesAfterCrash: a watcher stopped between a write to the
// store and the write of its state (the state kept is older than the
// session file; with "sidecars", import.json and meta.json are too, as
// when it stops between the session file and its sidecars) reads the
// source again whole once and leaves the store as a one-shot import.
func TestWatchResumesAfterCrash(t *testing.T) {
	from := filepath.Join(recordings, "heldout/claude/-home-dev-shop/3f8e2b1a-9c4d-4e7f-b2a6-5d1c0e9f8a7b.jsonl")
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
	third := len(lines) / 3
	for _, sidecars := range []bool{false, true} {
		h := newHarness(t)
		path := filepath.Join(h.dir, "claude", "-home-dev-shop", filepath.Base(from))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		h.start()
		h.write(path, bytes.Join(lines[:third], nil))
		// What a watcher killed during the next write leaves behind.
		old := t.TempDir()
		states := filepath.Join(filepath.Dir(h.state), "state.sources")
		copyTree(t, states, filepath.Join(old, "states"))
		copyTree(t, filepath.Join(h.store, "sessions"), filepath.Join(old, "sessions"))
		for j := third; j < 2*third; j++ {
			h.write(path, lines[j])
		}
		h.stop()
		copyTree(t, filepath.Join(old, "states"), states)
		if sidecars {
			sides, err := filepath.Glob(filepath.Join(old, "sessions", "*", "*", "*.json"))
			if err != nil || len(sides) == 0 {
				t.Fatalf("no sidecars: %v", err)
			}
			for _, p := range sides {
				rel, _ := filepath.Rel(filepath.Join(old, "sessions"), p)
				b, _ := os.ReadFile(p)
				if err := os.WriteFile(filepath.Join(h.store, "sessions", rel), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(bytes.Join(lines[2*third:], nil))
		f.Close()
		h.start()
		if e := h.wait(path, func(e Event) bool { return e.Offset == int64(len(data)) }); e.From != 0 || e.Err != nil {
			t.Errorf("sidecars %v: read from %d (%v), not again whole", sidecars, e.From, e.Err)
		}
		h.stop()
		compareSessions(t, reference(t, path), h.store, 2)
	}
}

// A second watcher with the state file of one running refuses to start,
// and so does a pass of Once; a watcher started during a pass of Once
// waits for its end and runs.
func TestWatchStateFileInUse(t *testing.T) {
	h := newHarness(t)
	h.start()
	// Read by the first, which holds the lock from before its first scan.
	path := filepath.Join(h.dir, "claude", "-work", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	h.write(path, []byte(`{"type":"summary","summary":"s","leafUuid":"a"}`+"\n"))
	st, err := trove.Open(context.Background(), h.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	second := New(st, h.roots(), WithStateFile(h.state), WithRescan(0), WithLogger(slog.New(slog.DiscardHandler)))
	if err := second.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second watcher on the same state file: %v, want ErrRunning", err)
	}
	if err := second.Once(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("Once while a watcher runs: %v, want ErrRunning", err)
	}
	h.stop()
	// A watcher started during a pass of Once waits for it, then runs.
	unlock, err := lockState(context.Background(), h.state, false)
	if err != nil {
		t.Fatal(err)
	}
	h.start()
	unlock()
	h.write(path, []byte(`{"type":"summary","summary":"t","leafUuid":"a"}`+"\n"))
	h.stop()
}
