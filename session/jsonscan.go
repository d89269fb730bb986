package session

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// member is one top-level member of a JSON object: the key as written
// (quotes included) and the raw value. Spans point into the input; the key
// is decoded only when asked (name), so splitting allocates no string.
type member struct {
	keyRaw []byte
	val    []byte
}

// name is the decoded key.
func (m member) name() string { return unquoteKey(m.keyRaw) }

// is reports whether the key is key, without allocating.
func (m member) is(key string) bool {
	r := m.keyRaw
	if len(r) == len(key)+2 && string(r[1:len(r)-1]) == key {
		return true
	}
	return bytes.IndexByte(r, '\\') >= 0 && unquoteKey(r) == key
}

// members is an object split into its members, in file order.
type members []member

// get returns the raw value of key, or nil. With a duplicate key the last one
// wins, as in JSON.parse.
func (ms members) get(key string) []byte {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].is(key) {
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
		ms = append(ms, member{keyRaw: keyRaw, val: b[vs:ve]})
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
		key := m.name()
		if seen[key] {
			continue
		}
		seen[key] = true
		val := ms.get(key)
		removed := false
		for i, e := range edits {
			if e.key == key {
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

// scanJSON reports whether b is one valid JSON value (as json.Valid), and
// whether it is compact (no whitespace outside strings), in one pass that
// skips through strings a run at a time: a message is checked once on its
// way in.
func scanJSON(b []byte) (valid, compact bool) {
	v := validator{b: b, compact: true}
	v.ws()
	if !v.value(0) {
		return false, false
	}
	v.ws()
	return v.i == len(b), v.compact
}

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot
// exhaust the stack.
const maxScanDepth = 10000

type validator struct {
	b       []byte
	i       int
	compact bool

	// With record set, the members of a top-level object are kept, and
	// the role of its "message" member when that is an object: what an
	// entry needs, found in the pass that checks the line.
	record    bool
	top       members
	inMessage bool
	role      []byte
}

// scanLine checks a line as scanJSON does and returns, for an object, its
// members (appended to buf) and its message's raw role (nil when none).
func scanLine(b []byte, buf members) (valid bool, top members, role []byte) {
	v := validator{b: b, compact: true, record: true, top: buf}
	v.ws()
	if !v.value(0) {
		return false, nil, nil
	}
	v.ws()
	if v.i != len(b) {
		return false, nil, nil
	}
	if len(b) == 0 || b[skipWS(b, 0)] != '{' {
		return true, nil, nil // not an object: no members
	}
	if v.top == nil {
		v.top = members{}
	}
	return true, v.top, v.role
}

func (v *validator) ws() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.compact = false
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) || depth > maxScanDepth {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{':
		v.i++
		v.ws()
		if v.i < len(v.b) && v.b[v.i] == '}' {
			v.i++
			return true
		}
		if v.record && depth == 0 && v.top == nil {
			v.top = make(members, 0, 8)
		}
		for {
			ks := v.i
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
				return false
			}
			key := v.b[ks:v.i]
			v.ws()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return false
			}
			v.i++
			v.ws()
			vs := v.i
			msg := v.record && depth == 0 && vs < len(v.b) && v.b[vs] == '{' && (member{keyRaw: key}).is("message")
			if msg {
				v.inMessage, v.role = true, nil
			}
			if !v.value(depth + 1) {
				return false
			}
			if msg {
				v.inMessage = false
			}
			switch {
			case v.record && depth == 0:
				v.top = append(v.top, member{keyRaw: key, val: v.b[vs:v.i]})
			case v.inMessage && depth == 1 && (member{keyRaw: key}).is("role"):
				v.role = v.b[vs:v.i]
			}
			v.ws()
			if v.i >= len(v.b) {
				return false
			}
			if v.b[v.i] == '}' {
				v.i++
				return true
			}
			if v.b[v.i] != ',' {
				return false
			}
			v.i++
			v.ws()
		}
	case c == '[':
		v.i++
		v.ws()
		if v.i < len(v.b) && v.b[v.i] == ']' {
			v.i++
			return true
		}
		for {
			if !v.value(depth + 1) {
				return false
			}
			v.ws()
			if v.i >= len(v.b) {
				return false
			}
			if v.b[v.i] == ']' {
				v.i++
				return true
			}
			if v.b[v.i] != ',' {
				return false
			}
			v.i++
			v.ws()
		}
	case c == 't':
		return v.lit("true")
	case c == 'f':
		return v.lit("false")
	case c == 'n':
		return v.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return v.num()
	}
	return false
}

func (v *validator) lit(s string) bool {
	if len(v.b)-v.i >= len(s) && string(v.b[v.i:v.i+len(s)]) == s {
		v.i += len(s)
		return true
	}
	return false
}

// str checks the string at v.b[v.i] == '"': no control characters, only
// JSON's escapes.
func (v *validator) str() bool {
	i := v.i + 1
	for i < len(v.b) {
		// Eight bytes at a time while none ends the string, escapes or is
		// a control character: most of a message is such runs.
		for i+8 <= len(v.b) && !special8(binary.LittleEndian.Uint64(v.b[i:])) {
			i += 8
		}
		if i >= len(v.b) {
			break
		}
		c := v.b[i]
		switch {
		case c == '"':
			v.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(v.b) {
				return false
			}
			switch v.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(v.b) {
					return false
				}
				for _, h := range v.b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			i++
		}
	}
	return false
}

// special8 reports whether any of the eight bytes in x is '"', '\\' or
// below 0x20 (bytes of multibyte UTF-8 are never flagged).
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - ones*0x20) & ^x & highs
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	zq := (quote - ones) & ^quote & highs
	zs := (slash - ones) & ^slash & highs
	return less|zq|zs != 0
}

func (v *validator) digits() int {
	n := 0
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
		n++
	}
	return n
}

func (v *validator) num() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	if v.b[v.i] == '0' {
		v.i++
	} else if v.digits() == 0 {
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}
