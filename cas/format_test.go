package cas

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, c := range []struct {
		codec Codec
		size  int64
	}{{CodecRaw, 0}, {CodecZstd, 1 << 40}, {CodecRaw, -1}} {
		h, err := parseHeader(appendHeader(nil, c.codec, c.size))
		if err != nil || h.codec != c.codec || h.size != c.size || h.trailer != (c.size < 0) {
			t.Errorf("header(%v, %d) round trip = %+v, %v", c.codec, c.size, h, err)
		}
	}
	if n, err := parseTrailer(appendTrailer(nil, 12345)); n != 12345 || err != nil {
		t.Errorf("trailer round trip = %d, %v", n, err)
	}
}

func TestIndexRoundTrip(t *testing.T) {
	r1, _ := Sum(SHA256, []byte("a"))
	r2, _ := Sum(BLAKE3, []byte("b"))
	in := []entry{
		{ref: r1, off: 8, n: 100, codec: CodecZstd, size: 1000, stored: 100, packID: "p"},
		{ref: r2, off: 108, n: 16, codec: CodecRaw, size: 0, stored: 16, packID: "p"},
	}
	size, out, err := decodeIndex("p", encodeIndex(124, in, false))
	if err != nil || size != 124 || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("index round trip = %d, %+v, %v", size, out, err)
	}
	// Every entry must stay inside the pack the index describes.
	b := encodeIndex(123, in, false)
	if _, _, err := decodeIndex("p", b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("index with a record past the pack end = %v", err)
	}
	// Offsets and lengths that overflow when added are refused too.
	huge := []entry{{ref: r1, off: 1 << 62, n: 1 << 62, codec: CodecRaw}}
	if _, _, err := decodeIndex("p", encodeIndex(1<<62, huge, false)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("index whose record end overflows = %v", err)
	}
	// Any flipped bit is caught by the checksum.
	good := encodeIndex(124, in, false)
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 1
		if _, _, err := decodeIndex("p", bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("index with byte %d flipped = %v", i, err)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	f.Add("blob:sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	f.Add("blob:blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262")
	f.Add("blob:sha256:../x")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("ParseRef(%q) error %v does not wrap ErrInvalidRef", s, err)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("ParseRef(%q) accepted a non-canonical form: %s", s, r)
		}
	})
}

func FuzzDecodeIndex(f *testing.F) {
	r1, _ := Sum(SHA256, []byte("a"))
	good := encodeIndex(200, []entry{{ref: r1, off: 8, n: 100, codec: CodecZstd, size: 1000}}, false)
	f.Add(good[:len(good)-sha256.Size])
	f.Add([]byte("trvidx\x00\x01"))
	v2 := encodeIndex(200, []entry{
		{ref: r1, off: 8, n: 100, codec: codecSolid, size: 1000},
		{ref: r1, off: 8, n: 100, codec: codecSolid, size: 10, inner: 1000},
	}, false)
	f.Add(v2[:len(v2)-sha256.Size])
	v3 := encodeIndex(200, []entry{{ref: r1, off: 8, n: 100, codec: codecSolid, size: 1000}}, true)
	f.Add(v3[:len(v3)-sha256.Size])
	f.Fuzz(func(t *testing.T, body []byte) {
		// Checksum the fuzzed body, so the fuzzer explores the parser
		// rather than the checksum.
		sum := sha256.Sum256(body)
		size, entries, err := decodeIndex("p", append(bytes.Clone(body), sum[:]...))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeIndex error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, e := range entries {
			if e.off < int64(len(packMagic)) || e.n < headerSize || e.off+e.n > size {
				t.Fatalf("accepted entry outside the pack: %+v (pack %d)", e, size)
			}
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	f.Add(appendHeader(nil, CodecZstd, 100))
	f.Add(appendHeader(nil, CodecRaw, -1))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err == nil && (h.size < -1 || (h.size == -1) != h.trailer) {
			t.Fatalf("parseHeader accepted %+v", h)
		}
	})
}
