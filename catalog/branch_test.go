package catalog

import (
	"context"
	"testing"
)

// TestBranches: each hit's branch is the leaf its newest continuation
// ends at, whatever the ids hold (colons, digits, non-ASCII letters).
func TestBranches(t *testing.T) {
	st := newMem()
	s := &fakeSession{id: "sess-b", cwd: "/w", title: "t"}
	msg := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	s.message("r:1", "", msg("root words"))
	s.message("é2", "r:1", msg("older continuation marigold"))
	s.message("12:x", "r:1", msg("newer continuation"))
	s.message("4", "12:x", msg("newest leaf"))
	s.message("5:", "é2", msg("older leaf marigold"))
	writeFile(t, st, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), st)
	want := map[string]string{"r:1": "4", "é2": "5:", "12:x": "4", "4": "4", "5:": "5:"}
	got := map[string]string{}
	for h, err := range c.Search(context.Background(), Query{Text: "root OR continuation OR leaf"}) {
		if err != nil {
			t.Fatal(err)
		}
		got[h.EntryID] = h.Branch
	}
	if len(got) != len(want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
	for id, leaf := range want {
		if got[id] != leaf {
			t.Errorf("entry %q: branch %q, want %q", id, got[id], leaf)
		}
	}
}

// TestBranchesAsFilesGrow: in a file that is one chain a hit's branch is
// its last entry, also after it grows; a fork appended later is seen.
func TestBranchesAsFilesGrow(t *testing.T) {
	ctx := context.Background()
	st := newMem()
	msg := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	s := &fakeSession{id: "sess-g", cwd: "/w", title: "t"}
	s.message("a", "", msg("tulip first"))
	s.message("b", "a", msg("second"))
	writeFile(t, st, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), st)
	branch := func(query string) string {
		t.Helper()
		for h, err := range c.Search(ctx, Query{Text: query}) {
			if err != nil {
				t.Fatal(err)
			}
			return h.Branch
		}
		t.Fatalf("no hit for %q", query)
		return ""
	}
	if got := branch("tulip"); got != "b" {
		t.Errorf("one chain: branch %q, want b", got)
	}
	appendFile(t, st, s.path(), append(s.message("c", "b", msg("third")), '\n'))
	if got := branch("tulip"); got != "c" {
		t.Errorf("grown: branch %q, want c", got)
	}
	appendFile(t, st, s.path(), append(s.message("d", "a", msg("a fork daisy")), '\n'))
	if got := branch("tulip"); got != "d" {
		t.Errorf("forked from a: branch %q, want d", got)
	}
	if got := branch("second"); got != "c" {
		t.Errorf("the older branch: %q, want c", got)
	}
	appendFile(t, st, s.path(), append(s.message("e", "d", msg("after the fork")), '\n'))
	if got := branch("daisy"); got != "e" {
		t.Errorf("after the fork: %q, want e", got)
	}
}
