package cas

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/trovekit/trove/backend/mem"
)

// sourceLike returns n bytes of text like source code, different per seed.
func sourceLike(n, seed int) []byte {
	var b bytes.Buffer
	words := strings.Fields("func var return if else for range package import struct err nil")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s %s // %d.%d\n", words[(i*7+seed)%len(words)], words[(i*3+seed*5)%len(words)], seed, i*i%9973)
	}
	return b.Bytes()[:n]
}

func blockStore(t *testing.T, opts ...Option) (*Store, [][]byte, []Ref) {
	t.Helper()
	var blobs [][]byte
	for i := range 40 {
		blobs = append(blobs, sourceLike(2000+i*300, i))
	}
	s, refs := storeOf(t, blobs, opts...)
	return s, blobs, refs
}

// storeOf returns a store on a new mem backend holding blobs, written by
// PutMany, as another process opening it sees it.
func storeOf(t *testing.T, blobs [][]byte, opts ...Option) (*Store, []Ref) {
	t.Helper()
	ctx := t.Context()
	st := mem.New()
	s, err := Open(ctx, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.PutMany(ctx, blobs)
	if err != nil {
		t.Fatal(err)
	}
	// Another process's view.
	if s, err = Open(ctx, st, opts...); err != nil {
		t.Fatal(err)
	}
	return s, refs
}

func solidEntries(t *testing.T, s *Store) []entry {
	t.Helper()
	if err := s.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var out []entry
	for _, p := range s.idx.snapshot() {
		for _, e := range p.entries {
			if e.codec == codecSolid {
				out = append(out, e)
			}
		}
	}
	return out
}

func rootsOf(refs ...Ref) iter.Seq2[Ref, error] {
	return func(yield func(Ref, error) bool) {
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Small compressible blobs share block records; each reads back verified,
// whole and streamed, and Stat's stored sizes add up to no more than the
// packs hold.
func TestBatchBlocks(t *testing.T) {
	ctx := t.Context()
	s, blobs, refs := blockStore(t)
	if n := len(solidEntries(t, s)); n != len(blobs) {
		t.Fatalf("%d of %d small text blobs in block records", n, len(blobs))
	}
	var stored, packs int64
	for _, p := range s.idx.snapshot() {
		packs += p.size
	}
	for i, ref := range refs {
		got, err := s.Get(ctx, ref)
		if err != nil || !bytes.Equal(got, blobs[i]) {
			t.Fatalf("Get %d = %d bytes, %v", i, len(got), err)
		}
		rc, err := s.Open(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, blobs[i]) {
			t.Fatalf("Open %d = %d bytes, %v", i, len(got), err)
		}
		info, err := s.Stat(ctx, ref)
		if err != nil || info.Size != int64(len(blobs[i])) || info.Codec != CodecZstd || !info.Packed {
			t.Fatalf("Stat %d = %+v, %v", i, info, err)
		}
		stored += info.StoredSize
	}
	if stored > packs {
		t.Fatalf("stored sizes add up to %d, packs hold %d", stored, packs)
	}
	for ref, err := range s.Verify(ctx) {
		if err != nil {
			t.Fatalf("Verify %v: %v", ref, err)
		}
	}
}

// A damaged block record is ErrCorrupt for the blobs read from it, and
// Verify names them; nothing panics or decodes past the recorded length.
func TestBlockCorrupt(t *testing.T) {
	ctx := t.Context()
	s, _, refs := blockStore(t)
	damageRecord(t, s, solidEntries(t, s)[0])
	bad := 0
	for _, ref := range refs {
		if _, err := s.Get(ctx, ref); err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), ref.String()) {
				t.Fatalf("Get of a damaged block = %v, want ErrCorrupt naming the ref", err)
			}
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("no blob of the damaged block failed")
	}
	reported := 0
	for _, err := range s.Verify(ctx) {
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify: %v", err)
			}
			reported++
		}
	}
	if reported < bad {
		t.Fatalf("Verify reported %d bad blobs, Get found %d", reported, bad)
	}
}

// damageRecord flips a byte in the middle of e's record.
func damageRecord(t *testing.T, s *Store, e entry) {
	t.Helper()
	name := s.packName(e.packID)
	pack, err := s.st.ReadFile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	pack[e.off+headerSize+e.n/2] ^= 0x55
	if err := s.st.WriteFile(t.Context(), name, pack); err != nil {
		t.Fatal(err)
	}
}

