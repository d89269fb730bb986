//go:build unix

package importer_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
)

// A FIFO among the sources (a session file's name, a pi blob's) is
// refused with fs.ErrInvalid instead of blocking the import in its open,
// and the good sources beside it go in.
func TestImportRefusesFIFOs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("testdata", "claude", "-work-app", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.jsonl"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fifo.jsonl", filepath.Join("blobs", strings.Repeat("ab", 32))} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o600); err != nil {
			t.Skipf("no FIFO here: %v", err)
		}
	}
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := importer.Import(ctx, s, []string{dir}, importer.Options{From: "claude"})
	if !errors.Is(err, fs.ErrInvalid) || strings.Count(err.Error(), "not a regular file") != 2 {
		t.Errorf("import of two FIFOs: %v, want both refused with fs.ErrInvalid", err)
	}
	imported := 0
	for _, r := range res {
		if r.Imported {
			imported++
			if !strings.HasPrefix(r.Source, filepath.Join(dir, "good.jsonl")) {
				t.Errorf("imported %s, want only good.jsonl's sessions", r.Source)
			}
		}
	}
	if imported == 0 {
		t.Errorf("good.jsonl not imported beside the FIFOs: %+v", res)
	}
}
