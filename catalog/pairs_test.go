package catalog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPairFilter: every adjacent pair of a stream passes its filter (it
// never passes over an entry that matches); most pairs it lacks do not; a
// stream of fewer than two tokens passes none; one with more pairs than
// a filter holds has none, and passes all.
func TestPairFilter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var hashes []uint64
	rejected, absent := 0, 0
	for range 200 {
		stream := appendStream(nil, randomText(r, 1+r.IntN(60)))
		var f []byte
		f, hashes = pairFilter(stream, hashes)
		toks := strings.Fields(string(stream))
		have := map[[2]string]bool{}
		for i := 1; i < len(toks); i++ {
			have[[2]string{toks[i-1], toks[i]}] = true
			if !hasPair(f, pairHash([]byte(toks[i-1]), []byte(toks[i]))) {
				t.Fatalf("%q: the pair %q %q does not pass its filter", stream, toks[i-1], toks[i])
			}
		}
		for range 20 {
			a, b := toks[r.IntN(len(toks))], vocabulary[r.IntN(len(vocabulary))]
			b = strings.TrimSpace(string(appendWord(nil, b)))
			if b == "" || have[[2]string{a, b}] {
				continue
			}
			absent++
			if !hasPair(f, pairHash([]byte(a), []byte(b))) {
				rejected++
			}
		}
	}
	// Six bits a pair, four set: about 6% of absent pairs pass.
	if rejected*2 < absent {
		t.Errorf("the filters passed over %d of %d absent pairs, want most", rejected, absent)
	}
	f, _ := pairFilter(appendStream(nil, "alone"), nil)
	if len(f) != 1 || hasPair(f, pairHash([]byte("alone"), []byte("alone"))) {
		t.Errorf("the filter of one token %x lets a pair through", f)
	}
	var long strings.Builder
	for i := range maxPairFilter*8/pairBits + 2 {
		fmt.Fprintf(&long, "w%d ", i)
	}
	if f, _ := pairFilter(appendStream(nil, long.String()), nil); f != nil {
		t.Errorf("an entry of too many pairs has a filter of %d bytes", len(f))
	}
	if !hasPair(nil, pairHash([]byte("any"), []byte("pair"))) {
		t.Error("no filter passes over a pair")
	}
}

// TestPhrasePairs: the pairs a query needs are those of the phrases it is
// an AND of; under OR or NOT none are needed, and a prefix phrase's last
// token is not a whole token.
func TestPhrasePairs(t *testing.T) {
	for q, want := range map[string]int{
		`"a b c"`:            1,
		`"a b" "c d" e`:      2,
		`"a b" OR c`:         0,
		`c NOT "a b"`:        0,
		`"a b" NOT c`:        0,
		`cas/re*`:            0,
		`cas/ref/go*`:        1,
		`("a b" OR c) "d e"`: 1,
		`parseRef`:           0,
		`"parseRef x"`:       1,
	} {
		e, err := parseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := phrasePairs(e, nil); len(got) != want {
			t.Errorf("%s: %d phrases needed, want %d", q, len(got), want)
		}
	}
	e, _ := parseQuery(`"parseRef x"`) // parseref parse ref x
	if got := phrasePairs(e, nil); len(got) != 1 || len(got[0]) != 3 {
		t.Errorf(`"parseRef x": pairs %v, want 3`, got)
	}
	e, _ = parseQuery(`cas/ref/go*`) // cas ref go*: the pair cas ref
	if got := phrasePairs(e, nil); len(got) != 1 || len(got[0]) != 1 || got[0][0] != pairHash([]byte("cas"), []byte("ref")) {
		t.Errorf("cas/ref/go*: pairs %v, want cas ref's alone", got)
	}
}

// TestPhraseReadsFewer: a phrase's candidates that lack one of its pairs
// are passed over without reading their files, and the hits are still
// every entry that holds the phrase.
func TestPhraseReadsFewer(t *testing.T) {
	st := spiedOS(t)
	const n = 100
	for i := range n {
		s := &fakeSession{id: fmt.Sprintf("s%03d", i), cwd: "/w", title: "t"}
		text := fmt.Sprintf("zebra w%d quokka and more words %d", i, i) // both words, apart
		if i%25 == 0 {
			text = fmt.Sprintf("a zebra quokka here %d", i)
		}
		s.message("e", "", map[string]any{"role": "user", "content": text})
		writeFile(t, st, s.path(), s.bytes())
	}
	c := openCatalog(t, t.TempDir(), st)
	if err := c.Refresh(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	st.Reset()
	got := hitKeys(t, c, Query{Text: `"zebra quokka"`})
	if want := []string{"s000/e", "s025/e", "s050/e", "s075/e"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("hits %q, want %q", got, want)
	}
	// Four hits and the few of 96 others whose filters let the pair
	// through (about a quarter).
	reads := st.Count("OpenRange")
	if reads >= 4+n/2 {
		t.Errorf("%d candidates read back for 4 hits among %d", reads, n)
	}
}

// TestPairCondAgrees: the statement's test of a filter (pairCond)
// answers as hasPair does, for every pair and filter size, and lets an
// entry without a filter through.
func TestPairCondAgrees(t *testing.T) {
	ctx := context.Background()
	c := openCatalog(t, t.TempDir(), newMem())
	db, err := c.handle()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 300 {
		var f []byte
		if i%50 != 0 {
			f = make([]byte, 1+r.IntN(maxPairFilter))
			for j := range f {
				f[j] = byte(r.Uint32())
			}
		}
		hs := []uint64{r.Uint64(), r.Uint64()}
		cond, args := pairCond([][]uint64{hs}, 2)
		var got bool
		if err := db.QueryRowContext(ctx, "SELECT "+cond+" FROM (SELECT ?1 AS pairs) e", append([]any{f}, args...)...).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := hasPair(f, hs[0]) && hasPair(f, hs[1]); got != want {
			t.Fatalf("a filter of %d bytes, pairs %x: the statement says %v, hasPair %v", len(f), hs, got, want)
		}
	}
}

// TestPairsFuncArgs: the SQL function behind pairCond answers 1 for an
// entry without a filter (NULL or empty) and fails, without a panic, on
// arguments of the wrong kind.
func TestPairsFuncArgs(t *testing.T) {
	ctx := context.Background()
	c := openCatalog(t, t.TempDir(), newMem())
	db, err := c.handle()
	if err != nil {
		t.Fatal(err)
	}
	hash := make([]byte, 8)
	for _, f := range [][]byte{nil, {}} {
		var got int
		if err := db.QueryRowContext(ctx, "SELECT "+pairsFuncName+"(?, ?)", f, hash).Scan(&got); err != nil || got != 1 {
			t.Errorf("filter %v: %d, %v; want 1", f, got, err)
		}
	}
	for _, args := range [][]any{{[]byte{0xff}, "text"}, {[]byte{0xff}, make([]byte, 7)}, {"text", hash}, {int64(3), hash}} {
		var got int
		if err := db.QueryRowContext(ctx, "SELECT "+pairsFuncName+"(?, ?)", args...).Scan(&got); err == nil {
			t.Errorf("%v: %d, want an error", args, got)
		}
	}
}
