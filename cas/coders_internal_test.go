package cas

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/trovekit/trove/backend/mem"
)

// A store opened per operation takes the coders earlier stores put back:
// an encoder is over a megabyte of tables, which each fresh store used to
// allocate. A store whose blobs may be larger has decoders of its own.
func TestStoresShareCoders(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("a line of text that compresses\n"), 200)
	put := func() {
		s, err := Open(ctx, mem.New())
		if err != nil {
			t.Fatal(err)
		}
		ref, err := s.Put(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get: %v", err)
		}
	}
	put() // the first store makes the coders
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 5
	for range n {
		put()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 256<<10 {
		t.Errorf("a fresh store's put and get allocated %d KiB: its coders were not reused", per>>10)
	}

	big, err := Open(ctx, mem.New(), WithMaxBlobSize(DefaultMaxBlobSize*2))
	if err != nil {
		t.Fatal(err)
	}
	if big.coders == shared {
		t.Error("a store of larger blobs shares decoders bounded for the default size")
	}
}
