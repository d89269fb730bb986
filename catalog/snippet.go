package catalog

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
// terms, the matching words marked. sc holds the texts' tokens and the
// places of their words (scratch.tokens): the first text a term matches
// is marked from them, not cut into words again.
func makeSnippet(texts []string, sc *scratch, terms []*expr, width int) string {
	start := 0
	for i, text := range texts {
		from, end := start, sc.ends[i]
		start = end
		marked := sc.markWords(sc.all[from:end], sc.spans[from:end], terms)
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

// markWords returns the places of the words of a text that terms
// match, in order: toks are its tokens, spans[i] the place of toks[i]'s
// word (the tokens of a word are side by side). The result is in sc's
// memory.
func (sc *scratch) markWords(toks []string, spans []span, terms []*expr) []span {
	hit := slices.Grow(sc.hit[:0], len(toks))[:len(toks)]
	clear(hit)
	sc.hit = hit
	any := false
	for _, t := range terms {
		for i := range toks {
			n := matchAt(toks, t, i)
			for j := i; j < i+n; j++ {
				hit[j], any = true, true
			}
		}
	}
	out := sc.marks[:0]
	if any {
		for i, h := range hit {
			if h && (len(out) == 0 || out[len(out)-1] != spans[i]) {
				out = append(out, spans[i])
			}
		}
	}
	sc.marks = out
	return out
}
