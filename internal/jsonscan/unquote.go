package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// UnquoteKey decodes the key raw, quotes included; a key that is not a
// JSON string is returned as written.
func UnquoteKey(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	s, ok := unquote(ToValidUTF8(raw))
	if !ok {
		return string(raw)
	}
	return s
}

// String decodes raw when it is a JSON string.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	return unquote(ToValidUTF8(raw))
}

// unquote decodes the JSON string raw (valid UTF-8) as encoding/json does,
// which it calls only for what it does not expect: most strings with an
// escape decode here without json.Unmarshal's reflection and scanning,
// a third of a phrase search's candidate checks (FuzzUnquote compares).
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return unmarshalString(raw)
	}
	b, n, err := AppendUnquoted(make([]byte, 0, len(raw)-2), raw[1:])
	if err != nil || n != len(raw)-1 {
		return unmarshalString(raw)
	}
	return string(b), true
}

// Errors of AppendUnquoted.
var (
	errControl      = errors.New("control character in string")
	errEscape       = errors.New("bad escape")
	errUnterminated = errors.New("unterminated string")
)

// AppendUnquoted appends what the JSON string b holds to dst, b starting
// after the opening quote, and returns it with the bytes of b read up to
// and including the closing quote. Escapes decode as encoding/json decodes
// them (a \u surrogate not in a pair is U+FFFD); other bytes are copied as
// they are, valid UTF-8 or not, so a name round-trips.
func AppendUnquoted(dst, b []byte) ([]byte, int, error) {
	for i := 0; i < len(b); {
		// A run of bytes copied as they are, eight at a time while none
		// ends the string, escapes or is a control character.
		j := i
		for j+8 <= len(b) && !Special8(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		if j > i {
			dst = append(dst, b[i:j]...)
			i = j
			continue
		}
		c := b[i]
		if c != '\\' {
			switch {
			case c == '"':
				return dst, i + 1, nil
			case c < ' ':
				return dst, i, errControl
			}
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 == len(b) {
			break
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(b[i:])
			if r < 0 {
				return dst, i, errEscape
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair decodes to one rune; anything else is U+FFFD and
				// the next escape is read on its own.
				if d := utf16.DecodeRune(r, hex4(b[i:])); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, i, errEscape
		}
		i += 2
	}
	return dst, len(b), errUnterminated
}

// hex4 is the code unit of a \uXXXX escape at the start of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func unmarshalString(raw []byte) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
