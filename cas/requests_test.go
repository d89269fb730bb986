package cas_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/cas"
)

// What a blob costs on a bucket, counted on S3 and GCS servers: a request
// is tens of milliseconds in a real region, so these bounds are the store's
// speed.
func TestBucketRequests(t *testing.T) {
	t.Run("s3", func(t *testing.T) {
		srv, c := cloudtest.StartCountingS3(t)
		bucketRequests(t, c, srv.New(t))
	})
	t.Run("gcs", func(t *testing.T) {
		c := cloudtest.NewCounter()
		bucketRequests(t, c, cloudtest.StartGCS(t, c.Wrap).New(t))
	})
}

func bucketRequests(t *testing.T, c *cloudtest.Counter, st backend.Storage) {
	ctx := t.Context()
	open := func() *cas.Store {
		s, err := cas.Open(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rng := rand.New(rand.NewPCG(1, 2))
	blob := func() []byte {
		b := make([]byte, 200<<10)
		for i := range b {
			b[i] = byte(rng.IntN(16)) // compressible, not trivially
		}
		return b
	}
	s := open()
	first := blob()
	var ref cas.Ref
	row := func(what string, max int, fn func()) {
		t.Helper()
		t.Logf("%s: %v requests (at most %d)", what, c.AtMost(t, what, max, fn), max)
	}
	put := func(s *cas.Store, data []byte) func() {
		return func() {
			got, err := s.Put(ctx, data)
			if err != nil {
				t.Fatal(err)
			}
			ref = got
		}
	}
	get := func(s *cas.Store) func() {
		return func() {
			got, err := s.Get(ctx, ref)
			if err != nil || !bytes.Equal(got, first) {
				t.Fatalf("Get: %d bytes, %v", len(got), err)
			}
		}
	}
	row("Put of a new 200 KiB blob into a fresh store", 2, put(s, first))
	row("Put of a new 200 KiB blob", 2, put(s, blob()))
	row("Put of a stored blob", 1, put(s, first))
	row("Get", 1, get(s))
	// A fresh store on the same bucket: another process.
	row("Get from a fresh store", 1, get(open()))
	row("Put of a stored blob into a fresh store", 3, put(open(), first))

	// A compacting GC reads each pack once, however many records it holds.
	var refs []cas.Ref
	for range 5 {
		var blobs [][]byte
		for range 40 {
			b := make([]byte, 1000)
			for i := range b {
				b[i] = byte(rng.UintN(256)) // raw: a record each
			}
			blobs = append(blobs, b)
		}
		got, err := s.PutMany(ctx, blobs)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, got...)
	}
	got := c.During(func() {
		live := func(yield func(cas.Ref, error) bool) {
			for _, r := range append(refs, ref) {
				if !yield(r, nil) {
					return
				}
			}
		}
		if _, err := s.GC(ctx, live, cas.GCCompact()); err != nil {
			t.Fatal(err)
		}
	})
	// An index and a pack each, not a read per record (200).
	if got["GET"] > 12 {
		t.Errorf("compacting GC of 5 packs of 40 blobs: %v requests, want at most 12 GET", got)
	}
	t.Logf("compacting GC of 5 packs of 40 blobs: %v requests", got)
}
