package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A listing reads a manifest's header, not its trees: the header counts
// the entries; a manifest written before it did still loads, and one whose
// count disagrees with its trees is damage.
func TestLoadHeaderCountsEntries(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	for _, p := range []string{"a.txt", "d/b.txt", "d/e/c.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full, err := m.CreateTree(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.LoadHeader(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	if h.Files != nil || h.Entries != len(full.Files) || h.Entries < 3 {
		t.Fatalf("header: %d files, entries %d; the checkpoint has %d", len(h.Files), h.Entries, len(full.Files))
	}
	if h.Tree != full.Tree || h.Kind != KindTree || !h.CreatedAt.Equal(full.CreatedAt) {
		t.Fatalf("header %+v, manifest %+v", h, full)
	}

	name := m.manifestName("cp")
	data, err := m.store.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	count := regexp.MustCompile(`,"entries":\d+`)
	if !count.Match(data) {
		t.Fatalf("the manifest does not count its entries: %s", data)
	}
	// Written before manifests counted: no count, and Load still works.
	if err := m.store.WriteFile(ctx, name, count.ReplaceAll(data, nil)); err != nil {
		t.Fatal(err)
	}
	if h, err := m.LoadHeader(ctx, "cp"); err != nil || h.Entries != 0 {
		t.Fatalf("a manifest without a count: %+v, %v", h, err)
	}
	if man, err := m.Load(ctx, "cp"); err != nil || len(man.Files) != len(full.Files) {
		t.Fatalf("a manifest without a count loads %v", err)
	}
	// A count its trees do not hold.
	if err := m.store.WriteFile(ctx, name, count.ReplaceAll(data, []byte(`,"entries":99`))); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(ctx, "cp"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a wrong count loads: %v", err)
	}
	for _, bad := range []string{`,"entries":-1`, `,"entries":"3"`, `,"entries":1e99`} {
		if err := m.store.WriteFile(ctx, name, count.ReplaceAll(data, []byte(bad))); err != nil {
			t.Fatal(err)
		}
		if _, err := m.LoadHeader(ctx, "cp"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// A header names its checkpoint: one stored under another name is damage.
	if err := m.store.WriteFile(ctx, m.manifestName("other"), bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadHeader(ctx, "other"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a header under another name: %v", err)
	}
}

// A version 1 manifest lists its entries inline: it counts none besides.
func TestInlineManifestNoCount(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "one", []string{"a.txt"}); err != nil {
		t.Fatal(err)
	}
	data, err := m.store.ReadFile(ctx, m.manifestName("one"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"entries"`)) || !bytes.Contains(data, []byte(`"files":[`)) {
		t.Fatalf("an inline manifest: %s", data)
	}
	if h, err := m.LoadHeader(ctx, "one"); err != nil || len(h.Files) != 1 || h.Entries != 0 {
		t.Fatalf("its header: %+v, %v", h, err)
	}
}
