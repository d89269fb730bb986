package cas

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
)

// compactFixture is a store of five hot packs, one per batch, each holding
// one version of four tree-like blobs (digests, incompressible alone), of
// four text files, and a random blob, plus one text blob too big for a
// block.
type compactFixture struct {
	s     *Store
	now   time.Time
	data  map[Ref][]byte
	trees [4][]Ref // versions of each
	texts [4][]Ref
	lone  []Ref // random, like nothing else
	big   Ref
}

// treeLike is a tree object's shape: a name, then digests; a version
// changes the last digest.
func treeLike(dir, version int) []byte {
	rng := rand.New(rand.NewPCG(uint64(dir), 0))
	b := fmt.Appendf(nil, "trvt1 dir%d ", dir)
	for range 7 {
		b = binary32(b, rng)
	}
	return binary32(b, rand.New(rand.NewPCG(uint64(dir), uint64(version+1))))
}

func binary32(b []byte, rng *rand.Rand) []byte {
	for range 32 {
		b = append(b, byte(rng.UintN(256)))
	}
	return b
}

// textVersion is a text file with one line edited per version.
func textVersion(file, version int) []byte {
	b := sourceLike(8000, file+100)
	return append(b[:4000:4000], append(fmt.Appendf(nil, "edited %d\n", version), b[4000:]...)...)
}

func newCompactFixture(t *testing.T, opts ...Option) *compactFixture {
	t.Helper()
	ctx := t.Context()
	f := &compactFixture{now: time.Now(), data: map[Ref][]byte{}}
	s, err := Open(ctx, mem.New(), append(opts, WithClock(func() time.Time { return f.now }))...)
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	rng := rand.New(rand.NewPCG(9, 9))
	for v := range 5 {
		var blobs [][]byte
		for i := range 4 {
			blobs = append(blobs, treeLike(i, v), textVersion(i, v))
		}
		var lone []byte
		for range 100 {
			lone = binary32(lone, rng)
		}
		blobs = append(blobs, lone)
		if v == 0 {
			blobs = append(blobs, sourceLike(solidMax+1000, 77))
		}
		refs, err := s.PutMany(ctx, blobs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range refs {
			f.data[r] = blobs[i]
		}
		for i := range 4 {
			f.trees[i] = append(f.trees[i], refs[2*i])
			f.texts[i] = append(f.texts[i], refs[2*i+1])
		}
		f.lone = append(f.lone, refs[8])
		if v == 0 {
			f.big = refs[9]
		}
	}
	return f
}

func (f *compactFixture) all() []Ref {
	var out []Ref
	for r := range f.data {
		out = append(out, r)
	}
	return out
}

// packsOf returns the decoded indexes of the store's packs.
func packsOf(t *testing.T, s *Store) []indexObj {
	t.Helper()
	xs, err := s.listIndexes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

// A compacting GC rewrites every hot pack into one cold pack whose blobs
// read back byte for byte and verify; a second one has nothing to do.
func TestCompactReadsBack(t *testing.T) {
	ctx := t.Context()
	f := newCompactFixture(t)
	rep, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact())
	if err != nil || rep.Repacked != 5 || len(rep.Deleted) != 0 || rep.Kept != len(f.data) {
		t.Fatalf("GC = %+v, %v; want 5 packs repacked, nothing deleted", rep, err)
	}
	xs := packsOf(t, f.s)
	if len(xs) != 1 || !xs[0].cold || len(xs[0].entries) != len(f.data) {
		t.Fatalf("after GC: %d packs, want one cold pack of %d blobs", len(xs), len(f.data))
	}
	s2, err := Open(ctx, f.s.st)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range f.data {
		if got, err := s2.Get(ctx, r); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get %v after compaction = %d bytes, %v", r, len(got), err)
		}
	}
	good := 0
	for r, err := range s2.Verify(ctx) {
		if err != nil {
			t.Fatalf("Verify %v: %v", r, err)
		}
		good++
	}
	if good != len(f.data) {
		t.Fatalf("Verify saw %d blobs, want %d", good, len(f.data))
	}
	rep, err = s2.GC(ctx, rootsOf(f.all()...), GCCompact())
	if err != nil || rep.Repacked != 0 || len(rep.Removed) != 0 {
		t.Fatalf("second GC = %+v, %v; want nothing to do", rep, err)
	}
}

