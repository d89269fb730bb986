package cas

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/trovekit/trove/backend/mem"
)

// A stored object whose header claims 64 MiB and whose zstd payload
// decodes to far more (a bomb: a few hundred KiB on the store) fails as
// corrupt without a buffer of the claimed size, let alone of what it
// decodes to.
func TestZstdBombBounded(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	s, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(make([]byte, 16<<20), nil)
	const claimed = 64 << 20
	obj := appendHeader(nil, CodecZstd, claimed)
	for range 64 { // 1 GiB decoded
		obj = append(obj, frame...)
	}
	obj = appendTrailer(obj, claimed)
	ref := Ref{algo: SHA256, digest: SHA256.sum([]byte("not this"))}
	if err := st.WriteFile(ctx, s.looseName(ref), obj); err != nil {
		t.Fatal(err)
	}
	t.Logf("object on the store: %d bytes", len(obj))
	for name, read := range map[string]func() error{
		"Get": func() error { _, err := s.Get(ctx, ref); return err },
		"Open": func() error {
			rc, err := s.Open(ctx, ref)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = bytes.NewBuffer(nil).ReadFrom(rc)
			return err
		},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := read()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
		if name == "Get" {
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
				t.Errorf("%s allocated %d MiB for a blob it refused", name, alloc>>20)
			}
		}
	}
	for r, err := range s.Verify(ctx) {
		if r == ref && !errors.Is(err, ErrCorrupt) {
			t.Errorf("Verify: %v", err)
		}
	}
}

// A corrupt blob is repaired by putting the right bytes again.
func TestPutRepairsCorruptBlob(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	s, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{bytes.Repeat([]byte("compressible text "), 1000), []byte("short raw blob")} {
		ref, err := s.Put(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := st.ReadFile(ctx, s.looseName(ref))
		if err != nil {
			t.Fatal(err)
		}
		obj[len(obj)/2] ^= 0x20
		if err := st.WriteFile(ctx, s.looseName(ref), obj); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, ref); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Get of a flipped byte: %v", err)
		}
		if _, err := s.Put(ctx, data); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after Put again: %v", err)
		}
		// Streamed puts repair too.
		obj[len(obj)/2] ^= 0x20 // back to healthy bytes... then break again
		obj[len(obj)/3] ^= 0x01
		if err := st.WriteFile(ctx, s.looseName(ref), obj); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutReader(ctx, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after PutReader again: %v", err)
		}
	}
}

// FuzzDecodeObject stores arbitrary bytes as a blob's object: reading it
// never panics, and either returns bytes that hash to the ref or an error
// wrapping ErrCorrupt or ErrTooLarge.
func FuzzDecodeObject(f *testing.F) {
	ctx := context.Background()
	enc, _ := zstd.NewWriter(nil)
	text := bytes.Repeat([]byte("seed text "), 200)
	f.Add(appendTrailer(append(appendHeader(nil, CodecRaw, -1), text...), int64(len(text))))
	f.Add(append(appendHeader(nil, CodecZstd, int64(len(text))), enc.EncodeAll(text, nil)...))
	f.Add(append(appendHeader(nil, CodecZstd, 1<<40), enc.EncodeAll(make([]byte, 1<<16), nil)...))
	f.Add([]byte("not an object"))
	f.Add([]byte{})
	st := mem.New()
	defer st.Close()
	s, err := Open(ctx, st, WithMaxBlobSize(8<<20))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		ref := Ref{algo: SHA256, digest: SHA256.sum(text)}
		if err := st.WriteFile(ctx, s.looseName(ref), obj); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, ref)
		switch {
		case err == nil && !bytes.Equal(got, text):
			t.Fatalf("Get returned %d bytes that are not the blob", len(got))
		case err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge):
			t.Fatalf("Get: %v, want ErrCorrupt or ErrTooLarge", err)
		}
	})
}
