package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
)

// autoPackFixture writes packs batches, one per "checkpoint": each holds
// small text blobs (a block record), a random blob (a record alone), and
// every third one a blob too big for a block, plus a blob every batch
// shares (stored once per pack that has it).
func autoPackFixture(t *testing.T, s *Store, seed, packs int) map[Ref][]byte {
	t.Helper()
	ctx := t.Context()
	data := map[Ref][]byte{}
	rng := rand.New(rand.NewPCG(7, uint64(seed)))
	for i := seed; i < seed+packs; i++ {
		b := s.NewBatch()
		blobs := [][]byte{sourceLike(3000, i), sourceLike(5000, i+1000), []byte("shared by every batch\n")}
		lone := make([]byte, 2000)
		for k := range lone {
			lone[k] = byte(rng.UintN(256))
		}
		blobs = append(blobs, lone)
		if i%3 == 0 {
			blobs = append(blobs, sourceLike(solidMax+500, i+2000))
		}
		for _, d := range blobs {
			ref, err := b.Put(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			data[ref] = d
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

func countIndexes(t testing.TB, s *Store) int {
	t.Helper()
	xs, err := s.listIndexes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(xs)
}

// checkAll reads every blob back through a store opened afresh on st and
// verifies the whole store.
func checkAll(t *testing.T, st backend.Storage, data map[Ref][]byte, opts ...Option) {
	t.Helper()
	ctx := t.Context()
	s, err := Open(ctx, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, s, data)
	for ref, err := range s.Verify(ctx) {
		if err != nil {
			t.Errorf("verify %v: %v", ref, err)
		}
	}
}

func checkRead(t *testing.T, s *Store, data map[Ref][]byte) {
	t.Helper()
	for ref, want := range data {
		got, err := s.Get(t.Context(), ref)
		if err != nil {
			t.Fatalf("get %v: %v", ref, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("get %v: wrong content", ref)
		}
	}
}

func TestAutoPackMergesKeepingEveryBlob(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	s, err := Open(ctx, st, WithAutoPack(8))
	if err != nil {
		t.Fatal(err)
	}
	data := autoPackFixture(t, s, 0, 8)
	// At the limit: nothing to do.
	if rep, err := s.AutoPack(ctx); err != nil || rep.Merged != 0 {
		t.Fatalf("at the limit: %+v, %v", rep, err)
	}
	more := autoPackFixture(t, s, 100, 3)
	for ref, d := range more {
		data[ref] = d
	}
	// A blob deleted from a pack stays deleted: the merge copies what the
	// index names now.
	var gone Ref
	for ref, d := range data {
		if len(d) == 3000 {
			gone = ref
			break
		}
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	delete(data, gone)
	if n := countIndexes(t, s); n != 11 {
		t.Fatalf("%d indexes before, want 11", n)
	}
	rep, err := s.AutoPack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Merged != 11 || rep.Written != 1 || rep.Blobs != len(data) {
		t.Fatalf("report %+v, want 11 merged into 1, %d blobs", rep, len(data))
	}
	if n := countIndexes(t, s); n != 1 {
		t.Fatalf("%d indexes after, want 1", n)
	}
	if ok, err := s.Has(ctx, gone); err != nil || ok {
		t.Fatalf("deleted blob back after the merge: %v, %v", ok, err)
	}
	checkRead(t, s, data)
	checkAll(t, st, data)
}

func TestAutoPackLeavesBigPacksAndCanBeOff(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	// Packs of 16 KiB: a quarter is 4 KiB, under every pack written here
	// but the last one's.
	s, err := Open(ctx, st, WithAutoPack(2), WithPackSize(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	autoPackFixture(t, s, 0, 4)
	before := countIndexes(t, s)
	if rep, err := s.AutoPack(ctx); err != nil || rep.Merged != 0 {
		t.Fatalf("big packs merged: %+v, %v", rep, err)
	}
	if n := countIndexes(t, s); n != before {
		t.Fatalf("%d indexes, want %d", n, before)
	}
	off, err := Open(ctx, mem.New(), WithAutoPack(0))
	if err != nil {
		t.Fatal(err)
	}
	autoPackFixture(t, off, 0, 40)
	if rep, err := off.AutoPack(ctx); err != nil || rep.Merged != 0 {
		t.Fatalf("autopack off merged: %+v, %v", rep, err)
	}
	if _, err := Open(ctx, st, WithAutoPack(-1)); err == nil {
		t.Fatal("negative limit accepted")
	}
}

// A reader that loaded the indexes before the merge reads every blob after
// it: it finds the old packs gone, rereads the indexes, and reads the merged
// pack.
func TestAutoPackReaderWithOldIndexes(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	w, err := Open(ctx, st, WithAutoPack(4))
	if err != nil {
		t.Fatal(err)
	}
	data := autoPackFixture(t, w, 0, 10)
	r, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.LoadIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := w.AutoPack(ctx); err != nil || rep.Merged != 10 {
		t.Fatalf("merge: %+v, %v", rep, err)
	}
	checkRead(t, r, data)
	for ref := range data {
		if _, err := r.Stat(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
}

// noLocks hides the storage's locks: merges then rely on being safe
// without one.
func noLocks(st backend.Storage) backend.Storage {
	return intercept.New(st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		if c.Op == "Lock" {
			return backend.ErrNotSupported
		}
		return next(ctx)
	})
}

// Three stores merging the same packs at once (with a lock in memory, with
// none, with file locks between storages on one directory) lose nothing;
// a GC running at the same time (its repack finding packs gone) neither
// fails nor loses a live blob, and a reader reading every blob meanwhile
// finds each one.
func TestAutoPackConcurrent(t *testing.T) {
	for _, kind := range []string{"mem", "mem-nolocks", "fs"} {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			var shared backend.Storage = mem.New()
			dir := t.TempDir()
			storage := func() backend.Storage {
				switch kind {
				case "mem-nolocks":
					return noLocks(shared)
				case "fs":
					st, err := fs.NewOS(dir)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { st.Close() })
					return st
				}
				return shared
			}
			open := func() *Store {
				s, err := Open(ctx, storage(), WithAutoPack(4))
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			w := open()
			data := autoPackFixture(t, w, 0, 12)
			var stores []*Store
			for range 3 {
				s := open()
				if err := s.LoadIndexes(ctx); err != nil {
					t.Fatal(err)
				}
				stores = append(stores, s)
			}
			r := open()
			var wg sync.WaitGroup
			errs := make([]error, len(stores)+2)
			for i, s := range stores {
				wg.Go(func() { _, errs[i] = s.AutoPack(ctx) })
			}
			wg.Go(func() {
				roots := func(yield func(Ref, error) bool) {
					for ref := range data {
						if !yield(ref, nil) {
							return
						}
					}
				}
				_, errs[len(stores)] = w.GC(ctx, roots, GCCompact())
			})
			wg.Go(func() {
				for ref, want := range data {
					got, err := r.Get(ctx, ref)
					if err == nil && !bytes.Equal(got, want) {
						err = fmt.Errorf("get %v: wrong content", ref)
					}
					if err != nil {
						errs[len(stores)+1] = err
						return
					}
				}
			})
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			checkAll(t, storage(), data)
		})
	}
}

var errKilled = errors.New("killed")

// A merge killed after any number of changes to storage (and the machine
// crashing then, losing what was not durable) leaves every blob readable
// and the store verifying clean; the next merge finishes the job.
func TestAutoPackKilled(t *testing.T) {
	ctx := context.Background()
	for k := 0; ; k++ {
		st := mem.New()
		s, err := Open(ctx, st, WithAutoPack(4))
		if err != nil {
			t.Fatal(err)
		}
		data := autoPackFixture(t, s, 0, 6)
		var mu sync.Mutex
		changes, killed := 0, false
		dying := intercept.New(st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
			switch c.Op {
			case "WriteFile", "CreateFile", "PutFile", "OpenWriter", "Rename", "Unlink", "RemoveFile", "WriteFrom":
				mu.Lock()
				changes++
				killed = killed || changes > k
				dead := killed
				mu.Unlock()
				if dead {
					return errKilled
				}
			}
			return next(ctx)
		})
		m, err := Open(ctx, dying, WithAutoPack(4))
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.AutoPack(ctx)
		if err == nil {
			if !killed {
				break // every point of the merge was tried
			}
			t.Fatalf("kill after %d changes: merge reported success", k)
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("kill after %d changes: %v", k, err)
		}
		st.Crash()
		checkAll(t, st, data)
		again, err := Open(ctx, st, WithAutoPack(4))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.AutoPack(ctx); err != nil {
			t.Fatalf("kill after %d changes: merge again: %v", k, err)
		}
		if n := again.countSmall(); n > 4 {
			t.Fatalf("kill after %d changes: %d small packs after merging again", k, n)
		}
		checkAll(t, st, data)
		if k > 1000 {
			t.Fatal("merge never finished")
		}
	}
}

// checkpointPacks writes n packs on st as incremental checkpoints do: ten
// edited text files of 20 KB each, about 3 KB a pack.
func checkpointPacks(b *testing.B, s *Store, from, n int) {
	ctx := b.Context()
	var files [10][]byte
	for f := range files {
		files[f] = sourceLike(20000, f)
	}
	for i := from; i < from+n; i++ {
		bt := s.NewBatch()
		for _, f := range files {
			if _, err := bt.Put(ctx, fmt.Appendf(f[:len(f):len(f)], "// edit %d\n", i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := bt.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func openFS(b *testing.B, dir string, opts ...Option) *Store {
	st, err := fs.NewOS(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	s, err := Open(b.Context(), st, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAutoPack measures, on the local file system: loading the
// indexes of 300 checkpoints' packs as they are and merged (what every
// command pays), one merge of 33 packs (what the create that merges pays),
// and writing a checkpoint's pack with and without the AutoPack call after
// it (the amortized cost per write).
func BenchmarkAutoPack(b *testing.B) {
	ctx := b.Context()
	for _, merged := range []bool{false, true} {
		dir := b.TempDir()
		limit := 0
		if merged {
			limit = DefaultAutoPack
		}
		w := openFS(b, dir, WithAutoPack(limit))
		for i := 0; i < 300; i += 10 {
			checkpointPacks(b, w, i, 10)
			if _, err := w.AutoPack(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("load/merged=%v", merged), func(b *testing.B) {
			for b.Loop() {
				if err := openFS(b, dir).LoadIndexes(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(countIndexes(b, w)), "indexes")
		})
	}
	b.Run("merge-33", func(b *testing.B) {
		w := openFS(b, b.TempDir(), WithAutoPack(DefaultAutoPack))
		i := 0
		for b.Loop() {
			b.StopTimer()
			checkpointPacks(b, w, i, DefaultAutoPack+1)
			i += DefaultAutoPack + 1
			b.StartTimer()
			if rep, err := w.AutoPack(ctx); err != nil || rep.Merged < DefaultAutoPack+1 {
				b.Fatal(rep, err)
			}
		}
	})
	for _, limit := range []int{0, DefaultAutoPack} {
		b.Run(fmt.Sprintf("write/autopack=%d", limit), func(b *testing.B) {
			w := openFS(b, b.TempDir(), WithAutoPack(limit))
			i := 0
			for b.Loop() {
				checkpointPacks(b, w, i, 1)
				if _, err := w.AutoPack(ctx); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// An index that outlives its merged pack (a file system that lost the
// unlink of the index but not that of the pack, in a power loss) hides no
// blob: a read finds the pack gone and takes the blob from the merged one.
func TestAutoPackIndexOutlivingItsPack(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	w, err := Open(ctx, st, WithAutoPack(4))
	if err != nil {
		t.Fatal(err)
	}
	data := autoPackFixture(t, w, 0, 6)
	xs, err := w.listIndexes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string][]byte{}
	for _, x := range xs {
		if old[x.info.Name], err = st.ReadFile(ctx, x.info.Name); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := w.AutoPack(ctx); err != nil || rep.Merged != 6 {
		t.Fatalf("merge: %+v, %v", rep, err)
	}
	for name, b := range old {
		if err := st.WriteFile(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, r, data)
}
