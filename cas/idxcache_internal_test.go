package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
)

// The cache's records are searched in place, so a file whose records are
// out of order is refused like a damaged one, even with a right checksum;
// a right one finds every entry of its packs.
func TestIdxCacheOrder(t *testing.T) {
	var packs []*packIdx
	for i := range 3 {
		p := &packIdx{id: newID(), size: 100, idxSize: 50, modTime: time.Unix(0, int64(1e9+i))}
		for j := range 20 {
			ref, _ := Sum(SHA256, []byte{byte(i), byte(j)})
			p.entries = append(p.entries, entry{ref: ref, off: int64(j), n: 10, codec: CodecRaw, size: 3, packID: p.id})
		}
		packs = append(packs, p)
	}
	data := encodeIdxCache(packs, nil)
	tb, err := decodeIdxCache(data)
	if err != nil {
		t.Fatal(err)
	}
	for k, p := range packs {
		for _, e := range p.entries {
			got, ok := tb.find(e.ref, func(q *packIdx) bool { return q.id == p.id })
			if !ok || got.off != e.off || got.packID != p.id {
				t.Fatalf("pack %d: find %v = %+v, %v", k, e.ref, got, ok)
			}
		}
	}
	// Swap the first two records and fix the checksum.
	recs := data[len(data)-4-tb.len()*idxRecSize : len(data)-4]
	a := append([]byte(nil), recs[:idxRecSize]...)
	copy(recs[:idxRecSize], recs[idxRecSize:2*idxRecSize])
	copy(recs[idxRecSize:2*idxRecSize], a)
	body := data[:len(data)-4]
	binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, idxCastagnoli))
	if _, err := decodeIdxCache(data); !errors.Is(err, errIdxCache) {
		t.Fatalf("records out of order: %v, want errIdxCache", err)
	}
	// A pack number past the packs and an unknown codec are refused too,
	// checksum or not.
	copy(recs[idxRecSize:2*idxRecSize], recs[:idxRecSize])
	copy(recs[:idxRecSize], a)
	binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, idxCastagnoli))
	for _, damage := range []func(r []byte){
		func(r []byte) { binary.LittleEndian.PutUint32(r[2:], 1<<20) },
		func(r []byte) { r[1] = 9 },
	} {
		bad := append([]byte(nil), data...)
		r := bad[len(bad)-4-tb.len()*idxRecSize:]
		damage(r)
		binary.LittleEndian.PutUint32(bad[len(bad)-4:], crc32.Checksum(bad[:len(bad)-4], idxCastagnoli))
		if _, err := decodeIdxCache(bad); !errors.Is(err, errIdxCache) {
			t.Fatalf("damaged record: %v, want errIdxCache", err)
		}
	}
	if _, err := decodeIdxCache(data); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// FuzzDecodeIdxCache: no input panics, and what decodes can be searched.
func FuzzDecodeIdxCache(f *testing.F) {
	p := &packIdx{id: newID(), size: 10, idxSize: 5, modTime: time.Unix(0, 7)}
	for j := range 3 {
		ref, _ := Sum(SHA256, []byte{byte(j)})
		p.entries = append(p.entries, entry{ref: ref, off: int64(j), n: 4, size: 2})
	}
	f.Add(encodeIdxCache([]*packIdx{p}, nil))
	f.Add([]byte(idxCacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := decodeIdxCache(b)
		if err != nil {
			return
		}
		for i := range tb.len() {
			r := tb.rec(i)
			e, ok := tb.find(recRef(r), func(*packIdx) bool { return true })
			if !ok || e.off < 0 || e.n < 0 {
				t.Fatalf("record %d: %+v, %v", i, e, ok)
			}
		}
		for k := range tb.packs {
			tb.entriesOf(k)
		}
	})
}

// toV1 rewrites a cache of now as version 1 wrote it: 80-byte records.
func toV1(t *testing.T, data []byte, tb *idxTable) []byte {
	t.Helper()
	le := binary.LittleEndian
	head := data[len(idxCacheMagic) : len(data)-4-tb.len()*idxRecSize]
	out := append([]byte(idxCacheMagicV1), head...)
	for i := range tb.len() {
		r := tb.rec(i)
		out = append(out, r[0], r[1], 0, 0)
		out = le.AppendUint32(out, recPack(r))
		out = append(out, r[6:38]...)
		for k := range 5 {
			out = le.AppendUint64(out, uint64(le.Uint32(r[38+4*k:])))
		}
	}
	return le.AppendUint32(out, crc32.Checksum(out, idxCastagnoli))
}

