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
