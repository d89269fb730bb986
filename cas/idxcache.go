package cas

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"iter"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
)

// The index cache holds what every pack index of the store said, at some
// refresh, in one file sorted by ref: a process's first lookup reads it and
// searches it in place, where it would read, check and decode every index
// (one file per pack written: after hundreds of checkpoints, most of the
// time of a small operation). It is advisory: the indexes stay the truth.
// A pack is taken from the cache only when its index is listed with the
// size and time the cache recorded (dropFromPack rewrites an index, and it
// always shrinks), any other is read; a damaged or missing cache costs the
// reads, nothing else. Older trove binaries neither read nor mind it.
//
// Layout: idxCacheMagic; uvarint pack count; per pack its 32-digit id, uvarint
// pack size, uvarint index size, varint index mtime (ns, 0 for none); then
// uvarint entry count and the entries as fixed records (idxRecSize bytes,
// below), sorted by algorithm then digest; then the CRC-32C of all before.
const (
	idxCacheMagic = "trove-idxcache-1\n"
	// record: algo, codec, 2 zero bytes, pack number (uint32), digest,
	// then off, n, size, inner, stored (int64 each), little endian.
	idxRecSize = 4 + 4 + 32 + 5*8
	// idxCacheMin is how many indexes a store needs for the cache to be
	// read or written: fewer are read in well under a millisecond, and the
	// cache takes twice their bytes.
	idxCacheMin = 32
	// idxCacheMinBytes is the index bytes for which the cache is worth it
	// however few the indexes: AutoPack leaves a few indexes of thousands
	// of entries, each decoded and put in a map where the cache is searched
	// in place.
	idxCacheMinBytes = 64 << 10
	// idxCacheRewrite is how many indexes a refresh must read (or find
	// gone) before it writes the cache again: the rewrite costs about what
	// reading a few dozen indexes does.
	idxCacheRewrite = 8
)

var idxCastagnoli = crc32.MakeTable(crc32.Castagnoli)

func (s *Store) idxCacheName() string { return s.cfg.dir + "/index.cache" }

// idxCacheWorth reports whether indexes listed are enough, in number or
// bytes, for the cache to be read and written.
func idxCacheWorth(listed map[string]backend.Info) bool {
	if len(listed) >= idxCacheMin {
		return true
	}
	var n int64
	for _, fi := range listed {
		n += fi.Size
	}
	return n >= idxCacheMinBytes
}

// idxTable is a decoded cache: its packs by number and its records.
type idxTable struct {
	packs []*packIdx // by the records' pack number
	recs  []byte     // len(recs) % idxRecSize == 0, sorted by ref

	once   sync.Once
	byPack [][]int32 // record numbers of each pack, made on first need
}

func (t *idxTable) len() int { return len(t.recs) / idxRecSize }

func (t *idxTable) rec(i int) []byte { return t.recs[i*idxRecSize : (i+1)*idxRecSize] }

func recRef(r []byte) Ref {
	var ref Ref
	ref.algo = Algorithm(r[0])
	copy(ref.digest[:], r[8:40])
	return ref
}

// recPack is the number of record r's pack in its table.
func recPack(r []byte) uint32 { return binary.LittleEndian.Uint32(r[4:]) }

// cmpRec compares the ref of record r with algo and digest, in place.
func cmpRec(r []byte, algo byte, digest []byte) int {
	if c := cmp.Compare(r[0], algo); c != 0 {
		return c
	}
	return bytes.Compare(r[8:40], digest)
}

func recEntry(r []byte, p *packIdx) entry {
	le := binary.LittleEndian
	return entry{
		ref:    recRef(r),
		codec:  Codec(r[1]),
		off:    int64(le.Uint64(r[40:])),
		n:      int64(le.Uint64(r[48:])),
		size:   int64(le.Uint64(r[56:])),
		inner:  int64(le.Uint64(r[64:])),
		stored: int64(le.Uint64(r[72:])),
		packID: p.id,
	}
}

func appendRec(b []byte, e entry, pack uint32) []byte {
	le := binary.LittleEndian
	b = append(b, byte(e.ref.algo), byte(e.codec), 0, 0)
	b = le.AppendUint32(b, pack)
	b = append(b, e.ref.digest[:]...)
	for _, v := range [...]int64{e.off, e.n, e.size, e.inner, e.stored} {
		b = le.AppendUint64(b, uint64(v))
	}
	return b
}

// holding returns the records of ref, each with its pack, in a range
// found by one binary search.
func (t *idxTable) holding(ref Ref) iter.Seq2[[]byte, *packIdx] {
	return func(yield func([]byte, *packIdx) bool) {
		n := t.len()
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if cmpRec(t.rec(m), byte(ref.algo), ref.digest[:]) < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for ; lo < n; lo++ {
			r := t.rec(lo)
			if cmpRec(r, byte(ref.algo), ref.digest[:]) != 0 || !yield(r, t.packs[recPack(r)]) {
				return
			}
		}
	}
}

