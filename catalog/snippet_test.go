package catalog

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSnippetWindow: a snippet marked from the tokens a candidate was
// checked on (scratch.tokens) is the one cut from every word of the
// text, each cut into tokens on its own: the same window, the same
// marks, a phrase that runs out of the window included.
func TestSnippetWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		texts := []string{randomText(r, 1+r.IntN(8)), randomText(r, 1+r.IntN(80))}
		e, err := parseQuery(randomQuery(r))
		if err != nil {
			t.Fatal(err)
		}
		terms := e.positive(nil)
		width := 10 + r.IntN(120)
		sc := &scratch{}
		if !e.match(sc.tokens(texts)) {
			continue
		}
		if got, want := makeSnippet(texts, sc, terms, width), wholeSnippet(texts, terms, width); got != want {
			t.Fatalf("texts %q, terms of %v, width %d:\n got %q\nwant %q", texts, e, width, got, want)
		}
	}
	sc := &scratch{}
	texts := []string{strings.Repeat("filler ", 60) + "greet the world " + strings.Repeat("filler ", 60)}
	e, _ := parseQuery(`"the world"`)
	sc.tokens(texts)
	if got := makeSnippet(texts, sc, e.positive(nil), 40); !strings.Contains(got, "«the» «world»") {
		t.Errorf("snippet %q: the phrase is not marked", got)
	}
}

// wholeSnippet is makeSnippet's reference: every word of the first text
// a term matches cut into tokens and marked; if none does (a phrase
// across two texts), the first text's start.
func wholeSnippet(texts []string, terms []*expr, width int) string {
	for _, text := range texts {
		var toks []string
		var owner []span
		words(text, func(w string, at span) {
			for _, tok := range strings.Fields(string(appendWord(nil, w))) {
				toks, owner = append(toks, tok), append(owner, at)
			}
		})
		hit := map[span]bool{}
		for _, t := range terms {
			for i := range toks {
				for j := i; j < i+matchAt(toks, t, i); j++ {
					hit[owner[j]] = true
				}
			}
		}
		var marked []span
		for i, at := range owner {
			if hit[at] && (i == 0 || owner[i-1] != at) {
				marked = append(marked, at)
			}
		}
		if len(marked) == 0 {
			continue
		}
		from, to := snippetWindow(text, marked[0].start, width)
		return cutSnippet(text, marked, from, to)
	}
	var b strings.Builder
	writeFlat(&b, texts[0][:min(len(texts[0]), width)])
	return strings.ToValidUTF8(b.String(), "")
}

// TestScratchTokens: a candidate's tokens are the texts' tokens as
// indexed (Tokens), each text's ending where ends says, and each token's
// word is the one of the text that gives it.
func TestScratchTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	odd := []string{"___", "_x_", strings.Repeat("a", maxWord+1), strings.Repeat("B_", 50), "İstanbul", "\u212Aelvin", "日本語", "a\u0301b"}
	sc := &scratch{}
	for range 500 {
		texts := make([]string, 1+r.IntN(4))
		for i := range texts {
			texts[i] = randomText(r, r.IntN(30))
			if r.IntN(3) == 0 {
				texts[i] += " " + odd[r.IntN(len(odd))] + " " + randomText(r, 2)
			}
		}
		got := sc.tokens(texts)
		var want []string
		for i, text := range texts {
			want = append(want, Tokens(text)...)
			if sc.ends[i] != len(want) {
				t.Fatalf("texts %q: text %d ends at token %d, want %d", texts, i, sc.ends[i], len(want))
			}
			from := 0
			if i > 0 {
				from = sc.ends[i-1]
			}
			for k := from; k < sc.ends[i]; k++ {
				at := sc.spans[k]
				if w := Tokens(text[at.start:at.end]); !slices.Contains(w, got[k]) {
					t.Fatalf("texts %q: token %q comes from word %q, whose tokens are %q", texts, got[k], text[at.start:at.end], w)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("texts %q:\n got %q\nwant %q", texts, got, want)
		}
	}
}
