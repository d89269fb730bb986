package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
	"time"
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
	// Numbers no index would hold (a negative length, read as a huge one)
	// and an unknown codec are refused too, checksum or not.
	copy(recs[idxRecSize:2*idxRecSize], recs[:idxRecSize])
	copy(recs[:idxRecSize], a)
	binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, idxCastagnoli))
	for _, damage := range []func(r []byte){
		func(r []byte) { binary.LittleEndian.PutUint64(r[48:], ^uint64(0)) },
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