// The versions of a tree-like blob, and of a text file, end up side by side
// in one block; a random blob like nothing else is stored alone, raw.
func TestCompactOrdersSimilar(t *testing.T) {
	f := newCompactFixture(t)
	if _, err := f.s.GC(t.Context(), rootsOf(f.all()...), GCCompact()); err != nil {
		t.Fatal(err)
	}
	xs := packsOf(t, f.s)
	at := map[Ref]int{}
	byRef := map[Ref]entry{}
	for i, e := range xs[0].entries {
		at[e.ref], byRef[e.ref] = i, e
	}
	for _, versions := range append(f.trees[:], f.texts[:]...) {
		lo, hi := len(at), -1
		for _, r := range versions {
			lo, hi = min(lo, at[r]), max(hi, at[r])
			if e := byRef[r]; e.codec != codecSolid || e.off != byRef[versions[0]].off {
				t.Fatalf("version %v is not in the block of the others (codec %v)", r, e.codec)
			}
		}
		if hi-lo != len(versions)-1 {
			t.Fatalf("versions of one blob at positions %d..%d, want %d side by side", lo, hi, len(versions))
		}
	}
	for _, r := range f.lone {
		if e := byRef[r]; e.codec != CodecRaw {
			t.Fatalf("random blob stored as %v, want raw on its own", e.codec)
		}
	}
}

// Within the grace period a compacting GC keeps every blob, referenced or
// not (a writer may be about to reference it); after it, the unreferenced
// go and every live blob stays readable.
func TestCompactKeepsLive(t *testing.T) {
	ctx := t.Context()
	f := newCompactFixture(t)
	live := append(append([]Ref{f.big}, f.trees[0]...), f.texts[1][4], f.lone[2])
	rep, err := f.s.GC(ctx, rootsOf(live...), GCCompact())
	if err != nil || len(rep.Deleted) != 0 || rep.Young != len(f.data)-len(live) {
		t.Fatalf("GC within grace = %+v, %v; want nothing deleted", rep, err)
	}
	for r, want := range f.data {
		if got, err := f.s.Get(ctx, r); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get %v after GC within grace = %v", r, err)
		}
	}
	f.now = f.now.Add(2 * time.Hour)
	rep, err = f.s.GC(ctx, rootsOf(live...), GCCompact())
	if err != nil || len(rep.Deleted) != len(f.data)-len(live) || rep.Kept != len(live) {
		t.Fatalf("GC after grace = %+v, %v; want %d deleted", rep, err, len(f.data)-len(live))
	}
	s2, err := Open(ctx, f.s.st)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range live {
		if got, err := s2.Get(ctx, r); err != nil || !bytes.Equal(got, f.data[r]) {
			t.Fatalf("live %v after GC = %v", r, err)
		}
	}
	for r := range f.data {
		if ok, err := s2.Has(ctx, r); err != nil || ok != (rep.Kept > 0 && contains(live, r)) {
			t.Fatalf("Has(%v) after GC = %v, %v", r, ok, err)
		}
	}
}