// find returns an entry of ref whose pack ok accepts.
func (t *idxTable) find(ref Ref, ok func(*packIdx) bool) (entry, bool) {
	for r, p := range t.holding(ref) {
		if ok(p) {
			return recEntry(r, p), true
		}
	}
	return entry{}, false
}

// entriesOf returns the records of pack number k, in ref order. The
// records are grouped by pack once, in one pass: a listing of every blob
// asks for each pack in turn.
func (t *idxTable) entriesOf(k int) []entry {
	t.once.Do(func() {
		t.byPack = make([][]int32, len(t.packs))
		for i := range t.len() {
			n := binary.LittleEndian.Uint32(t.rec(i)[4:])
			t.byPack[n] = append(t.byPack[n], int32(i))
		}
	})
	out := make([]entry, 0, len(t.byPack[k]))
	for _, i := range t.byPack[k] {
		out = append(out, recEntry(t.rec(int(i)), t.packs[k]))
	}
	return out
}

var errIdxCache = errors.New("index cache damaged")

// decodeIdxCache parses a cache; its packs are marked as from it (cached,
// with their number in it).
func decodeIdxCache(b []byte) (*idxTable, error) {
	if len(b) < len(idxCacheMagic)+4 || string(b[:len(idxCacheMagic)]) != idxCacheMagic {
		return nil, errIdxCache
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, idxCastagnoli) != binary.LittleEndian.Uint32(b[len(body):]) {
		return nil, errIdxCache
	}
	r := body[len(idxCacheMagic):]
	uv := func() uint64 {
		v, k := binary.Uvarint(r)
		if k <= 0 {
			r = nil
			return 0
		}
		r = r[k:]
		return v
	}
	np := uv()
	if np > uint64(len(r)/34) {
		return nil, errIdxCache
	}
	t := &idxTable{packs: make([]*packIdx, 0, np)}
	for range np {
		if len(r) < 32 {
			return nil, errIdxCache
		}
		p := &packIdx{id: string(r[:32]), cached: true, num: len(t.packs)}
		r = r[32:]
		size, idxSize := uv(), uv()
		p.size, p.idxSize = int64(size), int64(idxSize)
		mt, k := binary.Varint(r)
		if k <= 0 || !validID(p.id) || size > maxStored || idxSize > maxStored {
			return nil, errIdxCache
		}
		r = r[k:]
		if mt != 0 {
			p.modTime = time.Unix(0, mt)
		}
		t.packs = append(t.packs, p)
	}
	ne := uv()
	if r == nil || ne > uint64(len(r)/idxRecSize) || uint64(len(r)) != ne*idxRecSize {
		return nil, errIdxCache
	}
	t.recs = r
	if !validRecs(r, len(t.packs)) {
		return nil, errIdxCache
	}
	return t, nil
}

// validRecs reports whether recs, whole records, name packs below npacks,
// hold only what a pack index would (decodeIndex) and are in ref order. It
// runs over every record of the cache at each process's first lookup, so
// it reads each record once, with no call per record: the order by the
// algorithm and the digest's first 8 bytes, the rest of the digest only on
// a tie; the five numbers checked at once unless one has a high bit set.
func validRecs(recs []byte, npacks int) bool {
	le := binary.LittleEndian
	var prevAlgo byte
	var prevHi uint64
	for i := 0; i+idxRecSize <= len(recs); i += idxRecSize {
		rec := recs[i : i+idxRecSize : i+idxRecSize]
		algo, codec := rec[0], Codec(rec[1])
		if !Algorithm(algo).valid() || (codec != CodecRaw && codec != CodecZstd && codec != codecSolid) ||
			uint64(le.Uint32(rec[4:])) >= uint64(npacks) {
			return false
		}
		// maxStored is 1<<62: a number over it has bit 62 or 63 set.
		if (le.Uint64(rec[40:])|le.Uint64(rec[48:])|le.Uint64(rec[56:])|le.Uint64(rec[64:])|le.Uint64(rec[72:]))>>62 != 0 {
			for off := 40; off < idxRecSize; off += 8 {
				if le.Uint64(rec[off:]) > maxStored {
					return false
				}
			}
		}
		hi := binary.BigEndian.Uint64(rec[8:])
		if i > 0 && (algo < prevAlgo || algo == prevAlgo && (hi < prevHi ||
			hi == prevHi && bytes.Compare(recs[i-idxRecSize+8:i-idxRecSize+40], rec[8:40]) > 0)) {
			return false
		}
		prevAlgo, prevHi = algo, hi
	}
	return true
}