// GC keeps every live blob of a block, whether the pack keeps its block
// (dead blobs dropped from the index) or is repacked (live blobs gathered
// into a new block of a cold pack).
func TestBlockGC(t *testing.T) {
	ctx := t.Context()
	for _, below := range []float64{0, 1} {
		s, blobs, refs := blockStore(t, WithGrace(0), WithRepackBelow(below))
		live := []int{3, 17, 30}
		var roots []Ref
		for _, i := range live {
			roots = append(roots, refs[i])
		}
		rep, err := s.GC(ctx, rootsOf(roots...))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Deleted) != len(refs)-len(live) {
			t.Fatalf("repack below %v: deleted %d, want %d", below, len(rep.Deleted), len(refs)-len(live))
		}
		s2, err := Open(ctx, s.st)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range live {
			if got, err := s2.Get(ctx, refs[i]); err != nil || !bytes.Equal(got, blobs[i]) {
				t.Fatalf("repack below %v: live blob %d = %v", below, i, err)
			}
		}
		if ok, _ := s2.Has(ctx, refs[0]); ok {
			t.Fatalf("repack below %v: a dead blob is still listed", below)
		}
		if es := solidEntries(t, s2); below == 1 && (len(es) != len(live) || es[0].off != es[len(es)-1].off) {
			t.Fatalf("repacked: %d blobs in blocks, want the %d live ones in one", len(es), len(live))
		}
		for ref, err := range s2.Verify(ctx) {
			if err != nil {
				t.Fatalf("repack below %v: Verify %v: %v", below, ref, err)
			}
		}
	}
}

// Version 2 indexes carry a blob's offset in its block; a version 1 index
// naming a block blob is corrupt.
func TestIndexV2(t *testing.T) {
	r1, _ := Sum(SHA256, []byte("a"))
	r2, _ := Sum(SHA256, []byte("b"))
	in := []entry{
		{ref: r1, off: 8, n: 50, codec: codecSolid, size: 300, inner: 0, packID: "p"},
		{ref: r2, off: 8, n: 50, codec: codecSolid, size: 100, inner: 300, packID: "p"},
	}
	b := encodeIndex(58, in, false)
	if !bytes.HasPrefix(b, indexMagicV2[:]) {
		t.Fatal("an index with block blobs is not version 2")
	}
	_, out, err := decodeIndex("p", b)
	if err != nil || len(out) != 2 || out[1].inner != 300 || out[0].stored+out[1].stored > 50 || out[0].stored != 37 {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	v1 := append(bytes.Clone(indexMagic[:]), b[len(indexMagic):len(b)-32]...)
	sum := sha256.Sum256(v1)
	if _, _, err := decodeIndex("p", append(v1, sum[:]...)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 1 index with a block blob = %v", err)
	}
	// The second entry is written as the first's continuation; one with
	// nothing to continue is corrupt.
	if len(b) != len(encodeIndex(58, in[:1], false))+1+32+1+1 {
		t.Fatalf("the second blob of a block takes %d bytes", len(b)-len(encodeIndex(58, in[:1], false)))
	}
	// Version 3 (a cold pack) is version 2 marked.
	cold := encodeIndex(58, in, true)
	if _, out, err := decodeIndex("p", cold); !isColdIndex(cold) || isColdIndex(b) || err != nil || len(out) != 2 || out[1].inner != 300 {
		t.Fatalf("version 3 round trip = %+v, %v", out, err)
	}
	orphan := append(bytes.Clone(indexMagicV2[:]), 58, 1, byte(SHA256))
	orphan = append(orphan, r1.digest[:]...)
	orphan = append(orphan, byte(codecSolidNext), 5)
	sum = sha256.Sum256(orphan)
	if _, _, err := decodeIndex("p", append(orphan, sum[:]...)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a continuation without a block = %v", err)
	}
}

// A block read for one blob serves the other blobs of that block without
// reading or decoding it again; what it serves is still verified.
func TestBlockCache(t *testing.T) {
	ctx := t.Context()
	s, blobs, refs := blockStore(t)
	es := solidEntries(t, s)
	byRef := map[Ref]entry{}
	for _, e := range es {
		byRef[e.ref] = e
	}
	var a, b int = -1, -1
	for i := range refs {
		for j := i + 1; j < len(refs); j++ {
			if byRef[refs[i]].off == byRef[refs[j]].off && byRef[refs[i]].packID == byRef[refs[j]].packID {
				a, b = i, j
			}
		}
	}
	if a < 0 {
		t.Fatal("no two blobs share a block")
	}
	if _, err := s.Get(ctx, refs[a]); err != nil {
		t.Fatal(err)
	}
	// The pack goes away: the second blob comes from the decoded block.
	e := byRef[refs[b]]
	if err := s.st.Unlink(ctx, s.packName(e.packID)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, refs[b]); err != nil || !bytes.Equal(got, blobs[b]) {
		t.Fatalf("Get from the cached block = %v", err)
	}
	// A cached block that does not hold what the index says is corrupt.
	bad := e
	bad.size = 1 << 30
	if _, err := s.openPacked(ctx, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a blob past its block's end = %v", err)
	}
}

// Packs share a directory until it holds packDirFill: a snapshot's pack
// in a new directory costs a mkdir and an fsync of its parent.
func TestPacksShareDirectory(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	s, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	dirs := func() map[string]int {
		n := map[string]int{}
		for _, p := range s.idx.snapshot() {
			n[p.id[:2]]++
		}
		return n
	}
	for i := range packDirFill + 1 {
		if i == packDirFill {
			// The directory is full: a new pack never goes there, not
			// even when its random name starts as the directory's.
			for range 2000 {
				for dir, n := range dirs() {
					if id := s.packID(); id[:2] == dir {
						t.Fatalf("pack %s named into directory %s, which holds %d", id, dir, n)
					}
				}
			}
		}
		if _, err := s.PutMany(ctx, [][]byte{fmt.Appendf(nil, "pack %d", i)}); err != nil {
			t.Fatal(err)
		}
		if got := len(dirs()); got != 1+i/packDirFill {
			t.Fatalf("after %d packs: directories %v", i+1, dirs())
		}
	}
	for dir := range dirs() {
		var n int
		for _, err := range st.List(ctx, s.packDir()+"/"+dir) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("directory %s: no pack stored there", dir)
		}
	}
}

