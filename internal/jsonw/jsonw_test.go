package jsonw

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
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

func TestAppendStringEveryByte(t *testing.T) {
	// Each byte value at each position of a 8-byte word and past it.
	for c := range 256 {
		for pos := range 17 {
			b := []byte("abcdefghijklmnopqrstuvwx")
			b[pos] = byte(c)
			s := string(b)
			out := AppendString(nil, s)
			var got string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%q -> %s: %v", s, out, err)
			}
			if utf8.ValidString(s) && got != s {
				t.Fatalf("%q -> %s -> %q", s, out, got)
			}
		}
	}
}

func TestAppendTime(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.FixedZone("x", 3600)),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), {}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		want := `"` + tm.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`
		if got := string(AppendTime(nil, tm)); got != want {
			t.Errorf("AppendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}