// A version 1 cache is read (and marked to be written again); one with a
// number past a record of now is refused; an entry past 32 bits gets no
// cache at all rather than a wrong one.
func TestIdxCacheV1(t *testing.T) {
	packs := testPacks(2, 30, func(j int) entry {
		return entry{off: int64(1000 * j), n: 77, codec: codecSolid, size: 3, inner: int64(j), stored: 5}
	})
	data := encodeIdxCache(packs, nil)
	tb, err := decodeIdxCache(data)
	if err != nil || tb.v1 {
		t.Fatalf("decode = %v, v1 %v", err, tb != nil && tb.v1)
	}
	old := toV1(t, data, tb)
	if len(old)-len(data) != tb.len()*(idxRecSizeV1-idxRecSize) {
		t.Fatalf("version 1 of %d bytes, version 2 of %d", len(old), len(data))
	}
	t1, err := decodeIdxCache(old)
	if err != nil || !t1.v1 || !bytes.Equal(t1.recs, tb.recs) {
		t.Fatalf("version 1: %v, v1 %v", err, t1 != nil && t1.v1)
	}
	for _, p := range packs {
		for _, e := range p.entries {
			got, ok := t1.find(e.ref, func(q *packIdx) bool { return q.id == p.id })
			if e.packID = p.id; !ok || got != e {
				t.Fatalf("find %v in version 1 = %+v, %v; want %+v", e.ref, got, ok, e)
			}
		}
	}
	big := slices.Clone(old)
	binary.LittleEndian.PutUint64(big[len(big)-4-idxRecSizeV1+48:], 1<<33)
	binary.LittleEndian.PutUint32(big[len(big)-4:], crc32.Checksum(big[:len(big)-4], idxCastagnoli))
	if _, err := decodeIdxCache(big); !errors.Is(err, errIdxCache) {
		t.Fatalf("version 1 with a length past 32 bits: %v, want errIdxCache", err)
	}
	packs[0].entries[3].off = 1 << 32
	if got := encodeIdxCache(packs, nil); got != nil {
		t.Fatalf("an entry past 32 bits cached in %d bytes", len(got))
	}
}

// A store whose cache a version 1 binary wrote reads it, and the next
// refresh writes it in the layout of now.
func TestIdxCacheV1Rewritten(t *testing.T) {
	ctx := t.Context()
	st := mem.New()
	for i := range idxCacheMin + 2 {
		w, err := Open(ctx, st)
		if err == nil {
			_, err = w.PutMany(ctx, [][]byte{[]byte(strings.Repeat("packed ", i+1)), []byte(strings.Repeat("more ", i+1))})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ensureIndex(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := st.ReadFile(ctx, s.idxCacheName())
	if err != nil {
		t.Fatal(err)
	}
	tb, err := decodeIdxCache(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, s.idxCacheName(), toV1(t, data, tb)); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, st); err != nil {
		t.Fatal(err)
	}
	for _, e := range tb.entriesOf(0) {
		if _, err := s.Get(ctx, e.ref); err != nil {
			t.Fatalf("Get through a version 1 cache: %v", err)
		}
	}
	if s.idx.table == nil || !s.idx.table.v1 {
		t.Fatal("the version 1 cache was not used")
	}
	now, err := st.ReadFile(ctx, s.idxCacheName())
	if err != nil {
		t.Fatal(err)
	}
	t2, err := decodeIdxCache(now)
	if err != nil || t2.v1 {
		t.Fatalf("cache after a refresh: %v, want version 2", err)
	}
	for i := range tb.len() {
		if _, ok := t2.find(recRef(tb.rec(i)), func(*packIdx) bool { return true }); !ok {
			t.Fatalf("record %d of the version 1 cache not in the one written after", i)
		}
	}
}

// A cache written from an old table and new packs is the cache of all
// their packs written at once: the old records merged, not sorted again.
func TestIdxCacheMerge(t *testing.T) {
	packs := testPacks(5, 40, func(j int) entry {
		return entry{off: int64(j), n: 9, codec: CodecRaw, size: 3, stored: 9}
	})
	tb, err := decodeIdxCache(encodeIdxCache(slices.Clone(packs[:3]), nil))
	if err != nil {
		t.Fatal(err)
	}
	// The table's packs stand for the first three; one of them is gone.
	mixed := append([]*packIdx{tb.packs[0], tb.packs[2]}, packs[3:]...)
	var want []*packIdx
	for _, p := range packs[:3] {
		if p.id == tb.packs[0].id || p.id == tb.packs[2].id {
			want = append(want, p)
		}
	}
	want = append(want, packs[3:]...)
	got, all := encodeIdxCache(mixed, tb), encodeIdxCache(want, nil)
	if !bytes.Equal(got, all) {
		t.Fatalf("merged cache of %d bytes differs from the cache written at once (%d bytes)", len(got), len(all))
	}
}

// testPacks returns n packs of k entries each, entry j of each made by mk
// and given a ref of its own.
func testPacks(n, k int, mk func(j int) entry) []*packIdx {
	var packs []*packIdx
	for i := range n {
		p := &packIdx{id: newID(), size: 1 << 20, idxSize: 50, modTime: time.Unix(0, int64(1e9+i))}
		for j := range k {
			e := mk(j)
			e.ref, _ = Sum(SHA256, []byte{byte(i), byte(j)})
			e.packID = p.id
			p.entries = append(p.entries, e)
		}
		packs = append(packs, p)
	}
	return packs
}