func contains(refs []Ref, r Ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// A dry run reports the packs a compacting GC would rewrite and changes
// nothing.
func TestCompactDryRun(t *testing.T) {
	f := newCompactFixture(t)
	before := packsOf(t, f.s)
	rep, err := f.s.GC(t.Context(), rootsOf(f.all()...), GCCompact(), GCDryRun())
	if err != nil || rep.Repacked != len(before) {
		t.Fatalf("dry run = %+v, %v", rep, err)
	}
	if after := packsOf(t, f.s); len(after) != len(before) || after[0].cold {
		t.Fatalf("dry run changed the packs")
	}
}

// A damaged block of a cold pack is ErrCorrupt naming the ref for the blobs
// read from it. A damaged hot pack is kept as it is by a compacting GC
// (copying would spread the damage), the rest moves.
func TestCompactCorrupt(t *testing.T) {
	ctx := t.Context()
	checkBad := func(s *Store, refs []Ref) {
		t.Helper()
		s2, err := Open(ctx, s.st)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, r := range refs {
			if _, err := s2.Get(ctx, r); err != nil {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), r.String()) {
					t.Fatalf("Get of a damaged block = %v, want ErrCorrupt naming %v", err, r)
				}
				bad++
			}
		}
		if bad == 0 {
			t.Fatal("no blob of the damaged block failed")
		}
	}

	f := newCompactFixture(t)
	if _, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact()); err != nil {
		t.Fatal(err)
	}
	x := packsOf(t, f.s)[0]
	var block entry
	for _, e := range x.entries {
		if e.codec == codecSolid {
			block = e
		}
	}
	damageRecord(t, f.s, block)
	checkBad(f.s, f.all())

	f = newCompactFixture(t)
	hot := packsOf(t, f.s)[0]
	for _, e := range hot.entries {
		if e.codec == codecSolid {
			block = e
		}
	}
	damageRecord(t, f.s, block)
	rep, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact())
	if err != nil || rep.Repacked != 5 {
		t.Fatalf("GC over a damaged pack = %+v, %v", rep, err)
	}
	if _, err := f.s.st.Stat(ctx, f.s.packName(hot.id)); err != nil {
		t.Fatalf("damaged pack not kept: %v", err)
	}
	checkBad(f.s, f.all())
	for r, want := range f.data {
		got, err := f.s.Get(ctx, r)
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("Get %v read wrong bytes", r)
		}
	}
	// The damaged pack's index keeps only its damaged blobs: the next GC
	// copies nothing again.
	count := func() (n int) {
		for _, x := range packsOf(t, f.s) {
			n += len(x.entries)
		}
		return n
	}
	before := count()
	if _, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact()); err != nil {
		t.Fatal(err)
	}
	if after := count(); before != len(f.data) || after != before {
		t.Fatalf("index entries %d -> %d over a second GC (%d blobs)", before, after, len(f.data))
	}
}

// textStore is a store of n 8 KB text blobs written by one batch, each
// beginning with head.
func textStore(t testing.TB, n int, head string) (*Store, [][]byte, []Ref) {
	t.Helper()
	s, err := Open(context.Background(), mem.New())
	if err != nil {
		t.Fatal(err)
	}
	var blobs [][]byte
	for i := range n {
		blobs = append(blobs, append([]byte(head), sourceLike(8000, i)...))
	}
	refs, err := s.PutMany(context.Background(), blobs)
	if err != nil {
		t.Fatal(err)
	}
	return s, blobs, refs
}

