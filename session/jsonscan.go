package session

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// member is one top-level member of a JSON object: its key, the key as
// written (quotes included) and the raw value. Spans point into the input.
type member struct {
	key    string
	keyRaw []byte
	val    []byte
}

// members is an object split into its members, in file order.
type members []member

// get returns the raw value of key, or nil. With a duplicate key the last one
// wins, as in JSON.parse.
func (ms members) get(key string) []byte {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].val
		}
	}
	return nil
}

// str returns the value of key when it is a JSON string.
func (ms members) str(key string) (string, bool) {
	return jsonString(ms.get(key))
}

// splitObject splits a JSON object into its members. b must be valid JSON
// (checked by the caller); ok is false when b is not an object.
func splitObject(b []byte) (ms members, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return members{}, true
	}
	ms = make(members, 0, 8)
	for i < len(b) {
		if b[i] != '"' {
			return nil, false
		}
		ke := skipString(b, i)
		keyRaw := b[i:ke]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vs := skipWS(b, i+1)
		ve := skipValue(b, vs)
		if ve <= vs {
			return nil, false
		}
		ms = append(ms, member{key: unquoteKey(keyRaw), keyRaw: keyRaw, val: b[vs:ve]})
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == '}' {
			return ms, true
		}
		if b[i] != ',' {
			return nil, false
		}
		i = skipWS(b, i+1)
	}
	return nil, false
}

// splitArray splits a valid JSON array into its elements.
func splitArray(b []byte) ([][]byte, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return [][]byte{}, true
	}
	var out [][]byte
	for i < len(b) {
		ve := skipValue(b, i)
		if ve <= i {
			return nil, false
		}
		out = append(out, b[i:ve])
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == ']' {
			return out, true
		}
		if b[i] != ',' {
			return nil, false
		}
		i = skipWS(b, i+1)
	}
	return nil, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		// An odd run of backslashes before the quote escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

func unquoteKey(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return string(raw)
	}
	return s
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// isNull reports whether raw is absent or JSON null (JS undefined or null).
func isNull(raw []byte) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// truthy is JavaScript truthiness of a JSON value; absent is undefined.
func truthy(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case 'n', 'f':
		return false
	case '"':
		return len(raw) > 2
	case '{', '[', 't':
		return true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return err != nil || (f != 0 && f == f)
}

// jsText renders a JSON value the way a JavaScript template string does
// (`${v}`), for the scalar values that occur in practice.
func jsText(raw []byte) string {
	if len(raw) == 0 {
		return "undefined"
	}
	switch raw[0] {
	case '"':
		s, _ := jsonString(raw)
		return s
	case '{':
		return "[object Object]"
	case '[':
		elems, _ := splitArray(raw)
		var b bytes.Buffer
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if !isNull(e) {
				b.WriteString(jsText(e))
			}
		}
		return b.String()
	case 't', 'f', 'n':
		return string(raw)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return string(raw)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// marshal encodes v without escaping <, > and &, as JSON.stringify does.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func quote(s string) []byte {
	b, _ := marshal(s)
	return b
}

// objectBuilder writes a JSON object member by member.
type objectBuilder struct {
	buf bytes.Buffer
	n   int
}

func (o *objectBuilder) rawKey(keyRaw, val []byte) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	o.buf.Write(keyRaw)
	o.buf.WriteByte(':')
	o.buf.Write(val)
}

func (o *objectBuilder) add(key string, val []byte) { o.rawKey(quote(key), val) }

func (o *objectBuilder) bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes()
}

// edit is one change to an object member: a new value, or removal when val
// is nil.
type edit struct {
	key string
	val []byte
}

// editObject applies edits to the members of an object the way JavaScript
// property assignment does: an existing key keeps its place, a new key goes
// last, a removed key disappears. Duplicate keys collapse to one member at the
// place of the first with the value of the last, as JSON.parse leaves them.
func editObject(ms members, edits ...edit) []byte {
	var o objectBuilder
	done := make([]bool, len(edits))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			continue
		}
		seen[m.key] = true
		val := ms.get(m.key)
		removed := false
		for i, e := range edits {
			if e.key == m.key {
				done[i] = true
				val, removed = e.val, e.val == nil
			}
		}
		if !removed {
			o.rawKey(m.keyRaw, val)
		}
	}
	for i, e := range edits {
		if !done[i] && e.val != nil && !seen[e.key] {
			seen[e.key] = true
			o.add(e.key, e.val)
		}
	}
	return o.bytes()
}

// utf16Len is the length of s in UTF-16 code units, JavaScript's
// String.prototype.length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// truncateUTF16 cuts s to at most n UTF-16 code units without splitting a
// surrogate pair.
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		units += utf16.RuneLen(r)
		if units > n {
			return s[:i]
		}
	}
	return s
}

// toValidUTF8 replaces each invalid byte with U+FFFD, as a UTF-8 decoder in
// replacement mode does, so output stays valid JSON text.
func toValidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
