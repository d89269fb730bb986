package jsonw

import (
	"encoding/json"
	"testing"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "nl\n\r\t\x01\x1f", "é ü 世界 😀", "\u2028\u2029", "bad\xffutf8", "<script>&"} {
		b := AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want := s
		if s == "bad\xffutf8" {
			want = "bad\ufffdutf8"
		}
		if got != want {
			t.Fatalf("%q -> %s -> %q", s, b, got)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		if !json.Valid(b) {
			t.Fatalf("%q -> invalid %s", s, b)
		}
	})
}
