package cas

import (
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScanRefs(t *testing.T) {
	a := "blob:sha256:" + strings.Repeat("ab", 32)
	b := "blob:blake3:" + strings.Repeat("0f", 32)
	pad := strings.Repeat("x", 64<<10-30) // puts a across the first chunk's end
	input := pad + `"` + a + `" ` + b + "\n" +
		"blob:sha256:" + strings.Repeat("ab", 32) + "a" + // too long: not a ref
		" blob:sha256:" + strings.Repeat("AB", 32) + // upper case: not a ref
		" blob:md5:" + strings.Repeat("ab", 16) + " blob:sha256:abc " + a
	for _, oneByte := range []bool{false, true} {
		var r io.Reader = strings.NewReader(input)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		var got []string
		if err := ScanRefs(r, func(ref Ref) bool { got = append(got, ref.String()); return true }); err != nil {
			t.Fatal(err)
		}
		if want := []string{a, b, a}; !slices.Equal(got, want) {
			t.Errorf("oneByte=%v: got %v, want %v", oneByte, got, want)
		}
	}
	// Stopping early.
	n := 0
	if err := ScanRefs(strings.NewReader(a+" "+a+" "+a), func(Ref) bool { n++; return n < 2 }); err != nil || n != 2 {
		t.Errorf("stop: n=%d err=%v", n, err)
	}
	if err := ScanRefs(iotest.ErrReader(iotest.ErrTimeout), func(Ref) bool { return true }); err == nil {
		t.Error("a read error was not returned")
	}
}