// The blocks of small blobs a batch writes are compressed at zstd's
// fastest level (GC compresses them again at its best when it repacks
// them); a blob big enough to be kept as written, at the default level.
func TestBlockLevels(t *testing.T) {
	ctx := t.Context()
	s, _, _ := blockStore(t)
	big := sourceLike(3*solidMax, 99)
	b := s.NewBatch()
	bigRef, err := b.Put(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	encoder := func(level zstd.EncoderLevel) *zstd.Encoder {
		e, err := newEncoder(level)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	fast, def := encoder(zstd.SpeedFastest), encoder(zstd.SpeedDefault)
	// level reports which encoder wrote the payload of record rec, whose
	// original bytes are orig.
	level := func(rec, orig []byte) string {
		payload := rec[headerSize:]
		f, d := fast.EncodeAll(orig, nil), def.EncodeAll(orig, nil)
		switch {
		case bytes.Equal(f, d):
			t.Fatal("both levels write the same frame: the test tells nothing")
		case bytes.Equal(payload, f):
			return "fastest"
		case bytes.Equal(payload, d):
			return "default"
		}
		return "another"
	}
	if err := s.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	blocks, bigs := 0, 0
	for _, p := range s.idx.snapshot() {
		for _, e := range p.entries {
			rec, err := s.readRecord(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case e.codec == codecSolid:
				orig, err := s.decodeBlock(rec)
				if err != nil {
					t.Fatal(err)
				}
				// Each frame of the block (appendFrames) by the level.
				spans, ok := blockFrames(rec[headerSize:], int64(len(orig)))
				if !ok {
					t.Fatalf("block at %d: frames not told apart", e.off)
				}
				for _, f := range spans {
					frame := append(appendHeader(nil, CodecZstd, f.size), rec[headerSize+f.off:headerSize+f.end]...)
					if got := level(frame, orig[f.at:f.at+f.size]); got != "fastest" {
						t.Errorf("block at %d, frame at %d: %s level", e.off, f.at, got)
					}
				}
				blocks++
			case e.ref == bigRef:
				if got := level(rec, big); got != "default" {
					t.Errorf("big blob: %s level", got)
				}
				bigs++
			}
		}
	}
	if blocks == 0 || bigs != 1 {
		t.Fatalf("%d block records, %d big blobs checked", blocks, bigs)
	}
}

// A batch reuses its blocks' and packs' buffers from one to the next (and
// from one batch to the next), where each grew from nothing by append: once
// warm, putting 3 MiB of small text blobs allocates less than their size
// (the records' copy in the memory store included), where it was four
// times their size.
func TestBatchReusesBuffers(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	round := func(seed int) (in, allocated uint64) {
		var blobs [][]byte
		for i := 0; in < 3<<20; i++ {
			b := sourceLike(2000+(i*7919)%30000, seed*100000+i)
			blobs = append(blobs, b)
			in += uint64(len(b))
		}
		s, err := Open(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := s.PutMany(ctx, blobs); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return in, m1.TotalAlloc - m0.TotalAlloc
	}
	round(0) // coders and buffers for the process
	if in, got := round(1); got > in {
		t.Fatalf("a batch of %d KiB of small blobs allocated %d KiB", in>>10, got>>10)
	} else {
		t.Logf("a batch of %d KiB of small blobs allocated %d KiB", in>>10, got>>10)
	}
}
