// Package jsonw appends JSON by hand where encoding/json's reflection
// costs more than the data: the session listing index and `trove ls
// --json` write thousands of flat records at a time.
//
// Imports: the standard library and internal/jsonscan (the word test of
// string bytes both use).
package jsonw

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/trovekit/trove/internal/jsonscan"
)

// AppendString appends s as a JSON string, invalid UTF-8 replaced and
// U+2028/U+2029 escaped (safe to embed in JavaScript).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Copy a run of bytes that need no escape at once: most text is.
		j := safeRun(s, i)
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

// safeRun returns the end of the run of bytes from i that need no escape:
// ASCII from 0x20 on, neither '"' nor '\\'. It looks at 8 bytes at a time.
func safeRun(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if jsonscan.Special8(w) || w&0x8080808080808080 != 0 {
			break // a byte to escape, or one of multibyte UTF-8 to check
		}
	}
	for i < len(s) && s[i] >= 0x20 && s[i] < utf8.RuneSelf && s[i] != '"' && s[i] != '\\' {
		i++
	}
	return i
}

// AppendTime appends t in UTC with milliseconds, as JSON strings of times
// are written everywhere in trove: "2006-01-02T15:04:05.000Z".
func AppendTime(b []byte, t time.Time) []byte {
	return append(AppendTimeText(append(b, '"'), t), '"')
}

// AppendTimeText appends t as AppendTime does, without the quotes, as
// t.UTC().Format("2006-01-02T15:04:05.000Z") would.
func AppendTimeText(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	}
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
