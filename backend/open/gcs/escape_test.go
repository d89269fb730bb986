package gcs

import "testing"

// Keys round-trip through the escape, which leaves ordinary ones alone.
func TestEscape(t *testing.T) {
	for k, want := range map[string]string{
		"a/b.json": "a/b.json",
		"a\nb":     "a__0xa__b",
		"x/../y":   "x/..__0x2f__y",
		"__0x41__": "__0x5f__" + "_0x41__",
		"__0x":     "__0x",
		"é\r":      "é__0xd__",
	} {
		if got := escapeKey(k); got != want {
			t.Errorf("escapeKey(%q) = %q, want %q", k, got, want)
		}
		if got := unescapeKey(escapeKey(k)); got != k {
			t.Errorf("round trip of %q: %q", k, got)
		}
	}
}
