package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestLazyWalkKeepsEntries: a lazy walk leaves the entries of directories
// proven unchanged in the stat cache, and those, put back, are exactly
// what a walk that copies every entry finds, ignored names left out.
func TestLazyWalkKeepsEntries(t *testing.T) {
	ctx := context.Background()
	m := oneThenTwo(t, map[string]string{
		"a/x.txt":      "x\n",
		"top.txt":      "t\n",
		"c/.gitignore": "*.log\n",
		"c/z.log":      "ignored\n",
		"d/e/f/g.txt":  "g\n",
		"d/e/h.txt":    "h\n",
	})
	root := m.ws.(*dirWorkspace).path
	// A symlink, before the last snapshot.
	if err := os.Symlink("z.txt", filepath.Join(root, "d/e/f/link")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(root, "d/e/f"), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTree(ctx, "three"); err != nil {
		t.Fatal(err)
	}
	settle(m)
	man, err := m.loadHeader(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	walk := func(lazy bool) tree {
		t.Helper()
		tr, err := m.walkTree(ctx, baseIgnorer(man), m.workspaceGitignore, walkOptions{dirty: true, unsorted: true, lazy: lazy})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	full, lazy := walk(false), walk(true)
	// c (its z.log ignored) and a/b are as the last snapshot stored
	// them; d/e/f holds a new symlink.
	var clean []string
	for _, cd := range lazy.clean {
		clean = append(clean, cd.dir)
	}
	slices.Sort(clean)
	if len(full.clean) != 0 || !slices.Equal(clean, []string{"a/b", "c"}) {
		t.Fatalf("clean directories: %d without lazy, %v with", len(full.clean), clean)
	}
	got := lazy.entries
	var arena []byte
	for i := range lazy.clean {
		got, arena = lazy.clean[i].appendEntries(got, arena)
	}
	want := full.entries
	slices.SortFunc(got, cmpTreeEntry)
	slices.SortFunc(want, cmpTreeEntry)
	if !slices.Equal(got, want) {
		t.Fatalf("lazy walk's entries:\n%v\nwant\n%v", got, want)
	}
	if !slices.Equal(lazy.ignored, full.ignored) || len(lazy.ignored) != 1 || !slices.Equal(lazy.temps, full.temps) {
		t.Fatalf("ignored %v / %v, temps %v / %v", lazy.ignored, full.ignored, lazy.temps, full.temps)
	}
	for _, want := range []string{"d/e/f/link", "c/z.txt", "d/e/f/g.txt"} {
		if !slices.ContainsFunc(got, func(te treeEntry) bool { return te.path == want }) {
			t.Fatalf("%s missing from %v", want, got)
		}
	}
}
