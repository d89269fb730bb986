package checkpoint

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

// TestKeepReusedTrees: after each tree snapshot that reuses the last
// one's trees, the stat cache maps every directory to its tree in the
// snapshot, holds every one of those trees, and keeps the trees it
// dropped from the snapshot as older ones (the budget is ample here),
// never a tree the snapshot has.
func TestKeepReusedTrees(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(p, content string, mtime time.Time) { writeAged(t, dir, p, []byte(content), mtime) }
	for _, p := range []string{"a/x.txt", "a/b/y.txt", "c/z.txt", "d/e/w.txt"} {
		write(p, p, old)
	}
	ws, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	blobs, _ := cas.Open(ctx, st)
	// A window of a nanosecond: the files written just now are not racy.
	m, err := newManager(st, casBlobs{blobs}, ws, WithRacyWindow(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var prev map[string]bool // the trees of the snapshot before
	snap := func(id string) {
		t.Helper()
		man, err := m.CreateTree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c := fullCache(m.cache)
		refs := map[string]bool{}
		for _, r := range man.TreeRefs() {
			refs[r] = true
			if c.Trees[r] == nil {
				t.Errorf("%s: tree %s not in the cache", id, r)
			}
			if c.Older[r] {
				t.Errorf("%s: its own tree %s kept as older", id, r)
			}
		}
		for d, r := range c.TreeOf {
			if !refs[r] {
				t.Errorf("%s: directory %q has tree %s, not one of the snapshot's", id, d, r)
			}
		}
		if c.TreeOf["."] != man.Tree || c.Last.Tree != man.Tree {
			t.Errorf("%s: root %s, cache's %s and last %s", id, man.Tree, c.TreeOf["."], c.Last.Tree)
		}
		for r := range prev {
			if !refs[r] && !c.Older[r] {
				t.Errorf("%s: the last snapshot's tree %s not kept", id, r)
			}
		}
		for r := range c.Older {
			if c.Trees[r] == nil {
				t.Errorf("%s: older tree %s not held", id, r)
			}
		}
		prev = refs
	}
	treeOf := func() map[string]string { return maps.Clone(fullCache(m.cache).TreeOf) }
	snap("one")
	ofOne := treeOf()
	write("a/b/y.txt", "changed", old.Add(time.Minute))
	snap("two")
	if ofTwo := treeOf(); ofTwo["c"] != ofOne["c"] || ofTwo["a/b"] == ofOne["a/b"] || len(ofTwo) != len(ofOne) {
		t.Fatalf("directories' trees: one %v, two %v", ofOne, ofTwo)
	}
	if err := os.RemoveAll(filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	snap("three")
	// Back to one's bytes: its trees of a and a/b are built again, and
	// are the snapshot's, not older ones.
	write("a/b/y.txt", "a/b/y.txt", old.Add(2*time.Minute))
	snap("four")
	if ofFour := treeOf(); ofFour["a"] != ofOne["a"] || ofFour["a/b"] != ofOne["a/b"] || ofFour["c"] != ofOne["c"] || len(ofFour) != len(ofOne)-2 {
		t.Errorf("directories' trees: one %v, four %v", ofOne, ofFour)
	}
}
