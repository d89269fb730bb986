package wire

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trovekit/trove/cas"
)

func sumRef(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

// FastRef accepts exactly what cas.ParseRef accepts in the form
// checkpoint writes, and decodes the same digest.
func TestFastRefAgreesWithParseRef(t *testing.T) {
	good := sumRef([]byte("x"))
	cases := []string{good, "blob:blake3:" + good[12:], good[:len(good)-1], good + "0", "blob:sha256:" + strings.ToUpper(good[12:]),
		"blob:sha512:" + good[12:], "blob-sha256:" + good[12:], "blob:sha256:" + good[12:75] + "g", ""}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		b := []byte(good)
		b[12+rng.IntN(64)] = byte(rng.UintN(256))
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		algo, d, ok := FastRef(s)
		r, err := cas.ParseRef(s)
		if ok && (err != nil || r.Algorithm() != algo || r.Digest() != d) {
			t.Errorf("FastRef(%q) = %v %x, ParseRef: %v %v", s, algo, d, r, err)
		}
	}
}

// What the Append functions write, a Reader reads back, and a Reader
// latches ErrShort on input cut anywhere.
func TestReaderRoundTrip(t *testing.T) {
	ref := sumRef([]byte("r"))
	b := AppendStr(nil, "name")
	b = AppendBool(b, true)
	b, err := AppendRef(b, ref)
	if err != nil {
		t.Fatal(err)
	}
	b = AppendStr(b, "")
	check := func(r *Reader) {
		t.Helper()
		if s, v, got, e := r.Str(), r.Bool(), r.Ref(), r.Str(); r.Err != nil || s != "name" || !v || got != ref || e != "" || len(r.B) != 0 {
			t.Fatalf("read back %q %v %q %q, rest %d, err %v", s, v, got, e, len(r.B), r.Err)
		}
	}
	check(NewReader(b))
	check(&Reader{B: b, Arena: make([]byte, 0, RefLen)})
	for n := range len(b) - 1 {
		r := NewReader(b[:n])
		r.Str()
		r.Bool()
		r.Ref()
		r.Str()
		if r.Err != ErrShort {
			t.Fatalf("input cut at %d: err %v", n, r.Err)
		}
	}
	if _, err := AppendRef(nil, "blob:nope"); err == nil {
		t.Fatal("AppendRef took a malformed ref")
	}
}

// Varint reads what binary.AppendVarint writes, extremes included, and
// latches ErrShort on a truncated or overlong value.
func TestVarintAgreesWithBinary(t *testing.T) {
	vals := []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt64, math.MinInt64}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		vals = append(vals, int64(rng.Uint64()))
	}
	for _, v := range vals {
		b := binary.AppendVarint(nil, v)
		r := NewReader(b)
		if got := r.Varint(); got != v || r.Err != nil || len(r.B) != 0 {
			t.Errorf("Varint(%x) = %d, %v, %d left; want %d", b, got, r.Err, len(r.B), v)
		}
		r = NewReader(b[:len(b)-1])
		if r.Varint(); r.Err != ErrShort {
			t.Errorf("Varint(%x) cut: err %v, want ErrShort", b, r.Err)
		}
	}
	overlong := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	if r := NewReader(overlong); r.Varint() != 0 || r.Err != ErrShort {
		t.Errorf("overlong varint: err %v, want ErrShort", r.Err)
	}
}
