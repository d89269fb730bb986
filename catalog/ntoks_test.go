package catalog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestNtoksFollowEntries: after sessions are added, grown, rewritten and
// deleted, ntoks holds the length of every entry in the index and of no
// other, so that ordering by it is ordering by the entries' rows.
func TestNtoksFollowEntries(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	st := newMem()
	sessions := randomStore(t, st, r, 40)
	c := openCatalog(t, t.TempDir(), st)
	check := func(when string) {
		t.Helper()
		if err := c.Refresh(ctx, false); err != nil {
			t.Fatal(err)
		}
		db, err := c.handle()
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, "SELECT id, ntok FROM entries WHERE id IN (SELECT rowid FROM fts) ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		var ids, want []int64
		for rows.Next() {
			var id, n int64
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			ids, want = append(ids, id), append(want, n)
		}
		rows.Close()
		if len(ids) == 0 {
			t.Fatalf("%s: no entries", when)
		}
		got, err := c.ntokOf(ctx, db, ids)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: ntoks %v, entries say %v", when, got, want)
		}
		sizes, err := c.bucketSizes(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, s := range sizes {
			total += s
		}
		if int(total) != len(ids) {
			t.Fatalf("%s: buckets hold %v entries, the index %d", when, total, len(ids))
		}
	}
	check("built")
	for i, s := range sessions[:10] {
		switch i % 3 {
		case 0: // grown
			line := s.message("more", "", map[string]any{"role": "user", "content": randomText(r, 9)})
			appendFile(t, st, s.path(), append(line, '\n'))
		case 1: // rewritten
			s.lines = s.lines[:1]
			s.message("other", "", map[string]any{"role": "user", "content": randomText(r, 30)})
			writeFile(t, st, s.path(), s.bytes())
		default:
			if err := st.Unlink(ctx, s.path()); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("changed")
}

// TestByLength: candidates go shorter first, ties in id order, and those
// too long for ntoks (or without a length) last, to be ordered by their
// rows.
func TestByLength(t *testing.T) {
	ids := []int64{1, 2, 3, 4, 5, 6, 7}
	ntoks := []int64{9, satNtok, 3, -1, 9, 1, satNtok}
	if n := byLength(ids, ntoks); n != 4 {
		t.Errorf("exact = %d, want 4", n)
	}
	if want := []int64{6, 3, 1, 5}; !slices.Equal(ids[:4], want) {
		t.Errorf("order %v, want %v first", ids, want)
	}
	if rest := slices.Sorted(slices.Values(ids[4:])); !slices.Equal(rest, []int64{2, 4, 7}) {
		t.Errorf("last: %v", ids[4:])
	}
}

// TestLongEntriesRanked: entries longer than ntoks keeps come after the
// others, ordered by their own lengths.
func TestLongEntriesRanked(t *testing.T) {
	st := newMem()
	for i, words := range []int{satNtok + 9000, 12, satNtok + 100, satNtok + 5000} {
		s := &fakeSession{id: fmt.Sprintf("s%d", i), cwd: "/w", title: "t"}
		s.message("e", "", map[string]any{"role": "user", "content": "zanzibar" + strings.Repeat(" go", words)})
		writeFile(t, st, s.path(), s.bytes())
	}
	c := openCatalog(t, t.TempDir(), st)
	var got []string
	for h, err := range c.Search(context.Background(), Query{Text: "zanzibar"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.SessionID)
	}
	if want := []string{"s1", "s2", "s3", "s0"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}

// TestStaleHitDropped: a file changed in place, its size and last bytes
// kept (the catalog reads it again only on a full refresh or a rebuild),
// gives no hit for text it no longer holds.
func TestStaleHitDropped(t *testing.T) {
	st := newMem()
	s := &fakeSession{id: "sess-1", cwd: "/w/a", title: "t"}
	s.message("e1", "", map[string]any{"role": "user", "content": "alpha words here"})
	s.message("e2", "e1", map[string]any{"role": "user", "content": strings.Repeat("a tail kept as it was ", 8)})
	writeFile(t, st, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), st)
	if got := hitKeys(t, c, Query{Text: "alpha"}); !slices.Equal(got, []string{"sess-1/e1"}) {
		t.Fatalf("before: %q", got)
	}
	writeFile(t, st, s.path(), []byte(strings.Replace(string(s.bytes()), "alpha words", "gamma words", 1)))
	if got := hitKeys(t, c, Query{Text: "alpha"}); len(got) != 0 {
		t.Errorf("text changed in place still found: %q", got)
	}
	if err := c.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hitKeys(t, c, Query{Text: "gamma"}); !slices.Equal(got, []string{"sess-1/e1"}) {
		t.Errorf("after a rebuild: %q", got)
	}
}
