package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestRankOrder: hits come best first (scores never rise), a query with
// a limit gives the first hits of the same query without one (its
// candidates asked for in batches), and all of them are the entries a
// brute-force scan finds, with and without a filter.
func TestRankOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 34))
	st := newMem()
	sessions := randomStore(t, st, r, 60)
	c := openCatalog(t, t.TempDir(), st)
	run := func(q Query) []Hit {
		t.Helper()
		return searchAll(t, c, q)
	}
	key := func(h Hit) string { return fmt.Sprintf("%s/%s %.6f", h.SessionID, h.EntryID, h.Score) }
	queries := []string{"a*", "z*", "x*", "e*", "0*"}
	for range 80 {
		queries = append(queries, randomQuery(r))
	}
	for i, text := range queries {
		for _, role := range []string{"", RoleUser} {
			all := run(Query{Text: text, Role: role, Limit: 1 << 30})
			for j := 1; j < len(all); j++ {
				if all[j].Score > all[j-1].Score {
					t.Fatalf("query %q: hit %d scores %v after %v", text, j, all[j].Score, all[j-1].Score)
				}
			}
			limit := 1 + i%12
			some := run(Query{Text: text, Role: role, Limit: limit})
			want := all[:min(limit, len(all))]
			if got, w := strings.Join(mapKeys(some, key), "\n"), strings.Join(mapKeys(want, key), "\n"); got != w {
				t.Fatalf("query %q role %q limit %d:\n got %s\nwant %s", text, role, limit, got, w)
			}
			var filter func(doc) bool
			if role != "" {
				filter = func(d doc) bool { return d.role == role }
			}
			got := mapKeys(all, func(h Hit) string { return h.SessionID + "/" + h.EntryID })
			slices.Sort(got)
			if want := bruteForce(t, sessions, text, filter); !slices.Equal(got, want) {
				t.Fatalf("query %q role %q:\n got %q\nwant %q", text, role, got, want)
			}
		}
	}
}

func mapKeys(hits []Hit, key func(Hit) string) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = key(h)
	}
	return out
}

