package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/internal/jsonscan"
)

func TestTokens(t *testing.T) {
	for in, want := range map[string]string{
		"parseRef":           "parseref parse ref",
		"parse_ref":          "parseref parse ref",
		"PARSE_REF":          "parseref parse ref",
		"cas/ref.go":         "cas ref go",
		"HTTPServer":         "httpserver http server",
		"v2Beta x1":          "v2beta v2 beta x1",
		"__init__":           "init",
		"___ ...":            "",
		"Zürich ÜBER naïve":  "zürich über naïve",
		"errors.Is(err, fs)": "errors is err fs",
		"getHTTPResponse":    "gethttpresponse get http response",
	} {
		if got := strings.Join(Tokens(in), " "); got != want {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("a", maxWord+1)
	if got := Tokens("x " + long + " y"); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("a word over maxWord is indexed: %q", got)
	}
}

// TestWordShortcuts: the byte-wise cut of text into words and the
// shortcut for plain words give what the definitions give (a word is a
// maximal run of runes wordRune takes; appendCompound is the general
// cut of a word into tokens), on random text of ASCII, other scripts
// and invalid UTF-8.
func TestWordShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	pieces := []string{"a", "z", "q", "0", "9", "_", "A", "Z", "é", "É", "ß", "日", "\xff", "\xc3", " ", ".", "/", "-", "\n", "٣", "\u00a0"}
	plain := 0
	for range 5000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		var got, want []string
		eachWord(text, func(w string, at span) bool {
			if text[at.start:at.end] != w {
				t.Fatalf("%q: word %q at %v", text, w, at)
			}
			got = append(got, w)
			return true
		})
		start := -1
		for i, c := range text + "." {
			switch in := wordRune(c); {
			case in && start < 0:
				start = i
			case !in && start >= 0:
				want, start = append(want, text[start:i]), -1
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: words %q, want %q", text, got, want)
		}
		for i := 0; ; {
			at, isPlain, ok := nextWord(text, i)
			if !ok {
				break
			}
			if w := text[at.start:at.end]; isPlain != plainWord(w) {
				t.Fatalf("%q: word %q plain %v, plainWord says %v", text, w, isPlain, plainWord(w))
			}
			i = at.end
		}
		for _, w := range got {
			if plainWord(w) {
				plain++
			}
			if len(w) <= maxWord && string(appendWord(nil, w)) != string(appendCompound(nil, w)) {
				t.Fatalf("appendWord(%q) = %q, the general cut %q", w, appendWord(nil, w), appendCompound(nil, w))
			}
		}
	}
	if plain < 500 {
		t.Fatalf("%d plain words; the test wants more", plain)
	}
}

// bruteForce is the reference: every entry of the sessions, its text
// tokenized as documented, matched against the query by expr.match.
func bruteForce(t *testing.T, sessions []*fakeSession, q string, filter func(doc) bool) []string {
	t.Helper()
	e, err := parseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range sessions {
		if title := Tokens(s.title); len(title) > 0 && filter == nil && e.match(title) {
			out = append(out, s.id+"/")
		}
		for _, l := range s.lines {
			d, ok := parseEntry(l, make(jsonscan.Members, 0, 8))
			if !ok || filter != nil && !filter(d) {
				continue
			}
			var toks []string
			for _, text := range d.texts {
				toks = append(toks, Tokens(text)...)
			}
			if len(toks) > 0 && e.match(toks) {
				out = append(out, s.id+"/"+d.id)
			}
		}
	}
	slices.Sort(out)
	return out
}

func randomQuery(r *rand.Rand) string {
	word := func() string {
		w := vocabulary[r.IntN(len(vocabulary))]
		switch r.IntN(6) {
		case 0:
			return `"` + w + " " + vocabulary[r.IntN(len(vocabulary))] + `"`
		case 1:
			if rs := []rune(w); len(rs) > 2 && !strings.ContainsAny(w, "/.") {
				return string(rs[:2]) + "*"
			}
		}
		return w
	}
	switch r.IntN(5) {
	case 0:
		return word() + " " + word()
	case 1:
		return word() + " OR " + word()
	case 2:
		return word() + " NOT " + word()
	case 3:
		return "(" + word() + " OR " + word() + ") AND " + word()
	}
	return word()
}

func TestSearchMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(3) {
		r := rand.New(rand.NewPCG(seed, 34))
		st := newMem()
		sessions := randomStore(t, st, r, 40)
		c := openCatalog(t, t.TempDir(), st)
		agreesWithBruteForce(t, c, sessions, r, 60, fmt.Sprintf("seed %d", seed))
		// Filters: role and tool.
		got := hitKeys(t, c, Query{Text: "hello OR parse", Role: RoleTool, Tool: "bash"})
		want := bruteForce(t, sessions, "hello OR parse", func(d doc) bool { return d.role == RoleTool && slices.Contains(d.tools, "bash") })
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d, role tool:\n got %q\nwant %q", seed, got, want)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		_ = ctx
	}
}

func TestSearchHit(t *testing.T) {
	ctx := context.Background()
	st := newMem()
	s := &fakeSession{id: "sess-1", cwd: "/w/a", title: "fix the greeting"}
	s.message("e1", "", map[string]any{"role": "user", "content": "please call parseRef from cas/ref.go"})
	s.message("e2", "e1", map[string]any{"role": "assistant", "model": "m1", "content": []any{map[string]any{"type": "text", "text": "done"}}})
	s.message("e3", "e1", map[string]any{"role": "assistant", "model": "m1", "content": []any{map[string]any{"type": "text", "text": "another way"}}})
	writeFile(t, st, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), st)
	var hits []Hit
	for h, err := range c.Search(ctx, Query{Text: "parse_ref"}) {
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, h)
	}
	if len(hits) != 1 {
		t.Fatalf("hits %+v", hits)
	}
	h := hits[0]
	if h.SessionID != "sess-1" || h.EntryID != "e1" || h.Role != RoleUser || h.Cwd != "/w/a" || h.Branch != "e3" || h.Title != "fix the greeting" {
		t.Errorf("hit %+v", h)
	}
	if want := "please call «parseRef» from cas/ref.go"; h.Snippet != want {
		t.Errorf("snippet %q, want %q", h.Snippet, want)
	}
	if got := hitKeys(t, c, Query{Text: `"cas/ref.go"`}); !slices.Equal(got, []string{"sess-1/e1"}) {
		t.Errorf("path phrase: %q", got)
	}
	if got := hitKeys(t, c, Query{Text: "greeting"}); !slices.Equal(got, []string{"sess-1/"}) {
		t.Errorf("title: %q", got)
	}
}

// TestIncremental: a message another program appends is found at the
// next query, which reads only the new bytes (and the few before them
// that tell an append from a rewrite); a deleted session goes.
func TestIncremental(t *testing.T) {
	ctx := context.Background()
	inner := newMem()
	sp := spy.New(inner)
	s := &fakeSession{id: "sess-1", cwd: "/w/a", title: "t"}
	for i := range 200 {
		s.message(fmt.Sprintf("e%d", i), "", map[string]any{"role": "user", "content": strings.Repeat("filler words here ", 20)})
	}
	writeFile(t, sp, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), sp)
	if got := hitKeys(t, c, Query{Text: "zanzibar"}); len(got) != 0 {
		t.Fatalf("hits before: %q", got)
	}
	line := s.message("new", "e199", map[string]any{"role": "user", "content": "flying to zanzibar"})
	appendFile(t, sp, s.path(), append(line, '\n'))
	sp.Reset()
	if got := hitKeys(t, c, Query{Text: "zanzibar"}); !slices.Equal(got, []string{"sess-1/new"}) {
		t.Fatalf("after append: %q", got)
	}
	read := int64(0)
	for _, call := range sp.Calls() {
		if call.Op == "Reader.Read" {
			read += call.N
		}
	}
	// The new line, the tail compared, and the snippet's read of the line.
	if limit := int64(2*(len(line)+1) + tailLen); read > limit {
		t.Errorf("read %d bytes for a %d-byte append (limit %d)", read, len(line)+1, limit)
	}
	if err := sp.Unlink(ctx, s.path()); err != nil {
		t.Fatal(err)
	}
	if got := hitKeys(t, c, Query{Text: "zanzibar OR filler"}); len(got) != 0 {
		t.Fatalf("after delete: %q", got)
	}
}

// TestRewrittenFile: a file rewritten (not appended to) is read again.
func TestRewrittenFile(t *testing.T) {
	st := newMem()
	s := &fakeSession{id: "sess-1", cwd: "/w/a", title: "t"}
	s.message("e1", "", map[string]any{"role": "user", "content": "original words"})
	writeFile(t, st, s.path(), s.bytes())
	c := openCatalog(t, t.TempDir(), st)
	if got := hitKeys(t, c, Query{Text: "original"}); len(got) != 1 {
		t.Fatalf("before: %q", got)
	}
	s.lines = nil
	s.message("e1", "", map[string]any{"role": "user", "content": "replaced text, longer than before"})
	writeFile(t, st, s.path(), s.bytes())
	if got := hitKeys(t, c, Query{Text: "original"}); len(got) != 0 {
		t.Errorf("old text still found: %q", got)
	}
	if got := hitKeys(t, c, Query{Text: "replaced"}); len(got) != 1 {
		t.Errorf("new text not found: %q", got)
	}
}

