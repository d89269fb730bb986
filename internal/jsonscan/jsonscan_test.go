package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e-3,-0,true,false,null,"x\u00e9\n"]}`, ` [ ] `, `{"a":1,}`, `01`, `"\x"`, "\"a\x01\"", `1.`, `-`, `{"a" 1}`, `[1 2]`, `"\ud800"`, strings.Repeat("[", 20000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid, compact := Scan(b)
		if valid != json.Valid(b) && len(b) < 10000 {
			t.Fatalf("Scan(%q) = %v, json.Valid %v", b, valid, !valid)
		}
		if valid {
			var buf bytes.Buffer
			if err := json.Compact(&buf, b); err != nil {
				t.Fatal(err)
			}
			if compact != bytes.Equal(buf.Bytes(), b) {
				t.Fatalf("Scan(%q) compact = %v", b, compact)
			}
		}
	})
}

func FuzzScanLine(f *testing.F) {
	for _, s := range []string{`{"type":"message","message":{"role":"user"}}`, `[1]`, `{}`, `{"a":`, `"x"`, `{"message":{"role":"a","x":{"role":"b"}},"message":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid, top, role := ScanLine(b, Members{{KeyRaw: []byte(`"stale"`)}}[:0])
		if valid != json.Valid(b) && len(b) < 10000 {
			t.Fatalf("ScanLine(%q) valid = %v", b, valid)
		}
		if !valid {
			return
		}
		want, isObj := SplitObject(b)
		if isObj != (top != nil) || len(want) != len(top) {
			t.Fatalf("ScanLine(%q) Members %d (object %v), splitObject %d (%v)", b, len(top), top != nil, len(want), isObj)
		}
		for i := range want {
			if !bytes.Equal(want[i].KeyRaw, top[i].KeyRaw) || !bytes.Equal(want[i].Val, top[i].Val) {
				t.Fatalf("ScanLine(%q) member %d differs", b, i)
			}
		}
		var wantRole []byte
		if m, ok := SplitObject(want.Get("message")); ok {
			wantRole = m.Get("role")
		}
		if m := want.Get("message"); len(m) > 0 && m[0] == '{' && !bytes.Equal(role, wantRole) {
			t.Fatalf("ScanLine(%q) role %q, want %q", b, role, wantRole)
		}
	})
}

func TestScanObjectKeysSeesWatchedKeys(t *testing.T) {
	watch := []string{`"data"`, `"partialJson"`}
	for _, c := range []struct {
		in   string
		seen bool
	}{
		{`{"role":"user","content":"data partialJson"}`, false},
		{`{"role":"user","content":[{"type":"image","data":"AAAA"}]}`, true},
		{`{"a":{"b":[{"partialJson":"{"}]}}`, true},
		{`{"a":{"b":[{"partial\u004Ason":"{"}]}}`, true}, // an escaped key may be one
		{`{"a":"\u0041","datum":1}`, false},              // an escape in a value is not
	} {
		valid, _, top, seen := ScanObjectKeys([]byte(c.in), nil, watch...)
		if !valid || top == nil || seen != c.seen {
			t.Errorf("%s: valid %v, seen %v, want %v", c.in, valid, seen, c.seen)
		}
	}
}

