package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is one top-level Member of a JSON object: the key as written
// (quotes included) and the raw value. Spans point into the input; the key
// is decoded only when asked (name), so splitting allocates no string.
type Member struct {
	KeyRaw []byte
	Val    []byte
}

// Name is the decoded key.
func (m Member) Name() string { return UnquoteKey(m.KeyRaw) }

// Is reports whether the key Is key, without allocating.
func (m Member) Is(key string) bool {
	r := m.KeyRaw
	if len(r) == len(key)+2 {
		return string(r[1:len(r)-1]) == key
	}
	// An escape makes a key longer than what it decodes to; one that
	// starts unlike key and not with an escape is another key.
	if len(r) <= len(key)+2 || key == "" || r[1] != key[0] && r[1] != '\\' {
		return false
	}
	return bytes.IndexByte(r, '\\') >= 0 && UnquoteKey(r) == key
}

// Members is an object split into its Members, in file order.
type Members []Member

// Get returns the raw value of key, or nil. With a duplicate key the last one
// wins, as in JSON.parse.
func (ms Members) Get(key string) []byte {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Is(key) {
			return ms[i].Val
		}
	}
	return nil
}

// Str returns the value of key when it is a JSON string.
func (ms Members) Str(key string) (string, bool) {
	return String(ms.Get(key))
}

// SplitObject splits a JSON object into its members. b must be valid JSON
// (checked by the caller); ok is false when b is not an object.
func SplitObject(b []byte) (ms Members, ok bool) {
	return SplitObjectInto(b, nil)
}

// SplitObjectInto is SplitObject appending to buf: with a buffer on the
// caller's stack, splitting allocates nothing.
func SplitObjectInto(b []byte, buf Members) (ms Members, ok bool) {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return Members{}, true
	}
	ms = buf[:0]
	if ms == nil {
		ms = make(Members, 0, 8)
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, false
		}
		ke := SkipString(b, i)
		keyRaw := b[i:ke]
		i = SkipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		vs := SkipWS(b, i+1)
		ve := SkipValue(b, vs)
		if ve <= vs {
			return nil, false
		}
		ms = append(ms, Member{KeyRaw: keyRaw, Val: b[vs:ve]})
		i = SkipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == '}' {
			return ms, true
		}
		if b[i] != ',' {
			return nil, false
		}
		i = SkipWS(b, i+1)
	}
	return nil, false
}

// SplitArray splits a valid JSON array into its elements.
func SplitArray(b []byte) ([][]byte, bool) {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return [][]byte{}, true
	}
	var out [][]byte
	for i < len(b) {
		ve := SkipValue(b, i)
		if ve <= i {
			return nil, false
		}
		out = append(out, b[i:ve])
		i = SkipWS(b, ve)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == ']' {
			return out, true
		}
		if b[i] != ',' {
			return nil, false
		}
		i = SkipWS(b, i+1)
	}
	return nil, false
}

func SkipWS(b []byte, i int) int {
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

// SkipString returns the index just past the string starting at b[i] == '"'.
func SkipString(b []byte, i int) int {
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

// SkipValue returns the index just past the value starting at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = SkipString(b, j) - 1
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

// IsNull reports whether raw is absent or JSON null (JS undefined or null).
func IsNull(raw []byte) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// Truthy is JavaScript truthiness of a JSON value; absent is undefined.
func Truthy(raw []byte) bool {
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

// Text renders a JSON value the way a JavaScript template string does
// (`${v}`), for the scalar values that occur in practice.
func Text(raw []byte) string {
	if len(raw) == 0 {
		return "undefined"
	}
	switch raw[0] {
	case '"':
		s, _ := String(raw)
		return s
	case '{':
		return "[object Object]"
	case '[':
		elems, _ := SplitArray(raw)
		var b bytes.Buffer
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if !IsNull(e) {
				b.WriteString(Text(e))
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

// Marshal encodes v without escaping <, > and &, as JSON.stringify does.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func Quote(s string) []byte {
	// Keys and names are mostly plain ASCII: quoted as they are, without
	// an encoder.
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		return append(append(append(b, '"'), s...), '"')
	}
	b, _ := Marshal(s)
	return b
}

// ObjectBuilder writes a JSON object member by member.
type ObjectBuilder struct {
	buf bytes.Buffer
	n   int
}

func (o *ObjectBuilder) RawKey(keyRaw, val []byte) {
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

func (o *ObjectBuilder) Add(key string, val []byte) { o.RawKey(Quote(key), val) }

func (o *ObjectBuilder) Bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes()
}

// Edit is one change to an object member: a new value, or removal when val
// is nil.
type Edit struct {
	Key string
	Val []byte
}

// EditObject applies edits to the members of an object the way JavaScript
// property assignment does: an existing key keeps its place, a new key goes
// last, a removed key disappears. Duplicate keys collapse to one member at the
// place of the first with the value of the last, as JSON.parse leaves them.
func EditObject(ms Members, edits ...Edit) []byte {
	var o ObjectBuilder
	done := make([]bool, len(edits))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		key := m.Name()
		if seen[key] {
			continue
		}
		seen[key] = true
		val := ms.Get(key)
		removed := false
		for i, e := range edits {
			if e.Key == key {
				done[i] = true
				val, removed = e.Val, e.Val == nil
			}
		}
		if !removed {
			o.RawKey(m.KeyRaw, val)
		}
	}
	for i, e := range edits {
		if !done[i] && e.Val != nil && !seen[e.Key] {
			seen[e.Key] = true
			o.Add(e.Key, e.Val)
		}
	}
	return o.Bytes()
}

// UTF16Len is the length of s in UTF-16 code units, JavaScript's
// String.prototype.length.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// TruncateUTF16 cuts s to at most n UTF-16 code units without splitting a
// surrogate pair.
func TruncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		units += utf16.RuneLen(r)
		if units > n {
			return s[:i]
		}
	}
	return s
}

// ToValidUTF8 replaces each maximal subpart of an ill-formed sequence with
// one U+FFFD, as the WHATWG UTF-8 decoder does (and so the reference reader,
// which decodes a file as text before it parses a line): "\xe2\x82" is one
// U+FFFD, not two. Go's own decoders replace byte by byte. Valid input is
// returned as it is.
func ToValidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		n := validPrefix(b[i:])
		if n > 0 && n == seqLen(c) {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = append(out, "\uFFFD"...)
		i += max(n, 1)
	}
	return out
}

