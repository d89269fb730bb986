package catalog

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokenizer (docs/catalog.md, "Tokenizer"). Text is cut into words:
// maximal runs of letters, digits and underscores. Each word gives its
// whole form (lower case, underscores dropped), then, when it is a
// compound, its parts: split at underscores and at case changes
// (parseRef, parse_ref and PARSE_REF all give parseref, parse, ref;
// HTTPServer gives httpserver, http, server). Punctuation separates words,
// so cas/ref.go is cas, ref, go. Words longer than maxWord bytes (base64,
// minified code) are not indexed.
//
// SQLite sees the tokens joined by spaces, through its unicode61 tokenizer
// without diacritic removal: every token is letters and digits only, so it
// keeps each as it is.

const maxWord = 80

// wordRune reports whether r belongs to a word; '_' joins words but is not
// part of a token. unicode61 takes letters, numbers and private-use
// characters as token characters.
func wordRune(r rune) bool {
	if r < utf8.RuneSelf { // ASCII: no table searches
		return asciiWordByte(byte(r))
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// span is a word's place in the text: bytes [start, end).
type span struct{ start, end int }

// words calls f for each word of text, with its place.
func words(text string, f func(w string, at span)) {
	eachWord(text, func(w string, at span) bool { f(w, at); return true })
}

// eachWord calls f for each word of text, with its place, until f
// returns false.
func eachWord(text string, f func(w string, at span) bool) {
	for i := 0; ; {
		at, _, ok := nextWord(text, i)
		if !ok || !f(text[at.start:at.end], at) {
			return
		}
		i = at.end
	}
}

// ASCII bytes' classes (asciiClass): not in a word, in a word and in a
// plain word (plainWord), in a word but not a plain one.
const (
	classSep   = 0
	classPlain = 1
	classWord  = 2
)

// asciiClass is each ASCII byte's class, a load and not four range
// checks: a query cuts each candidate's texts into words.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			t[c] = classPlain
		case asciiWordByte(byte(c)):
			t[c] = classWord
		}
	}
	return t
}()

// nextWord returns the place of the first word of text at or after byte
// i, and whether it is a plain word (plainWord); ok false when there is
// none. ASCII bytes are classed without decoding a rune: most text is
// ASCII.
func nextWord(text string, i int) (at span, plain, ok bool) {
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] != classSep {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if wordRune(r) {
			break
		}
		i += n
	}
	if i >= len(text) {
		return span{}, false, false
	}
	start, plain := i, true
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			switch asciiClass[c] {
			case classSep:
				return span{start, i}, plain, true
			case classWord:
				plain = false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if !wordRune(r) {
			break
		}
		plain = false
		i += n
	}
	return span{start, i}, plain, true
}

// asciiWordByte reports whether the ASCII byte c belongs to a word
// (wordRune).
func asciiWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// appendWord appends the tokens of one word to b, each after a space: its
// whole form and, for a compound, its parts. A word of underscores only,
// or longer than maxWord, gives none.
func appendWord(b []byte, w string) []byte {
	if len(w) > maxWord {
		return b
	}
	if plainWord(w) {
		return append(append(b, ' '), w...) // its own whole form, one part
	}
	return appendCompound(b, w)
}

// plainWord reports whether w is lower-case ASCII letters and digits,
// most words of most text: its whole form is itself and it has no parts.
func plainWord(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// appendCompound is appendWord for any word of at most maxWord bytes.
func appendCompound(b []byte, w string) []byte {
	mark := len(b)
	b = appendLower(append(b, ' '), w)
	if len(b) == mark+1 {
		return b[:mark]
	}
	wholeEnd, parts := len(b), 0
	splitParts(w, func(p string) {
		b = appendLower(append(b, ' '), p)
		parts++
	})
	if parts < 2 {
		return b[:wholeEnd] // one part is the whole again
	}
	return b
}

// splitParts calls f for each part of a word: runs between underscores,
// cut where lower case or a digit meets upper case (parseRef), and before
// the last capital of a run of capitals followed by lower case
// (HTTPServer: HTTP, Server).
func splitParts(w string, f func(string)) {
	if ascii(w) {
		splitASCIIParts(w, f)
		return
	}
	splitRuneParts(w, f)
}

// splitRuneParts is splitParts for any word.
func splitRuneParts(w string, f func(string)) {
	start := 0
	var prev rune = -1
	for i, r := range w {
		if r == '_' {
			if i > start {
				f(w[start:i])
			}
			start, prev = i+1, -1
			continue
		}
		if i > start && unicode.IsUpper(r) {
			next, _ := utf8.DecodeRuneInString(w[i+utf8.RuneLen(r):])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				unicode.IsUpper(prev) && i+utf8.RuneLen(r) < len(w) && unicode.IsLower(next) {
				f(w[start:i])
				start = i
			}
		}
		prev = r
	}
	if start < len(w) {
		f(w[start:])
	}
}

// splitASCIIParts is splitParts for a word of ASCII bytes, each a rune:
// the same cuts without the Unicode tables.
func splitASCIIParts(w string, f func(string)) {
	upper := func(c byte) bool { return 'A' <= c && c <= 'Z' }
	start := 0
	prev := byte(0) // none: neither lower, digit nor upper
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c == '_' {
			if i > start {
				f(w[start:i])
			}
			start, prev = i+1, 0
			continue
		}
		if i > start && upper(c) {
			if 'a' <= prev && prev <= 'z' || '0' <= prev && prev <= '9' ||
				upper(prev) && i+1 < len(w) && 'a' <= w[i+1] && w[i+1] <= 'z' {
				f(w[start:i])
				start = i
			}
		}
		prev = c
	}
	if start < len(w) {
		f(w[start:])
	}
}

// ascii reports whether s is ASCII bytes only.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendLower appends w in lower case without its underscores.
func appendLower(b []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			for _, r := range w[i:] {
				if r != '_' {
					b = utf8.AppendRune(b, unicode.ToLower(r))
				}
			}
			return b
		}
		switch {
		case c == '_':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return b
}

// Tokens returns the tokens of text in order, as the catalog indexes them.
func Tokens(text string) []string {
	return strings.Fields(string(appendStream(nil, text)))
}

// appendStream appends the tokens of text to b, each after a space: the
// column SQLite indexes.
func appendStream(b []byte, text string) []byte {
	eachWord(text, func(w string, _ span) bool { b = appendWord(b, w); return true })
	return b
}

// nextToken returns where the token of stream (appendStream's: each
// token after a space) whose space is at i starts and ends: its end is
// the next token's space, or len(stream).
func nextToken(stream []byte, i int) (start, end int) {
	start = i + 1
	end = bytes.IndexByte(stream[start:], ' ')
	if end < 0 {
		return start, len(stream)
	}
	return start, start + end
}