// TestDamagedCatalog: deleted, garbage, truncated or of another schema,
// the catalog is rebuilt and answers as before.
func TestDamagedCatalog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	st := newMem()
	for i := range 30 {
		s := randomSession(r, i)
		writeFile(t, st, s.path(), s.bytes())
	}
	dir := t.TempDir()
	queries := []string{"parse", "hello OR world", `"alpha beta"`, "al*"}
	answers := func() [][]string {
		c := openCatalog(t, dir, st)
		defer c.Close()
		var out [][]string
		for _, q := range queries {
			out = append(out, hitKeys(t, c, Query{Text: q}))
		}
		return out
	}
	want := answers()
	path := filepath.Join(dir, FileName)
	for name, damage := range map[string]func() error{
		"deleted": func() error { return os.Remove(path) },
		"garbage": func() error { return os.WriteFile(path, []byte(strings.Repeat("not a database ", 5000)), 0o600) },
		"truncated": func() error {
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.Truncate(path, fi.Size()/2)
		},
		"old schema": func() error {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.Exec("DROP TABLE entries; CREATE TABLE entries(x); PRAGMA user_version = 0")
			return err
		},
	} {
		if err := damage(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := answers(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: answers %q, want %q", name, got, want)
		}
	}
}

func TestHostileQueries(t *testing.T) {
	c := openCatalog(t, t.TempDir(), newMem())
	for _, q := range []string{
		"", "   ", `"unbalanced`, `a "b`, "(a", "a)", "((a)", "AND", "a AND", "AND a", "OR b", "a OR",
		"NOT a", "a NOT", "a AND OR b", "()", "a\x00b", "\xff\xfe", strings.Repeat("x", 1<<20),
		strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100), strings.Repeat("a ", maxTerms+1),
		"---", `""`, "*", "NEAR(a", "a:b:c OR",
	} {
		n := 0
		for _, err := range c.Search(context.Background(), Query{Text: q}) {
			n++
			if !errors.Is(err, ErrBadQuery) || !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("query %.40q: %v, want ErrBadQuery", q, err)
			}
		}
		if n != 1 {
			t.Errorf("query %.40q: %d results, want one error", q, n)
		}
	}
	// FTS5 syntax in a word is text, never syntax.
	for _, q := range []string{"NEAR(a b)", "col:a", "a^b", "a+b", "{a}", "a -b", "'a'", "a*b*", "AND2"} {
		for _, err := range c.Search(context.Background(), Query{Text: q}) {
			if err != nil {
				t.Errorf("query %q: %v", q, err)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", " ", `"`, "(", ")", "*", "AND", "OR", "NOT", ":", "^", "+", "-", "NEAR", "\t"}
	for range 500 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		for _, err := range c.Search(context.Background(), Query{Text: b.String()}) {
			if err != nil && !errors.Is(err, ErrBadQuery) {
				t.Fatalf("query %q: %v", b.String(), err)
			}
		}
	}
}

var _ backend.Storage = (*spy.Storage)(nil)

// TestTotals: the sums ranking reads stay those of the files as sessions
// are added, grown, rewritten, deleted and rebuilt.
func TestTotals(t *testing.T) {
	ctx := context.Background()
	st := newMem()
	sessions := randomStore(t, st, rand.New(rand.NewPCG(3, 4)), 30)
	c := openCatalog(t, t.TempDir(), st)
	check := func(when string) {
		t.Helper()
		if err := c.Refresh(ctx, false); err != nil {
			t.Fatal(err)
		}
		var tn, tt, sn, stok int64
		if err := c.db.QueryRowContext(ctx, "SELECT nent, ntok FROM totals").Scan(&tn, &tt); err != nil {
			t.Fatal(err)
		}
		if err := c.db.QueryRowContext(ctx, "SELECT coalesce(sum(nent), 0), coalesce(sum(ntok), 0) FROM files").Scan(&sn, &stok); err != nil {
			t.Fatal(err)
		}
		var entries int64
		if err := c.db.QueryRowContext(ctx, "SELECT count(*) FROM entries").Scan(&entries); err != nil {
			t.Fatal(err)
		}
		if tn != sn || tt != stok || tn != entries || (len(sessions) > 0 && tt == 0) {
			t.Errorf("%s: totals %d entries %d tokens, files sum to %d, %d (%d entry rows)", when, tn, tt, sn, stok, entries)
		}
	}
	check("built")
	s := sessions[4]
	appendFile(t, st, s.path(), append(s.message("grown", "", map[string]any{"role": "user", "content": "more words to count"}), '\n'))
	check("grown")
	s = sessions[7]
	s.lines = s.lines[:1]
	writeFile(t, st, s.path(), s.bytes())
	check("rewritten")
	if err := st.Unlink(ctx, sessions[9].path()); err != nil {
		t.Fatal(err)
	}
	check("deleted")
	if err := c.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	check("rebuilt")
}

// journalMode reads the journal mode kept in the catalog file at path.
func journalMode(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

// The catalog's connections do not set WAL mode each: the file keeps it,
// set when the catalog is made, and again when another program took the
// file out of it.
func TestWALMode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	st := newMem()
	randomStore(t, st, r, 10)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	c := openCatalog(t, dir, st)
	want := hitKeys(t, c, Query{Text: "parse OR hello"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := journalMode(t, path); got != "wal" {
		t.Fatalf("new catalog: journal mode %q, want wal", got)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := journalMode(t, path); got != "delete" {
		t.Fatalf("journal mode %q after setting delete", got)
	}
	c = openCatalog(t, dir, st)
	got := hitKeys(t, c, Query{Text: "parse OR hello"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if got := journalMode(t, path); got != "wal" {
		t.Errorf("reopened: journal mode %q, want wal", got)
	}
}

// A catalog told its process exits after Close folds back a WAL with
// frames, and leaves one with nothing to fold back as it is; either way
// the next catalog answers the same.
func TestExitAfterClose(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 11))
	st := newMem()
	sessions := randomStore(t, st, r, 10)
	dir := t.TempDir()
	wal := filepath.Join(dir, FileName) + "-wal"
	q := Query{Text: "parse OR hello"}

	// It writes (builds the catalog): Close folds the WAL back.
	c, err := Open(ctx, dir, st, nil, WithExitAfterClose(true))
	if err != nil {
		t.Fatal(err)
	}
	want := hitKeys(t, c, q)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wal); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a writer's close, the WAL: %v, want it gone", err)
	}

	// It only reads: Close leaves the empty WAL to the exit.
	c, err = Open(ctx, dir, st, nil, WithExitAfterClose(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := hitKeys(t, c, q); !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(wal); err != nil || fi.Size() != 0 {
		t.Fatalf("after a reader's close, the WAL: %v, want it left empty", err)
	}
	if _, err := c.handle(); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("a closed catalog's handle: %v, want ErrClosed", err)
	}

	// The next catalog finds the files as left, and a new session.
	s := randomSession(r, 99)
	writeFile(t, st, s.path(), s.bytes())
	c2 := openCatalog(t, dir, st)
	brute := bruteForce(t, append(sessions, s), q.Text, nil)
	if got := hitKeys(t, c2, q); !slices.Equal(got, brute) {
		t.Errorf("next catalog: answers %q, brute force %q", got, brute)
	}
}

// TestPageSize: a new catalog has pages of pageSize, in WAL mode; one
// an older version made with SQLite's default pages is used as it is.
func TestPageSize(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	st := newMem()
	sessions := randomStore(t, st, r, 10)
	c := openCatalog(t, t.TempDir(), st)
	if got := queryInt(t, c, "PRAGMA page_size"); got != pageSize {
		t.Errorf("a new catalog's page size is %d, want %d", got, pageSize)
	}
	agreesWithBruteForce(t, c, sessions, r, 10, "a new catalog")

	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA page_size=4096; PRAGMA journal_mode=WAL"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	old := openCatalog(t, dir, st)
	if got := queryInt(t, old, "PRAGMA page_size"); got != 4096 {
		t.Errorf("an older catalog's page size is %d, want it kept at 4096", got)
	}
	agreesWithBruteForce(t, old, sessions, r, 10, "an older catalog")
	var mode string
	h, _ := old.handle()
	if err := h.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v; want wal", mode, err)
	}
}

// TestASCIIParts: a word of ASCII is cut into the parts the cut of any
// word gives.
func TestASCIIParts(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	pieces := []string{"a", "z", "q", "0", "9", "_", "A", "Z", "Q", "ab", "AB", "Ab", "aB", "x1", "1X"}
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		w := b.String()
		var got, want []string
		splitASCIIParts(w, func(p string) { got = append(got, p) })
		splitRuneParts(w, func(p string) { want = append(want, p) })
		if !slices.Equal(got, want) {
			t.Fatalf("%q: parts %q, want %q", w, got, want)
		}
	}
}