// A blob of a repack's block is read by decoding the block up to its end;
// a later blob past that decodes the rest, and then every blob comes from
// the cache.
func TestColdBlockPrefix(t *testing.T) {
	ctx := t.Context()
	s, blobs, refs := textStore(t, 40, "")
	if _, err := s.GC(ctx, rootsOf(refs...), GCCompact()); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, s.st)
	if err != nil {
		t.Fatal(err)
	}
	es := solidEntries(t, s)
	es = slices.DeleteFunc(es, func(e entry) bool { return e.off != es[0].off })
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.inner, b.inner) })
	first, mid, last := es[0], es[len(es)/2], es[len(es)-1]
	if first.off != last.off || last.inner+last.size <= zstdBlockMax {
		t.Fatalf("want one block of more than one zstd block")
	}
	get := func(e entry) {
		t.Helper()
		i := slices.Index(refs, e.ref)
		if got, err := s.Get(ctx, e.ref); err != nil || !bytes.Equal(got, blobs[i]) {
			t.Fatalf("Get at %d of the block = %v", e.inner, err)
		}
	}
	get(first)
	if c := s.blocks.first(blockKey{first.packID, first.off}); c.full || int64(len(c.data)) >= last.inner {
		t.Fatalf("the first blob decoded %d bytes of its block, full %v", len(c.data), c.full)
	}
	// A second blob past the decoded start decodes the rest: blobs read in
	// order must not decode the start again each.
	get(mid)
	if c := s.blocks.first(blockKey{first.packID, first.off}); !c.full {
		t.Fatalf("after a second blob, %d bytes of the block decoded, not all", len(c.data))
	}
	if err := s.st.Unlink(ctx, s.packName(first.packID)); err != nil {
		t.Fatal(err)
	}
	get(last)
}

// BenchmarkBlockRead reads one blob from a block not yet decoded: of a
// batch's 64 KiB blocks (hot) and of a repack's 256 KiB ones (cold).
func BenchmarkBlockRead(b *testing.B) {
	ctx := context.Background()
	for _, cold := range []bool{false, true} {
		s, _, refs := textStore(b, 500, "")
		name := "hot"
		if cold {
			name = "cold"
			if _, err := s.GC(ctx, rootsOf(refs...), GCCompact()); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			for b.Loop() {
				s.blocks = blockCache{}
				if _, err := s.Get(ctx, refs[rng.IntN(len(refs))]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Blobs like no other keep the order they were written in (a directory's
// files, read together), through a repack, even when they share a licence
// header.
func TestCompactKeepsOrder(t *testing.T) {
	for _, head := range []string{"", strings.Repeat("// Copyright 2026 The Trove Authors. All rights reserved.\n", 5)} {
		s, _, refs := textStore(t, 40, head)
		if _, err := s.GC(t.Context(), rootsOf(refs...), GCCompact()); err != nil {
			t.Fatal(err)
		}
		es := solidEntries(t, s)
		slices.SortFunc(es, func(a, b entry) int { return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.inner, b.inner)) })
		for i, e := range es {
			if e.ref != refs[i] {
				t.Fatalf("head %d bytes: blob %d of the repack is blob %d as written", len(head), i, slices.Index(refs, e.ref))
			}
		}
	}
}

// A crash after a repack wrote its packs but before it removed the old ones
// leaves every blob twice; the next GC removes the old packs and copies
// nothing again.
func TestCompactAfterCrash(t *testing.T) {
	ctx := t.Context()
	// Packs of 64 KiB: the repack writes several, most not small.
	f := newCompactFixture(t, WithPackSize(64<<10))
	hot := packsOf(t, f.s)
	saved := map[string][]byte{}
	for _, x := range hot {
		for _, name := range []string{f.s.packName(x.id), f.s.indexName(x.id)} {
			b, err := f.s.st.ReadFile(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			saved[name] = b
		}
	}
	if _, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact()); err != nil {
		t.Fatal(err)
	}
	for name, b := range saved {
		if err := f.s.st.WriteFile(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := f.s.GC(ctx, rootsOf(f.all()...), GCCompact())
	if err != nil || rep.Repacked < len(hot) {
		t.Fatalf("GC after the crash = %+v, %v; want the %d old packs rewritten", rep, err, len(hot))
	}
	n := 0
	for _, x := range packsOf(t, f.s) {
		n += len(x.entries)
		if !x.cold {
			t.Fatalf("pack %s is left hot", x.id)
		}
	}
	if n != len(f.data) {
		t.Fatalf("%d index entries for %d blobs after GC", n, len(f.data))
	}
	for r, want := range f.data {
		if got, err := f.s.Get(ctx, r); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get %v = %v", r, err)
		}
	}
}
