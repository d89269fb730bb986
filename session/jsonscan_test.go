package session

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
		valid, compact := scanJSON(b)
		if valid != json.Valid(b) && len(b) < 10000 {
			t.Fatalf("scanJSON(%q) = %v, json.Valid %v", b, valid, !valid)
		}
		if valid {
			var buf bytes.Buffer
			if err := json.Compact(&buf, b); err != nil {
				t.Fatal(err)
			}
			if compact != bytes.Equal(buf.Bytes(), b) {
				t.Fatalf("scanJSON(%q) compact = %v", b, compact)
			}
		}
	})
}

func FuzzScanLine(f *testing.F) {
	for _, s := range []string{`{"type":"message","message":{"role":"user"}}`, `[1]`, `{}`, `{"a":`, `"x"`, `{"message":{"role":"a","x":{"role":"b"}},"message":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid, top, role := scanLine(b, members{{keyRaw: []byte(`"stale"`)}}[:0])
		if valid != json.Valid(b) && len(b) < 10000 {
			t.Fatalf("scanLine(%q) valid = %v", b, valid)
		}
		if !valid {
			return
		}
		want, isObj := splitObject(b)
		if isObj != (top != nil) || len(want) != len(top) {
			t.Fatalf("scanLine(%q) members %d (object %v), splitObject %d (%v)", b, len(top), top != nil, len(want), isObj)
		}
		for i := range want {
			if !bytes.Equal(want[i].keyRaw, top[i].keyRaw) || !bytes.Equal(want[i].val, top[i].val) {
				t.Fatalf("scanLine(%q) member %d differs", b, i)
			}
		}
		var wantRole []byte
		if m, ok := splitObject(want.get("message")); ok {
			wantRole = m.get("role")
		}
		if m := want.get("message"); len(m) > 0 && m[0] == '{' && !bytes.Equal(role, wantRole) {
			t.Fatalf("scanLine(%q) role %q, want %q", b, role, wantRole)
		}
	})
}
