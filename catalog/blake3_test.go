package catalog

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/cas"
)

// TestBLAKE3Output: a tool output kept as a BLAKE3 blob (a store an
// embedder opened with cas.WithAlgorithm(BLAKE3)) is found where BLAKE3 is
// linked. A build without it (the tag trove_noblake3; make test runs this
// test that way too) fails the search with cas.ErrAlgorithmUnavailable:
// indexed without the output's text, the entry would stay unfound, the
// catalog current, once a build that has BLAKE3 searched it.
func TestBLAKE3Output(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../cas/testdata/blake3store")); err != nil {
		t.Fatal(err)
	}
	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSession{id: "s1", cwd: "/w", title: "t"}
	s.message("e1", "", map[string]any{"role": "user", "content": "run it"})
	s.message("e2", "e1", map[string]any{"role": "toolResult", "toolName": "bash", "content": []any{
		map[string]any{"type": "text", "text": "[stored]", "textRef": "blob:blake3:f490b88fd4fc15a7a189362322608b70351e93b5e5c5989ca999ee480cfabc04"},
	}})
	writeFile(t, st, s.path(), s.bytes())
	c, err := Open(ctx, t.TempDir(), st, blobs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hits []Hit
	for h, err := range c.Search(ctx, Query{Text: "sixty"}) {
		if err != nil {
			if cas.BLAKE3.Linked() || !errors.Is(err, cas.ErrAlgorithmUnavailable) {
				t.Fatalf("search: %v", err)
			}
			// Nothing was committed as read: the next search fails alike.
			for _, err := range c.Search(ctx, Query{Text: "run"}) {
				if !errors.Is(err, cas.ErrAlgorithmUnavailable) {
					t.Fatalf("second search: %v, want ErrAlgorithmUnavailable", err)
				}
				return
			}
			t.Fatal("second search: no error")
		}
		hits = append(hits, h)
	}
	if !cas.BLAKE3.Linked() {
		t.Fatalf("a build without BLAKE3 searched a BLAKE3 output: %d hits, no error", len(hits))
	}
	if len(hits) != 1 || hits[0].EntryID != "e2" {
		t.Fatalf("hits %+v, want e2", hits)
	}
}