// Quote's plain path says what the encoder says.
func TestQuoteAsMarshal(t *testing.T) {
	for _, s := range []string{"", "api", "unknown", "a b~", "<&>", "q\"", `b\s`, "\x1f", "\x7f", "é", "\u2028", "\xff", strings.Repeat("x", 300)} {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Quote(s); string(got) != string(want) {
			t.Errorf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestToValidUTF8MaximalSubparts(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"valid", "h\xc3\xa9llo \xf0\x9f\x98\x80", "h\xc3\xa9llo \xf0\x9f\x98\x80"},
		{"truncated 2-byte at end", "a\xc3", "a\uFFFD"},
		{"truncated 3-byte at end", "a\xe2\x82", "a\uFFFD"},
		{"truncated 3-byte before ASCII", "\xe2\x82x", "\uFFFDx"},
		{"truncated 4-byte at end", "\xf0\x9f\x98", "\uFFFD"},
		{"truncated 4-byte before a lead byte", "\xf0\x9f\xc3\xa9", "\uFFFD\xc3\xa9"},
		{"surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"last code point before the surrogates", "\xed\x9f\xbf", "\xed\x9f\xbf"},
		{"overlong 2-byte", "\xc0\x80", "\uFFFD\uFFFD"},
		{"overlong 3-byte", "\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},
		{"overlong 4-byte", "\xf0\x80\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"over U+10FFFF", "\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"F5", "\xf5\x80\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"FF FE", "\xff\xfe", "\uFFFD\uFFFD"},
		{"lone continuation bytes", "\x80\xbf", "\uFFFD\uFFFD"},
		// Unicode 15, table 3-8: U+FFFD for maximal subparts.
		{"table 3-8", "a\xf1\x80\x80\xe1\x80\xc2b\x80c\x80\xbfd", "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd"},
	} {
		if got := string(ToValidUTF8([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: ToValidUTF8(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestStringDecodesMaximalSubparts(t *testing.T) {
	for raw, want := range map[string]string{
		"\"a\xe2\x82\"":        "a\uFFFD",
		"\"a\xe2\x82\\n\"":     "a\uFFFD\n",
		"\"\xed\xa0\x80\"":     "\uFFFD\uFFFD\uFFFD",
		"\"\xf0\x9f\x98\x80\"": "\U0001F600",
	} {
		if got, ok := String([]byte(raw)); !ok || got != want {
			t.Errorf("String(%q) = %q, %v, want %q", raw, got, ok, want)
		}
		if got := UnquoteKey([]byte(raw)); got != want {
			t.Errorf("UnquoteKey(%q) = %q, want %q", raw, got, want)
		}
	}
}

// FuzzToValidUTF8 checks the decoder against the definition it follows:
// at each byte, the longest run that starts some well-formed sequence is
// either a whole character, kept, or a maximal subpart, one U+FFFD.
func FuzzToValidUTF8(f *testing.F) {
	for _, s := range []string{"", "abc", "\xe2\x82", "\xed\xa0\x80", "\xc0\x80", "\xf5\x80", "\xf0\x9f\x98\x80\xf0\x9f", "a\xf1\x80\x80\xe1\x80\xc2b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := ToValidUTF8(b)
		if !utf8.Valid(got) {
			t.Fatalf("ToValidUTF8(%q) = %q is not valid UTF-8", b, got)
		}
		if want := maximalSubparts(b); !bytes.Equal(got, want) {
			t.Fatalf("ToValidUTF8(%q) = %q, want %q", b, got, want)
		}
	})
}

func maximalSubparts(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		k := 0
		for n := min(4, len(b)-i); n > 0; n-- {
			if startsWellFormed(b[i : i+n]) {
				k = n
				break
			}
		}
		switch {
		case k > 0 && utf8.Valid(b[i:i+k]):
			out = append(out, b[i:i+k]...)
		default:
			out = append(out, "\uFFFD"...)
		}
		i += max(k, 1)
	}
	return out
}

// startsWellFormed reports whether some continuation bytes make p one
// well-formed character (trying the edges of every second-byte range).
func startsWellFormed(p []byte) bool {
	if utf8.Valid(p) && utf8.RuneCount(p) == 1 {
		return true
	}
	if len(p) >= 4 || len(p) > 0 && p[0] < utf8.RuneSelf {
		return false
	}
	for _, c := range []byte{0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf} {
		if startsWellFormed(append(p[:len(p):len(p)], c)) {
			return true
		}
	}
	return false
}

// FuzzUnquote: String decodes every JSON string as encoding/json does
// (after ToValidUTF8), and refuses what it refuses.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a\"b"`, `"\u00e9\n\t\\\/"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d\ude00"`,
		`"\ud83d\u0041"`, `"\ud83d\uZZZZ"`, `"\x"`, `"a\"`, `"a"b"`, `"tab	in"`, `"\u00"`, `"caf\u00E9"`, `"\"" `, "\"\xff\\n\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 || raw[0] != '"' {
			return
		}
		got, ok := String(raw)
		var want string
		wantOK := json.Unmarshal(ToValidUTF8(raw), &want) == nil
		if !bytes.ContainsRune(raw, '\\') && utf8.Valid(raw) && len(raw) >= 2 {
			return // the copy path: raw is taken for a scanned token
		}
		if ok != wantOK || got != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
		}
	})
}

// BenchmarkString: a message text with escapes, as session lines hold
// them, by String and by encoding/json.
func BenchmarkString(b *testing.B) {
	raw, _ := json.Marshal(strings.Repeat("func parseRef(s string) (Ref, error) {\n\tif s == \"\" {\n\t\treturn Ref{}, errEmpty\n\t}\n", 20))
	b.Run("String", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			String(raw)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			unmarshalString(raw)
		}
	})
}
