//go:build unix

package watch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
)

// A FIFO named like a session in a watched directory is reported, once
// until it changes, instead of blocking the watcher in its open; the
// session beside it is imported.
func TestWatchRefusesFIFO(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions", "--home-dev-web--")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(recordings, "heldout/pi/sessions/--home-dev-web--/2026-11-21T12-00-00-000Z_6c2f8d3e-9b0a-4c4d-8e3f-2a1b7c6d5e4f.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "2026-11-21T12-00-00-000Z_b.jsonl"), good, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "2026-11-21T12-00-00-000Z_a.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	st, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var refused int
	w := New(st, []Root{{Path: filepath.Dir(root), Format: "pi"}}, WithStateFile(filepath.Join(t.TempDir(), "state")), WithEvents(func(e Event) {
		if e.Path == fifo && errors.Is(e.Err, fs.ErrInvalid) {
			refused++
		}
	}))
	if err := w.Once(ctx); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("first pass: %v, want the FIFO refused with fs.ErrInvalid", err)
	}
	if err := w.Once(ctx); err != nil {
		t.Fatalf("second pass, nothing changed: %v", err)
	}
	if refused != 1 {
		t.Errorf("the FIFO was refused %d times over two passes, want once", refused)
	}
	n := 0
	for _, err := range st.Sessions().Query(ctx, session.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Error("the session beside the FIFO was not imported")
	}
}
