// Package jsonw appends JSON by hand where encoding/json's reflection
// costs more than the data: the session listing index and `trove ls
// --json` write thousands of flat records at a time. It imports nothing of
// trove.
package jsonw

import (
	"fmt"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, invalid UTF-8 replaced and
// U+2028/U+2029 escaped (safe to embed in JavaScript).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Copy a run of bytes that need no escape at once: most text is.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = fmt.Appendf(b, `\u%04x`, c)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = fmt.Appendf(b, `\u%04x`, r)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