// TestRankKeys: after sessions are added, grown, rewritten and deleted,
// each entry's rank key holds its length above a number that orders the
// entries of a length as they were written, and fts's rowids are the
// keys of the entries it indexes, no other.
func TestRankKeys(t *testing.T) {
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
		rows, err := db.QueryContext(ctx, "SELECT id, ntok, file, off FROM entries ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		// The entries of a length, of one file, rank in file order: a
		// file's entries are written in that order, and a grown file's
		// after those before.
		var prevRK int64 = -1
		lastOff := map[[2]int64]int64{} // by length and file
		n := 0
		for rows.Next() {
			var rk, ntok, file, off int64
			if err := rows.Scan(&rk, &ntok, &file, &off); err != nil {
				t.Fatal(err)
			}
			prev, seen := lastOff[[2]int64{ntok, file}]
			switch {
			case rk>>seqBits != ntok:
				t.Fatalf("%s: key %x of an entry of %d tokens", when, rk, ntok)
			case rk <= prevRK:
				t.Fatalf("%s: key %x after %x", when, rk, prevRK)
			case seen && off <= prev:
				t.Fatalf("%s: the entry at %d of file %d (%d tokens) ranks after the one at %d", when, prev, file, ntok, off)
			}
			prevRK, lastOff[[2]int64{ntok, file}] = rk, off
			n++
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("%s: no entries", when)
		}
		var stray, missing int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM fts WHERE rowid NOT IN (SELECT id FROM entries)").Scan(&stray); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM entries WHERE ntok > 0 AND id NOT IN (SELECT rowid FROM fts)").Scan(&missing); err != nil {
			t.Fatal(err)
		}
		if stray != 0 || missing != 0 {
			t.Fatalf("%s: %d rows of fts without an entry, %d entries not in fts", when, stray, missing)
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

// TestLongEntriesRanked: long entries are ranked by their own lengths.
func TestLongEntriesRanked(t *testing.T) {
	st := newMem()
	for i, words := range []int{1<<16 + 9000, 12, 1<<16 + 100, 1<<16 + 5000} {
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

// TestOptimizedAfterBuild: a refresh that writes as much as the index
// held merges FTS5's segments into one; a small one after it does not
// merge; the hits are the same either way.
func TestOptimizedAfterBuild(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 9))
	st := newMem()
	sessions := randomStore(t, st, r, 40)
	segments := func(c *Catalog) int64 {
		t.Helper()
		return queryInt(t, c, "SELECT count(DISTINCT segid) FROM fts_idx")
	}
	plain, merged := openCatalog(t, t.TempDir(), st), openCatalog(t, t.TempDir(), st)
	for _, c := range []*Catalog{plain, merged} {
		c.cfg.batchLen = 4 // a transaction, and a segment, for every four files
	}
	plain.cfg.optimizeAbove = 1 << 40
	merged.cfg.optimizeAbove = 1
	for _, c := range []*Catalog{plain, merged} {
		if err := c.Refresh(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := segments(plain); n < 2 {
		t.Fatalf("without merging: %d segments", n)
	}
	if n := segments(merged); n != 1 {
		t.Errorf("after a build: %d segments, want 1", n)
	}
	s := sessions[0]
	line := s.message("more", "", map[string]any{"role": "user", "content": randomText(r, 9)})
	appendFile(t, st, s.path(), append(line, '\n'))
	if err := merged.Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := segments(merged); n != 2 {
		t.Errorf("after a small refresh: %d segments, want 2", n)
	}
	agreesWithBruteForce(t, merged, sessions, r, 30, "after a small refresh")
}

// TestCountCapped: a term's document count is counted up to a bound: a
// term over it scores as if it held the bound (a higher IDF), its hits
// in the same order; one under it scores as before.
func TestCountCapped(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	st := newMem()
	randomStore(t, st, r, 30)
	c := openCatalog(t, t.TempDir(), st)
	run := func(text string, maxCount int) []Hit {
		t.Helper()
		c.cfg.maxCount = maxCount
		return searchAll(t, c, Query{Text: text, Limit: 1 << 30})
	}
	key := func(h Hit) string { return h.SessionID + "/" + h.EntryID }
	full, capped := run("a*", 1<<30), run("a*", 3)
	if len(full) <= 3 {
		t.Fatalf("a* matches %d entries; the test wants more than 3", len(full))
	}
	if !slices.Equal(mapKeys(full, key), mapKeys(capped, key)) {
		t.Fatalf("order changed:\n full %q\n capped %q", mapKeys(full, key), mapKeys(capped, key))
	}
	if capped[0].Score <= full[0].Score {
		t.Errorf("capped count: score %v, want above %v", capped[0].Score, full[0].Score)
	}
	few := run("a*", len(full))
	for i := range few {
		if few[i].Score != full[i].Score {
			t.Fatalf("count under the bound: score %v, want %v", few[i].Score, full[i].Score)
		}
	}
}

// TestVacuumedAfterBuild: the refresh that merges the index also
// vacuums the file: no free pages are left of the merged segments, each
// table's pages are in the order of its keys (a query's neighbouring
// rows are neighbouring pages), and the hits are as before.
func TestVacuumedAfterBuild(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(12, 13))
	st := newMem()
	sessions := randomStore(t, st, r, 160) // entries on several pages of pageSize
	c := openCatalog(t, t.TempDir(), st)
	c.cfg.batchLen = 16 // a segment every 16 files, rank keys out of order across them
	c.cfg.optimizeAbove = 1
	if err := c.Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	if free := queryInt(t, c, "PRAGMA freelist_count"); free != 0 {
		t.Errorf("after a build: %d free pages, want 0", free)
	}
	db, err := c.handle()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT pageno FROM dbstat WHERE name = 'entries' AND pagetype = 'leaf' ORDER BY path")
	var pages []int64
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var p int64
		pages = append(pages, p)
		return rows.Scan(&pages[len(pages)-1])
	}); err != nil {
		t.Fatal(err)
	}
	if len(pages) < 2 || !slices.IsSorted(pages) {
		t.Errorf("after a build: the entries' leaf pages in key order are %v, want ascending", pages)
	}
	agreesWithBruteForce(t, c, sessions, r, 20, "after a vacuumed build")
}

// TestScoreBM25: each hit's score is BM25 as docs/catalog.md has it,
// computed here from a scan of the sessions: the sum over the query's
// terms of log((n-df+0.5)/(df+0.5)+1), a phrase's being the sum of its
// words' (each word's df its own), times (k1+1)/(1+k1(1-b+b*len/avg)).
// A phrase's hit scores as its entry does for its words ANDed.
func TestScoreBM25(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	st := newMem()
	sessions := randomStore(t, st, r, 50)
	c := openCatalog(t, t.TempDir(), st)
	docs := map[string][]string{} // "session/entry" to its tokens
	ntok := 0
	for _, s := range sessions {
		if s.title != "" {
			docs[s.id+"/"] = Tokens(s.title)
			ntok += len(docs[s.id+"/"])
		}
		for _, l := range s.lines {
			d, ok := parseEntry(l, nil)
			if !ok {
				continue
			}
			var toks []string
			for _, text := range d.texts {
				toks = append(toks, Tokens(text)...)
			}
			docs[s.id+"/"+d.id] = toks
			ntok += len(toks)
		}
	}
	n := float64(len(docs))
	avg := float64(ntok) / n
	idf := func(tok string, prefix bool) float64 {
		df := 0.0
		for _, toks := range docs {
			if slices.ContainsFunc(toks, func(x string) bool { return x == tok || prefix && strings.HasPrefix(x, tok) }) {
				df++
			}
		}
		return math.Log((n-df+0.5)/(df+0.5) + 1)
	}
	search := func(text string) map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		for _, h := range searchAll(t, c, Query{Text: text, Limit: 1 << 30}) {
			out[h.SessionID+"/"+h.EntryID] = h.Score
		}
		return out
	}
	queries := []string{`"parse ref"`, `"the the"`, `"alpha beta" gamma`, `"parse_ref go"`, `"hello wor*"`}
	for range 60 {
		queries = append(queries, randomQuery(r))
	}
	phrases := 0
	for _, text := range queries {
		e, err := parseQuery(text)
		if err != nil {
			t.Fatal(err)
		}
		sum, words := 0.0, []string(nil)
		for _, term := range e.positive(nil) {
			if term.op != opPhrase {
				sum += idf(term.toks[0], term.op == opPrefix)
				continue
			}
			for i, tok := range term.toks {
				if !term.parts[i] {
					last := i == len(term.toks)-1 && term.prefix
					sum += idf(tok, last)
					if last {
						tok += "*"
					}
					words = append(words, tok)
				}
			}
		}
		hits := search(text)
		for key, got := range hits {
			l := float64(len(docs[key]))
			want := sum * (1.2 + 1) / (1 + 1.2*(1-0.75+0.75*l/avg))
			if math.Abs(got-want) > 1e-9*want {
				t.Fatalf("query %q, hit %s: score %v, want %v", text, key, got, want)
			}
		}
		if e.op == opPhrase && len(hits) > 0 {
			phrases++
			and := search(strings.Join(words, " "))
			for key, got := range hits {
				if math.Abs(got-and[key]) > 1e-9*got {
					t.Fatalf("phrase %q, hit %s: score %v, its words ANDed %v", text, key, got, and[key])
				}
			}
		}
	}
	if phrases < 5 {
		t.Fatalf("%d phrases with hits; the test wants 5", phrases)
	}
}

// TestNoScores: a query that asks for no scores has the same hits in
// the same order, each scored 0.
func TestNoScores(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	st := newMem()
	randomStore(t, st, r, 30)
	c := openCatalog(t, t.TempDir(), st)
	key := func(h Hit) string { return h.SessionID + "/" + h.EntryID }
	nonEmpty := 0
	for range 40 {
		q := Query{Text: randomQuery(r), Limit: 1 << 30}
		scored := searchAll(t, c, q)
		q.NoScores = true
		plain := searchAll(t, c, q)
		if !slices.Equal(mapKeys(scored, key), mapKeys(plain, key)) {
			t.Fatalf("query %q: hits\n %q scored\n %q without scores", q.Text, mapKeys(scored, key), mapKeys(plain, key))
		}
		for i, h := range plain {
			if h.Score != 0 || scored[i].Score <= 0 {
				t.Fatalf("query %q, hit %d: score %v without scores, %v with", q.Text, i, h.Score, scored[i].Score)
			}
		}
		if len(plain) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 10 {
		t.Fatalf("%d of 40 queries had hits; the test wants more", nonEmpty)
	}
}
