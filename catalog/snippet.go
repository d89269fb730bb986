package catalog

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordTokens are a text's tokens as indexed, its words' places and the
// word each token comes from: what a snippet marks.
type wordTokens struct {
	spans []span   // each word's place in the text
	from  []int    // each token's word, an index into spans
	toks  []string // the text's tokens
	buf   []byte   // the tokens, each after a space
}

// snippetWords cuts text into tokens, each with its word, in wt's
// memory, as far as a snippet of width bytes needs: up to the end of the
// window around the word of token first (the text's first match), and
// more words past it (the rest of a phrase that starts in the window).
// Marks past the window are not written, and the rest of a long text is
// not cut into words.
func (wt *wordTokens) snippetWords(text string, first, width, more int) {
	wt.spans, wt.from, wt.toks, wt.buf = wt.spans[:0], wt.from[:0], wt.toks[:0], wt.buf[:0]
	end := -1 // the window's end, once the first match's word is seen
	eachWord(text, func(w string, at span) bool {
		if end >= 0 && at.start >= end {
			if more == 0 {
				return false
			}
			more--
		}
		start := len(wt.buf)
		if wt.buf = appendWord(wt.buf, w); len(wt.buf) == start {
			return true
		}
		for rest := wt.buf[start:]; len(rest) > 0; {
			rest = rest[1:] // the space before each token
			n := bytes.IndexByte(rest, ' ')
			if n < 0 {
				n = len(rest)
			}
			if n > 0 {
				wt.from = append(wt.from, len(wt.spans))
			}
			rest = rest[n:]
		}
		wt.spans = append(wt.spans, at)
		if end < 0 && len(wt.from) > first {
			_, end = snippetWindow(text, at.start, width)
		}
		return true
	})
	for t := range strings.FieldsSeq(string(wt.buf)) {
		wt.toks = append(wt.toks, t)
	}
}

// snippetWindow is the window of about width bytes of text around a
// match at byte at, on rune boundaries.
func snippetWindow(text string, at, width int) (from, to int) {
	from = max(0, at-width/4)
	to = min(len(text), from+width)
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	return from, to
}

// makeSnippet cuts about width bytes of texts around the first match of
// terms, the matching words marked. sc holds the texts' tokens: only the
// first text a term matches is cut into words again, as far as the
// snippet needs.
func makeSnippet(texts []string, sc *scratch, terms []*expr, width int) string {
	start := 0
	more := 0
	for _, t := range terms {
		more = max(more, len(t.toks))
	}
	for i, text := range texts {
		toks := sc.all[start:sc.ends[i]]
		start = sc.ends[i]
		first := firstMatch(toks, terms)
		if first < 0 {
			continue
		}
		wt := &sc.words
		wt.snippetWords(text, first, width, more)
		marked := markWords(wt, terms)
		if len(marked) == 0 {
			continue
		}
		from, to := snippetWindow(text, marked[0].start, width)
		return cutSnippet(text, marked, from, to)
	}
	for _, text := range texts {
		if text != "" {
			var b strings.Builder
			writeFlat(&b, text[:min(len(text), width)])
			return strings.ToValidUTF8(b.String(), "")
		}
	}
	return ""
}

// cutSnippet is text from byte from to byte to, the marked words in it
// between marks, white space flattened.
func cutSnippet(text string, marked []span, from, to int) string {
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	at := from
	for _, m := range marked {
		if m.start < from || m.end > to {
			continue
		}
		writeFlat(&b, text[at:m.start])
		b.WriteString(MarkOpen)
		b.WriteString(text[m.start:m.end])
		b.WriteString(MarkClose)
		at = m.end
	}
	writeFlat(&b, text[at:to])
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// writeFlat writes s with each run of white space as one space.
func writeFlat(b *strings.Builder, s string) {
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
}

// matchAt is how many tokens from toks[i] the term t (a word, prefix or
// phrase) matches: 0 if none.
func matchAt(toks []string, t *expr, i int) int {
	switch t.op {
	case opWord:
		if toks[i] == t.toks[0] {
			return 1
		}
	case opPrefix:
		if strings.HasPrefix(toks[i], t.toks[0]) {
			return 1
		}
	case opPhrase:
		if phraseHere(toks, t, i) {
			return len(t.toks)
		}
	}
	return 0
}

// firstMatch is the index of the first token of toks a term matches
// from, or -1.
func firstMatch(toks []string, terms []*expr) int {
	for i := range toks {
		if slices.ContainsFunc(terms, func(t *expr) bool { return matchAt(toks, t, i) > 0 }) {
			return i
		}
	}
	return -1
}

// markWords returns the places of the words of a text that terms match,
// in order.
func markWords(wt *wordTokens, terms []*expr) []span {
	spans, toks, owner := wt.spans, wt.toks, wt.from
	hit := make([]bool, len(spans))
	any := false
	for _, t := range terms {
		for i := range toks {
			n := matchAt(toks, t, i)
			for j := i; j < i+n; j++ {
				hit[owner[j]], any = true, true
			}
		}
	}
	if !any {
		return nil
	}
	var out []span
	for i, h := range hit {
		if h {
			out = append(out, spans[i])
		}
	}
	return out
}