// seqLen is the length of the sequence lead byte c starts, 0 when c
// starts none (a continuation byte, C0, C1, F5 to FF).
func seqLen(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}

// validPrefix is how many bytes of b, which starts with a lead byte, the
// WHATWG decoder takes before it completes the sequence or meets a byte
// that cannot continue it: the maximal subpart. It is 0 when b[0] is no
// lead byte. The second byte's bounds exclude overlongs (E0 80, F0 80),
// surrogates (ED A0) and code points over U+10FFFF (F4 90).
func validPrefix(b []byte) int {
	need := seqLen(b[0])
	if need == 0 {
		return 0
	}
	lo, hi := byte(0x80), byte(0xBF)
	switch b[0] {
	case 0xE0:
		lo = 0xA0
	case 0xED:
		hi = 0x9F
	case 0xF0:
		lo = 0x90
	case 0xF4:
		hi = 0x8F
	}
	i := 1
	for ; i < need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// Scan reports whether b is one valid JSON value (as json.Valid), and
// whether it is compact (no whitespace outside strings), in one pass that
// skips through strings a run at a time: a message is checked once on its
// way in.
func Scan(b []byte) (valid, compact bool) {
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
	top       Members
	inMessage bool
	role      []byte

	// With watch set, seen tells whether a key of watch (quoted), or a
	// key with an escape, appeared at any depth.
	watch []string
	seen  bool
	esc   bool // the last string held an escape
}

// ScanLine checks a line as scanJSON does and returns, for an object, its
// members (appended to buf) and its message's raw role (nil when none).
func ScanLine(b []byte, buf Members) (valid bool, top Members, role []byte) {
	v, valid := scanRecording(b, buf, nil)
	return valid, v.top, v.role
}

// ScanObject checks b as Scan does and, when it is an object, returns its
// members (appended to buf; nil when b is not an object): a message is
// checked and split in one pass.
func ScanObject(b []byte, buf Members) (valid, compact bool, top Members) {
	v, valid := scanRecording(b, buf, nil)
	return valid, v.compact, v.top
}

// ScanObjectKeys is ScanObject that also reports whether any of the keys
// of watch (raw, quoted: `"data"`), at any depth, or a key with an escape
// (which might decode to one) is in b.
func ScanObjectKeys(b []byte, buf Members, watch ...string) (valid, compact bool, top Members, seen bool) {
	v, valid := scanRecording(b, buf, watch)
	return valid, v.compact, v.top, v.seen
}

func watched(key []byte, watch []string) bool {
	for _, w := range watch {
		if len(key) == len(w) && string(key) == w {
			return true
		}
	}
	return false
}

// scanRecording checks b, recording the members of a top-level object
// (v.top nil when b is not one, or is not valid).
func scanRecording(b []byte, buf Members, watch []string) (validator, bool) {
	v := validator{b: b, compact: true, record: true, top: buf, watch: watch}
	v.ws()
	if !v.value(0) {
		return validator{}, false
	}
	v.ws()
	if v.i != len(b) {
		return validator{}, false
	}
	if len(b) == 0 || b[SkipWS(b, 0)] != '{' {
		v.top, v.role = nil, nil // not an object: no members
	} else if v.top == nil {
		v.top = Members{}
	}
	return v, true
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
			v.top = make(Members, 0, 8)
		}
		for {
			ks := v.i
			v.esc = false
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
				return false
			}
			key := v.b[ks:v.i]
			if v.watch != nil && !v.seen {
				v.seen = v.esc || watched(key, v.watch)
			}
			v.ws()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return false
			}
			v.i++
			v.ws()
			vs := v.i
			msg := v.record && depth == 0 && vs < len(v.b) && v.b[vs] == '{' && (Member{KeyRaw: key}).Is("message")
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
				v.top = append(v.top, Member{KeyRaw: key, Val: v.b[vs:v.i]})
			case v.inMessage && depth == 1 && (Member{KeyRaw: key}).Is("role"):
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
		for i+8 <= len(v.b) && !Special8(binary.LittleEndian.Uint64(v.b[i:])) {
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
			v.esc = true
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

// Special8 reports whether any of the eight bytes in x (little endian) is
// '"', '\\' or below 0x20 (bytes of multibyte UTF-8 are never flagged):
// a run of string bytes to copy or skip eight at a time.
func Special8(x uint64) bool {
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
