package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
