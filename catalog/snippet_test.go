package catalog

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSnippetWindow: a snippet cut from the words its window needs is the
// one cut from every word of the text: the same window, the same marks,
// a phrase that runs out of the window included.
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
// a term matches cut and marked; if none does (a phrase across two
// texts), the first text's start.
func wholeSnippet(texts []string, terms []*expr, width int) string {
	for _, text := range texts {
		wt := &wordTokens{}
		wt.snippetWords(text, 0, len(text)*4+8, 0) // a window past the end: every word
		marked := markWords(wt, terms)
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