// encodeIdxCache writes a cache of packs, taking the entries of those
// that came from the old table t (nil: none) from it.
func encodeIdxCache(packs []*packIdx, t *idxTable) []byte {
	slices.SortFunc(packs, func(a, b *packIdx) int { return cmp.Compare(a.id, b.id) })
	num := make(map[*packIdx]uint32, len(packs))
	b := []byte(idxCacheMagic)
	b = binary.AppendUvarint(b, uint64(len(packs)))
	n := 0 // new entries
	for i, p := range packs {
		num[p] = uint32(i)
		b = append(b, p.id...)
		b = binary.AppendUvarint(b, uint64(p.size))
		b = binary.AppendUvarint(b, uint64(p.idxSize))
		var mt int64
		if !p.modTime.IsZero() {
			mt = p.modTime.UnixNano()
		}
		b = binary.AppendVarint(b, mt)
		if !p.cached {
			n += len(p.entries)
		}
	}
	// The old table's records are in order already: only the new ones
	// are sorted, then the two merged. Sorting them all was most of a
	// rewrite's CPU (about 2 ms at 8,000 records), inside a create.
	var old *idxTable
	var renum []int64 // of the old table's packs: the number now, -1 gone
	kept := 0
	if t != nil {
		old, renum = t, make([]int64, len(t.packs))
		for i, p := range t.packs {
			renum[i] = -1
			if k, ok := num[p]; ok {
				renum[i] = int64(k)
			}
		}
		for i := range t.len() {
			if renum[recPack(t.rec(i))] >= 0 {
				kept++
			}
		}
	}
	add := make([]byte, 0, n*idxRecSize)
	for _, p := range packs {
		if !p.cached {
			for _, e := range p.entries {
				add = appendRec(add, e, num[p])
			}
		}
	}
	add = sortRecs(add)
	b = binary.AppendUvarint(b, uint64(kept+len(add)/idxRecSize))
	b = slices.Grow(b, kept*idxRecSize+len(add)+4)
	b = mergeRecs(b, old, renum, add)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, idxCastagnoli))
}

// mergeRecs appends to dst the records of t whose pack renum keeps
// (renumbered) and those of add, each sorted by ref, in order; t's first
// on a tie.
func mergeRecs(dst []byte, t *idxTable, renum []int64, add []byte) []byte {
	if t != nil {
		for i := range t.len() {
			r := t.rec(i)
			k := renum[recPack(r)]
			if k < 0 {
				continue
			}
			for len(add) > 0 && cmpRec(add, r[0], r[8:40]) < 0 {
				dst, add = append(dst, add[:idxRecSize]...), add[idxRecSize:]
			}
			dst = append(dst, r...)
			binary.LittleEndian.PutUint32(dst[len(dst)-idxRecSize+4:], uint32(k))
		}
	}
	return append(dst, add...)
}

// sortRecs returns fixed records sorted by ref: by a key of the algorithm
// and the digest's first 8 bytes (digests are uniform), the rest only on a
// tie.
func sortRecs(recs []byte) []byte {
	type key struct {
		algo byte
		hi   uint64
		i    int
	}
	n := len(recs) / idxRecSize
	keys := make([]key, n)
	for i := range keys {
		r := recs[i*idxRecSize:]
		keys[i] = key{r[0], binary.BigEndian.Uint64(r[8:16]), i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.algo, b.algo); c != 0 {
			return c
		}
		if c := cmp.Compare(a.hi, b.hi); c != 0 {
			return c
		}
		if c := cmpRec(recs[a.i*idxRecSize:], recs[b.i*idxRecSize], recs[b.i*idxRecSize+8:b.i*idxRecSize+40]); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	sorted := make([]byte, 0, len(recs))
	for _, k := range keys {
		sorted = append(sorted, recs[k.i*idxRecSize:(k.i+1)*idxRecSize]...)
	}
	return sorted
}

// readIdxCache reads the cache; nil when there is none or it is damaged.
// On a local disk it is mapped, not read (backend.Mapper): a process
// searches a few records of it, and reading the whole file into fresh
// memory cost a page fault every 4 KiB (137 of a dry run's 1,930 on the
// cpbench store, the cache growing with the history). The cache is only
// ever replaced by a rename (WriteFile) or removed, never written in
// place, so the mapping stays whole; it is released once the table is
// garbage (the table's records are its bytes, and nothing keeps a slice
// of them past the table).
func (s *Store) readIdxCache(ctx context.Context) *idxTable {
	name := s.idxCacheName()
	data, release, err := backend.MapFile(ctx, s.st, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.cfg.log.Debug("cas: index cache unreadable", "name", name, "err", err)
		return nil
	}
	t, err := decodeIdxCache(data)
	if err != nil {
		_ = release()
		s.cfg.log.Warn("cas: index cache damaged, reading the indexes", "name", name, "err", err)
		return nil
	}
	runtime.AddCleanup(t, func(release func() error) { _ = release() }, release)
	return t
}
