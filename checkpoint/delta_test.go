package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trovekit/trove/checkpoint/treeobj"
)

// sourceText returns n bytes or a little more of lines like a source file's.
func sourceText(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "line %d of some source %d\n", rng.IntN(1000), rng.IntN(1e6))
	}
	return b.Bytes()
}

func TestDeltaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(n int) []byte { return sourceText(rng, n) }
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	base := text(20000)
	edited := append(append(append([]byte(nil), base[:5000]...), "inserted\n"...), base[5100:]...)
	edited = append(edited, "appended\n"...)
	cases := map[string][2][]byte{
		"empty both":   {nil, nil},
		"empty base":   {nil, text(300)},
		"empty target": {text(300), nil},
		"same":         {base, base},
		"edited":       {base, edited},
		"short":        {[]byte("abc"), []byte("abd")},
		"unrelated":    {random(5000), random(5000)},
		"shifted":      {base, append([]byte("x"), base...)},
		"repeats":      {bytes.Repeat([]byte("ab"), 4000), bytes.Repeat([]byte("ab"), 4100)},
	}
	for name, c := range cases {
		d := encodeDelta(c[0], c[1])
		got, err := applyDelta(c[0], d, int64(len(c[1])))
		if err != nil || !bytes.Equal(got, c[1]) {
			t.Errorf("%s: round trip failed: %v", name, err)
		}
	}
	// An edit costs about what it changed.
	if d := encodeDelta(base, edited); len(d) > 200 {
		t.Errorf("delta of a small edit is %d bytes", len(d))
	}
}

// A table reused from the pool, dirty and of any size, encodes the same
// delta as a fresh one.
func TestDeltaReusedTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	text := func(n int) []byte { return sourceText(rng, n) }
	var sp slotPool
	// Large, small, large again: a smaller base takes part of a larger
	// table still holding the last base's blocks.
	for _, n := range []int{60000, 3000, 60000, 300, 20000} {
		base := text(n)
		target := append(append(text(40), base[:len(base)/2]...), text(200)...)
		target = append(target, base[len(base)/2+50:]...)
		fresh, reused := encodeDelta(base, target), sp.encodeDelta(base, target)
		if !bytes.Equal(fresh, reused) {
			t.Fatalf("base of %d bytes: a reused table gives another delta (%d bytes, fresh %d)", n, len(reused), len(fresh))
		}
		if got, err := applyDelta(base, reused, int64(len(target))); err != nil || !bytes.Equal(got, target) {
			t.Fatalf("base of %d bytes: round trip: %v", n, err)
		}
	}
}

func TestDeltaDamage(t *testing.T) {
	base := bytes.Repeat([]byte("0123456789abcdef"), 100)
	target := append(append([]byte(nil), base[:700]...), "changed"...)
	good := encodeDelta(base, target)
	for name, d := range map[string][]byte{
		"no magic":      []byte("nope"),
		"too long":      append([]byte(deltaMagic), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"copy past end": append(append([]byte(deltaMagic), 10), opCopy, 0xff, 0x0f, 10),
		"short insert":  append(append([]byte(deltaMagic), 10), opInsert, 10, 'a'),
		"bad op":        append(append([]byte(deltaMagic), 1), 7),
		"short result":  good[:len(good)-1],
	} {
		if _, err := applyDelta(base, d, 1<<20); !errors.Is(err, errBadDelta) {
			t.Errorf("%s: %v, want errBadDelta", name, err)
		}
	}
	// Random damage is an error or some bytes, never a panic or more than
	// the limit.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		d := bytes.Clone(good)
		for range 1 + rng.IntN(3) {
			d[rng.IntN(len(d))] = byte(rng.UintN(256))
		}
		if out, err := applyDelta(base, d, 1000); err == nil && len(out) > 1000 {
			t.Fatalf("%d bytes past the limit", len(out))
		}
	}
}

func FuzzDelta(f *testing.F) {
	f.Add([]byte("hello world, hello world"), []byte("hello there world, hello world!"))
	f.Fuzz(func(t *testing.T, base, target []byte) {
		got, err := applyDelta(base, encodeDelta(base, target), int64(len(target)))
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("round trip: %v", err)
		}
		_, _ = applyDelta(target, base, 1<<16)
	})
}

func TestTreeObjectDamage(t *testing.T) {
	if _, err := treeobj.Decode([]byte("trvt1\x01\x01a\x00")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an entry holding nothing: %v", err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	files := []Entry{
		{Path: "a", Exists: true, Digest: sumRef([]byte("a")), Size: 1, Mode: 0o644},
		{Path: "d", Exists: true, Type: TypeDir, Mode: 0o755},
		{Path: "l", Exists: true, Type: TypeSymlink, Target: "a"},
		{Path: "x", Exists: true, Digest: sumRef([]byte("x")), Base: sumRef([]byte("b")), Delta: sumRef([]byte("d")), Size: 1, Mode: 0o600},
	}
	var obj []byte
	c := &captureBatch{got: func(b []byte) { obj = b }}
	if _, _, err := putTrees(t.Context(), c, files, nil); err != nil {
		t.Fatal(err)
	}
	kids, err := treeobj.Decode(obj)
	if err != nil || len(kids) != 4 || kids[3].Entry.Delta != files[3].Delta {
		t.Fatalf("decoded %+v, %v", kids, err)
	}
	for range 5000 {
		d := bytes.Clone(obj)
		for range 1 + rng.IntN(3) {
			d[rng.IntN(len(d))] = byte(rng.UintN(256))
		}
		_, _ = treeobj.Decode(d[:rng.IntN(len(d)+1)])
	}
}

// captureBatch hands what is put to put and names it by its sha256.
type captureBatch struct {
	blobBatch
	got func([]byte)
}

func (c *captureBatch) put(_ context.Context, data []byte) (string, error) {
	c.got(data)
	return sumRef(data), nil
}

// BenchmarkEncodeDelta times the delta of a 25 KB source file after the
// edit cpbench makes (a line replaced, two inserted, one appended).
func BenchmarkEncodeDelta(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	base := sourceText(rng, 25000)
	mid := len(base) / 2
	target := slices.Concat(base[:mid/2], []byte("inserted one\ninserted two\n"), base[mid/2:mid], []byte("// changed\n"), base[mid+40:], []byte("// appended\n"))
	var sp slotPool
	b.SetBytes(int64(len(target)))
	for b.Loop() {
		sp.encodeDelta(base, target)
	}
}

// The hash of each block must be what rolling the hash byte by byte
// gives, or matches after the first would never be found.
func TestHashBlockRolls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := sourceText(rng, 4096)
	h := hashBlock(b)
	for j := 0; j+deltaBlock < len(b); j++ {
		h = (h-uint64(b[j])*rollOut)*rollMul + uint64(b[j+deltaBlock])
		if want := hashBlock(b[j+1:]); h != want {
			t.Fatalf("at %d: rolled %x, hashed %x", j+1, h, want)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, c := range []struct {
		a, b string
		n    int
	}{
		{"", "", 0}, {"a", "", 0}, {"abc", "abd", 2}, {"abcdefghij", "abcdefghij", 10},
		{"abcdefghijk", "abcdefghiXk", 9}, {"abcdefgh", "abcdefghij", 8}, {"0123456789abcdefXY", "0123456789abcdefXZ", 17},
	} {
		if got := commonPrefix([]byte(c.a), []byte(c.b)); got != c.n {
			t.Errorf("commonPrefix(%q, %q) = %d, want %d", c.a, c.b, got, c.n)
		}
	}
}
