package checkpoint

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

// TestDirListingCache: unchanged directories are not read again, and a file
// added or removed in one changes its stat, so the change is seen.
func TestDirListingCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"a/x.txt", "a/b/y.txt", "c/z.txt"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Settle every timestamp (files and directories) an hour back.
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
	base, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws := &countingWS{Workspace: base}
	st := mem.New()
	blobs, _ := cas.Open(ctx, st)
	m, err := newManager(st, casBlobs{blobs}, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	settle := func() {
		// Pretend the last snapshot was verified long after the writes, so
		// that ctimes (which Chtimes cannot set back) are not racy.
		for _, r := range fullCache(m.cache).Dirs {
			r.Verified += int64(2 * time.Hour)
		}
	}
	one, err := m.CreateTree(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.dirReads) != 4 {
		t.Fatalf("first walk read %v, want every directory", ws.dirReads)
	}
	settle()
	ws.reset()
	two, err := m.CreateTree(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.dirReads) != 0 {
		t.Fatalf("unchanged directories read again: %v", ws.dirReads)
	}
	if !slices.EqualFunc(one.Files, two.Files, func(a, b Entry) bool { return a.Path == b.Path && a.Digest == b.Digest }) {
		t.Fatalf("listings from the cache gave another tree:\n%v\n%v", one.Files, two.Files)
	}
	settle()
	if err := os.WriteFile(filepath.Join(dir, "a/b/new.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "c/z.txt")); err != nil {
		t.Fatal(err)
	}
	ws.reset()
	three, err := m.CreateTree(ctx, "three")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ws.dirReads)
	if !slices.Equal(ws.dirReads, []string{"a/b", "c"}) {
		t.Fatalf("read %v, want the two changed directories", ws.dirReads)
	}
	if three.Find("a/b/new.txt") == nil || three.Find("c/z.txt") != nil {
		t.Fatal("an added or removed file was missed")
	}
	// The cache survives a new Manager.
	settle()
	_ = m.writeCache(ctx, false, func(w io.Writer) error { _, err := w.Write(m.cache.Encode()); return err })
	m2, err := newManager(st, casBlobs{blobs}, ws)
	if err != nil {
		t.Fatal(err)
	}
	ws.reset()
	if _, err := m2.CreateTree(ctx, "four"); err != nil {
		t.Fatal(err)
	}
	if len(ws.dirReads) != 0 {
		t.Fatalf("persisted listings not used: %v", ws.dirReads)
	}
}

// TestMemFSNewFileSeen: afero's memory file system keeps no directory
// mtimes, so listings are never cached there and a new file is always seen.
func TestMemFSNewFileSeen(t *testing.T) {
	e := newMemEnv(t)
	e.write("d/a.txt", "a", t0.Add(-time.Hour))
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Hour))
	e.write("d/b.txt", "b", t0.Add(-time.Hour))
	man, err := e.m.CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if man.Find("d/b.txt") == nil {
		t.Fatal("a file added to a known directory was missed")
	}
}
