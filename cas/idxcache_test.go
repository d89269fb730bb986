package cas_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/cas"
)

// packs writes n packs of k small blobs each, one batch per pack, and
// returns the blobs by ref.
func packs(t *testing.T, s *cas.Store, n, k int, tag string) map[cas.Ref]string {
	t.Helper()
	ctx := context.Background()
	out := map[cas.Ref]string{}
	for i := range n {
		b := s.NewBatch()
		for j := range k {
			data := fmt.Sprintf("%s blob %d of pack %d: %s", tag, j, i, strings.Repeat("x", j))
			ref, err := b.Put(ctx, []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			out[ref] = data
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func indexReads(sp *spy.Storage) int {
	n := 0
	for _, c := range sp.Calls() {
		if c.Op == "ReadFile" && strings.Contains(c.Name, "/index/") {
			n++
		}
	}
	return n
}

// packedMem is a memory store holding 40 packs of 3 blobs each, and them.
func packedMem(t *testing.T, tag string) (*mem.Storage, map[cas.Ref]string) {
	t.Helper()
	st := mem.New()
	w, err := cas.Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return st, packs(t, w, 40, 3, tag)
}

// hasAll fails t unless s returns every blob as written.
func hasAll(t *testing.T, s *cas.Store, want map[cas.Ref]string) {
	t.Helper()
	for ref, data := range want {
		got, err := s.Get(context.Background(), ref)
		if err != nil || string(got) != data {
			t.Fatalf("Get %v = %q, %v; want %q", ref, got, err, data)
		}
	}
}

// A fresh process finds every blob through the index cache, reading no
// pack index, and never one the indexes no longer hold: a deleted blob (its
// index rewritten), a swept pack, or any blob when the cache is damaged.
func TestIndexCache(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	open := func() (*cas.Store, *spy.Storage) {
		t.Helper()
		sp := spy.New(st)
		s, err := cas.Open(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		return s, sp
	}
	w, _ := open()
	blobs := packs(t, w, 40, 5, "first")
	firsts := slices.Collect(maps.Keys(blobs)) // in the packs the cache will hold
	check := func(s *cas.Store, want map[cas.Ref]string, gone ...cas.Ref) {
		t.Helper()
		hasAll(t, s, want)
		for _, ref := range gone {
			if ok, err := s.Has(ctx, ref); ok || err != nil {
				t.Errorf("Has %v = %v, %v after it went", ref, ok, err)
			}
			if _, err := s.Get(ctx, ref); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("Get %v: %v, want iofs.ErrNotExist", ref, err)
			}
		}
	}

	// The first reader reads the 40 indexes and writes the cache.
	r, sp := open()
	check(r, blobs)
	if n := indexReads(sp); n != 40 {
		t.Fatalf("first reader read %d indexes, want 40", n)
	}
	if _, err := st.Stat(ctx, "blobs/index.cache"); err != nil {
		t.Fatalf("no index cache written: %v", err)
	}
	// The next reads none of them.
	r, sp = open()
	check(r, blobs)
	if n := indexReads(sp); n != 0 {
		t.Fatalf("reader with the cache read %d indexes, want 0", n)
	}
	// Walk lists every blob, the cached packs' too, each once.
	walked := map[cas.Ref]int{}
	for ref, err := range r.Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		walked[ref]++
	}
	for ref := range blobs {
		if walked[ref] != 1 {
			t.Fatalf("Walk yielded %v %d times", ref, walked[ref])
		}
	}
	if len(walked) != len(blobs) {
		t.Fatalf("Walk yielded %d blobs, want %d", len(walked), len(blobs))
	}

	// New packs since the cache are read, and found; the cache is written
	// again only once enough of them came.
	more := packs(t, w, 3, 4, "second")
	r, sp = open()
	check(r, blobs)
	check(r, more)
	if n := indexReads(sp); n != 3 {
		t.Fatalf("read %d indexes, want the 3 new ones", n)
	}
	for ref, data := range more {
		blobs[ref] = data
	}

	// Deleted by a process that took the blob's pack from the cache (no
	// index of the first packs was rewritten yet).
	del := firsts[0]
	if err := r.Delete(ctx, del); err != nil {
		t.Fatal(err)
	}
	delete(blobs, del)
	r, _ = open()
	check(r, blobs, del)

	// A deleted blob: its index is rewritten, and the cache's record of it
	// must not count.
	for ref := range blobs {
		del = ref
		break
	}
	if err := w.Delete(ctx, del); err != nil {
		t.Fatal(err)
	}
	delete(blobs, del)
	r, _ = open()
	check(r, blobs, del)

	// A swept pack: GC with the blobs of one pack unrooted removes it.
	sweep := packs(t, w, 1, 3, "swept")
	r, _ = open()
	check(r, sweep)
	roots := func(yield func(cas.Ref, error) bool) {
		for ref := range blobs {
			if !yield(ref, nil) {
				return
			}
		}
	}
	gcs, err := cas.Open(ctx, st, cas.WithGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gcs.GC(ctx, roots); err != nil {
		t.Fatal(err)
	}
	var gone []cas.Ref
	for ref := range sweep {
		gone = append(gone, ref)
	}
	r, _ = open()
	check(r, blobs, gone...)

	// A damaged cache is read around, with the same answers.
	data, err := st.ReadFile(ctx, "blobs/index.cache")
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := st.WriteFile(ctx, "blobs/index.cache", data); err != nil {
		t.Fatal(err)
	}
	r, sp = open()
	check(r, blobs, gone...)
	if indexReads(sp) == 0 {
		t.Fatal("a damaged cache was trusted")
	}
	var _ backend.Storage = sp
}

// BenchmarkLoadIndexes is a process's first lookup in a store on disk of
// 115 packs of 90 blobs (a long agent session's checkpoints), with the
// index cache and without it.
func BenchmarkLoadIndexes(b *testing.B) {
	ctx := context.Background()
	st, err := fs.NewOS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := cas.Open(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 115 {
		bt := w.NewBatch()
		for j := range 90 {
			if _, err := bt.Put(ctx, fmt.Appendf(nil, "blob %d of pack %d", j, i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := bt.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cache=%v", cached), func(b *testing.B) {
			for b.Loop() {
				if !cached {
					b.StopTimer()
					if err := st.Unlink(ctx, "blobs/index.cache"); err != nil && !errors.Is(err, iofs.ErrNotExist) {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				s, err := cas.Open(ctx, st)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.LoadIndexes(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A store whose cache cannot be written (read-only credentials, a full
// disk) answers as one without a cache.
func TestIndexCacheUnwritable(t *testing.T) {
	ctx := context.Background()
	st, blobs := packedMem(t, "ro")
	ro := faulty.New(st, faulty.WithHook(func(op, name string) error {
		switch op {
		case "EnsureDir", "WriteFile", "WriteFrom", "OpenWriter", "CreateFile", "PutFile", "RemoveFile", "Rename", "Unlink", "Compact":
			return iofs.ErrPermission
		}
		return nil
	}))
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for range 2 {
		r, err := cas.Open(ctx, ro, cas.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		hasAll(t, r, blobs)
	}
	if _, err := st.Stat(ctx, "blobs/index.cache"); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("cache written through a read-only store: %v", err)
	}
	// Nor does every start of a reader warn about it.
	if logs.Len() > 0 {
		t.Errorf("logged: %s", logs.String())
	}
}

// Processes writing packs and rewriting the index cache at once (each its
// own Store on one directory) lose nothing: every acknowledged blob is found
// by a fresh reader, through whichever cache was written last.
func TestIndexCacheConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	st, err := fs.NewOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writers = 4
	got := make([]map[cas.Ref]string, writers)
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			all := map[cas.Ref]string{}
			for round := range 5 {
				w, err := cas.Open(ctx, st)
				if err != nil {
					errs <- err
					return
				}
				// Enough new packs for the next reader to rewrite the cache.
				maps.Copy(all, packs(t, w, 10, 3, fmt.Sprintf("writer %d round %d", i, round)))
				for ref, data := range all {
					b, err := w.Get(ctx, ref)
					if err != nil || string(b) != data {
						errs <- fmt.Errorf("writer %d: Get %v = %q, %v", i, ref, b, err)
						return
					}
				}
			}
			got[i] = all
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Stat(ctx, "blobs/index.cache"); err != nil {
		t.Fatalf("no cache after 200 packs: %v", err)
	}
	r, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, all := range got {
		for ref, data := range all {
			b, err := r.Get(ctx, ref)
			if err != nil || string(b) != data {
				t.Fatalf("fresh reader: Get %v = %q, %v", ref, b, err)
			}
		}
	}
}

// A batch whose pack was written but whose index never was (the process
// died between them) acknowledged nothing: a reader with the cache finds
// none of its blobs and every earlier one, and later batches are indexed.
func TestIndexCachePackWithoutIndex(t *testing.T) {
	ctx := context.Background()
	st, blobs := packedMem(t, "before")
	if r, err := cas.Open(ctx, st); err != nil || r.LoadIndexes(ctx) != nil {
		t.Fatalf("open: %v", err) // writes the cache
	}
	crash := faulty.New(st, faulty.WithHook(func(op, name string) error {
		if strings.Contains(name, "/index/") {
			return iofs.ErrPermission // the index write never happens
		}
		return nil
	}))
	cw, err := cas.Open(ctx, crash)
	if err != nil {
		t.Fatal(err)
	}
	b := cw.NewBatch()
	lost, err := b.Put(ctx, []byte("in a pack with no index"))
	if err != nil {
		t.Fatal(err)
	}
	packsBefore := countFiles(t, st, "blobs/packs")
	if err := b.Flush(ctx); err == nil {
		t.Fatal("Flush acknowledged a batch whose index was not written")
	}
	if n := countFiles(t, st, "blobs/packs"); n != packsBefore+1 {
		t.Fatalf("%d packs after the failed flush, want the %d before and its own", n, packsBefore)
	}
	r, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Has(ctx, lost); ok || err != nil {
		t.Fatalf("Has(unacknowledged blob) = %v, %v", ok, err)
	}
	maps.Copy(blobs, packs(t, r, 2, 3, "after"))
	r, err = cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, r, blobs)
}

// countFiles is how many files are below dir.
func countFiles(t *testing.T, st backend.Storage, dir string) int {
	t.Helper()
	n := 0
	for info, err := range backend.Walk(context.Background(), st, dir) {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir {
			n++
		}
	}
	return n
}

// On a local disk the cache is mapped, not read: a reader finds every
// blob through it while other stores replace it, and a damaged one,
// refused and released, costs only the index reads.
func TestIndexCacheMapped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	blobs := packs(t, w, 40, 3, "mapped")
	r, err := cas.Open(ctx, st) // writes the cache
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, r, blobs)
	r, err = cas.Open(ctx, st) // maps it
	if err != nil {
		t.Fatal(err)
	}
	if err := r.LoadIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "blobs", "index.cache")
	if m, err := os.ReadFile("/proc/self/maps"); err == nil && !strings.Contains(string(m), cache) {
		t.Error("the index cache is not mapped")
	}
	// Another process writes packs and replaces the cache meanwhile.
	w2, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	more := packs(t, w2, 10, 3, "more")
	if _, err := cas.Open(ctx, st); err != nil {
		t.Fatal(err)
	}
	w3, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, w3, more)
	hasAll(t, r, blobs)
	runtime.GC() // the tables no one holds are released

	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(cache+".new", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cache+".new", cache); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d, err := cas.Open(ctx, st, cas.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, d, blobs)
	hasAll(t, d, more)
	if !strings.Contains(logs.String(), "index cache damaged") {
		t.Errorf("a damaged cache taken without a word: %q", logs.String())
	}
}
