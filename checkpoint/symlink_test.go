package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// Symlinks round-trip: right after a checkpoint nothing differs; a changed
// link is one change; rewind restores the link itself, once.
func TestSymlinksRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"rel": "a.txt", "abs": "/etc/hostname", "dangling": "nowhere", "out": "../.."} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	st := mem.New()
	defer st.Close()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(st, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.CreateTree(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if d, err := m.Diff(ctx, "c"); err != nil || len(d.Files) != 0 {
		t.Fatalf("diff right after create: %+v %v", d, err)
	}
	if err := os.Remove(filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	if d, err := m.Diff(ctx, "c"); err != nil || len(d.Files) != 1 || d.Files[0].Path != "rel" {
		t.Fatalf("diff after changing one link: %+v %v", d, err)
	}
	res, err := m.Rewind(ctx, "c", false)
	if err != nil || len(res.FilesChanged) != 1 {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	if got, _ := os.Readlink(filepath.Join(dir, "rel")); got != "a.txt" {
		t.Errorf("link after rewind points to %q", got)
	}
	if res, err := m.Rewind(ctx, "c", false); err != nil || len(res.FilesChanged) != 0 {
		t.Errorf("a second rewind: %+v %v", res, err)
	}
}
