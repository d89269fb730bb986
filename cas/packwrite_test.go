package cas

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
)

// packBatch is blobs enough for several packs of packWriteSize: random
// ones, stored as they are, and text sharing block records.
func packBatch(seed int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	out := make([][]byte, 12)
	for i := range out {
		if i%3 == 0 {
			out[i] = sourceLike(3000+100*i, seed+i)
			continue
		}
		out[i] = make([]byte, 3000+100*i)
		for j := range out[i] {
			out[i][j] = byte(rng.UintN(256))
		}
	}
	return out
}

const packWriteSize = 12 << 10

// A crash before each change a batch makes (the pack written in place, its
// sync, the index staged and put at its name) loses no blob an earlier
// Flush acknowledged, and leaves no index naming a pack that is not whole:
// a lookup (dedup) finds only blobs it can read. Some crash points leave a
// pack at its name without an index, which GC removes past the grace.
func TestPackInPlaceCrash(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	opts := []Option{WithPackSize(packWriteSize), WithClock(clock)}
	orphans := 0
	for k := 1; ; k++ {
		st := mem.New(mem.WithClock(clock))
		s, err := Open(ctx, st, opts...)
		if err != nil {
			t.Fatal(err)
		}
		acked := map[Ref][]byte{}
		first := packBatch(0)
		refs, err := s.PutMany(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range refs {
			acked[r] = first[i]
		}
		changes, killed := 0, false
		dying := intercept.New(st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
			switch c.Op {
			case "WriteFile", "CreateFile", "OpenWriter", "Writer.Write", "Writer.Sync", "Writer.Close", "Rename", "Unlink", "WriteFrom":
				mu.Lock()
				changes++
				killed = killed || changes >= k
				dead := killed
				mu.Unlock()
				if dead {
					return errKilled
				}
			}
			return next(ctx)
		})
		w, err := Open(ctx, dying, opts...)
		if err != nil {
			t.Fatal(err)
		}
		second := packBatch(100)
		_, err = w.PutMany(ctx, second)
		if !killed {
			if err != nil {
				t.Fatalf("PutMany without a crash: %v", err)
			}
			if k < 3*5 {
				t.Fatalf("PutMany made only %d changes", k-1)
			}
			break
		}
		if err == nil {
			t.Fatalf("crash at change %d: PutMany reported success", k)
		}
		st.Crash()

		after, err := Open(ctx, st, opts...)
		if err != nil {
			t.Fatal(err)
		}
		checkRead(t, after, acked)
		// Every blob an index names reads whole: dedup trusts no other.
		for ref, err := range after.Verify(ctx) {
			if err != nil {
				t.Fatalf("crash at change %d: verify %v: %v", k, ref, err)
			}
		}
		for _, d := range second {
			ref, _ := Sum(SHA256, d)
			if ok, err := after.Has(ctx, ref); err != nil {
				t.Fatal(err)
			} else if ok {
				checkRead(t, after, map[Ref][]byte{ref: d})
			}
		}
		unindexed := unindexedPacks(t, after)
		orphans += unindexed
		// Past the grace, GC removes the packs no index names.
		mu.Lock()
		now = now.Add(48 * time.Hour)
		mu.Unlock()
		live := func(yield func(Ref, error) bool) {
			for r := range acked {
				if !yield(r, nil) {
					return
				}
			}
		}
		if _, err := after.GC(ctx, live); err != nil {
			t.Fatalf("crash at change %d: GC: %v", k, err)
		}
		if n := unindexedPacks(t, after); n != 0 {
			t.Fatalf("crash at change %d: %d packs without an index after GC (of %d)", k, n, unindexed)
		}
		checkAll(t, st, acked, opts...)
		if _, err := after.PutMany(ctx, second); err != nil {
			t.Fatalf("crash at change %d: PutMany again: %v", k, err)
		}
		if k > 200 {
			t.Fatal("PutMany never finished")
		}
	}
	if orphans == 0 {
		t.Fatal("no crash point left a pack without its index: the window between them was not tried")
	}
}

// unindexedPacks counts the packs at their names that no index names.
func unindexedPacks(t *testing.T, s *Store) int {
	t.Helper()
	xs, err := s.listIndexes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	packs, err := s.listPacks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		delete(packs, x.id)
	}
	return len(packs)
}

// A pack whose write or sync fails fails the batch, leaves no index and no
// pack behind, and the blobs put after are stored.
func TestPackWriteFails(t *testing.T) {
	ctx := t.Context()
	for _, op := range []string{"OpenWriter", "Writer.Write", "Writer.Sync", "Writer.Close"} {
		t.Run(op, func(t *testing.T) {
			inner := mem.New()
			st := faulty.New(inner, faulty.FailNth(1, nil, op))
			s, err := Open(ctx, st, WithPackSize(packWriteSize))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.PutMany(ctx, packBatch(0)); !errors.Is(err, faulty.ErrInjected) {
				t.Fatalf("PutMany with %s failing: %v", op, err)
			}
			if n := unindexedPacks(t, s); n != 0 {
				t.Errorf("%d packs left without an index", n)
			}
			data := map[Ref][]byte{}
			batch := packBatch(0)
			refs, err := s.PutMany(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range refs {
				data[r] = batch[i]
			}
			checkAll(t, backend.Storage(inner), data)
		})
	}
}
