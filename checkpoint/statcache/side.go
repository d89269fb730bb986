package statcache

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// A sidecar is what a snapshot writes instead of the whole cache when
// little changed since the cache was last written whole (its base): the
// records and directories' trees that differ from the base's, a removed
// directory's record marked so (recRemoved), the trees the base lacks or
// holds as older or newer than they now are, and the last snapshot. It is
// encoded as a cache is (Encode), its second block naming its base
// (fileID): a reader takes it only over that very file (Overlay), so a
// base written since, or a sidecar written over another, reads as none.
// Rewriting the whole cache after every snapshot wrote 1.3 MB on the
// cpbench tree where a few directories changed.
//
// An entry the snapshot verified keeps the base's bytes, and so the time
// the base's writer verified it at: the sidecar's alias (Cache.alias)
// lists the times that count as the last snapshot's (ByLastAt). That
// holds because a tree snapshot verifies every entry it leaves (Relist
// drops the rest) and a record it left as the base has it holds only
// such entries. A sidecar is written whole, as a new file, never
// changed: readers map it as they do the base.

// recRemoved, in a record's listed byte, marks a sidecar's record of a
// directory removed since its base.
const recRemoved = 2

// fileID tells a cache file apart from any other: its size, its last CRC
// (over both blocks) and a nonce its writer drew. A sidecar holds its
// base's; a cache, zeros.
type fileID struct {
	size  uint64
	sum   uint32
	nonce uint64
}

// append writes id at fixed width.
func (id fileID) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, id.size)
	b = binary.LittleEndian.AppendUint32(b, id.sum)
	return binary.LittleEndian.AppendUint64(b, id.nonce)
}

// readFileID reads what fileID.append wrote.
func readFileID(r *wire.Reader) fileID {
	b := fixed(r, 20)
	if b == nil {
		return fileID{}
	}
	le := binary.LittleEndian
	return fileID{size: le.Uint64(b), sum: le.Uint32(b[8:]), nonce: le.Uint64(b[12:])}
}

// sideMax is the most bytes a sidecar may take, as a fraction of its
// base's (1/sideMax), or sideMin: past it a snapshot writes the whole
// cache again, since each sidecar repeats everything changed since the
// base, and a reader loads the trees of both. On the cpbench tree, with
// 10 files edited between snapshots, a fraction of 1/4 cost as much CPU
// as writing the whole cache each time; 1/16, 1/32 and 1/64 less.
const (
	sideMax = 16
	sideMin = 8 << 10
)

// sideLimit is the most bytes a sidecar of c may take.
func (c *Cache) sideLimit() int { return max(int(c.base.size/sideMax), sideMin) }

// aliasMax is the most alias times a sidecar carries: each snapshot
// written as a sidecar adds one.
const aliasMax = 64

// Overlay reads the sidecar data over c, as Decode returned it: c then
// reads as the sidecar's writer left it. A sidecar of another base, or
// one that does not decode, is an error (ErrDamaged) and c is left as it
// was. Every record is checked here: the sidecar is small, and a record
// left out would leave the base's stale one in its place. c keeps slices
// of data.
func (c *Cache) Overlay(data []byte) error {
	if c.lz == nil || c.side != nil || c.full.Load() {
		return fmt.Errorf("%w: a sidecar over a cache not read from its file", ErrDamaged)
	}
	side, tl, err := decode(data)
	if err != nil {
		return err
	}
	if tl.over != c.base || len(tl.alias) > aliasMax {
		return fmt.Errorf("%w: a sidecar of another cache", ErrDamaged)
	}
	lz := side.lz
	lz.offBits = refsSide
	for i := range lz.nd {
		if lz.dir(i) == nil {
			return ErrDamaged
		}
	}
	n := 0
	lz.eachTree(func(string, []byte, byte) { n++ })
	if n != lz.nt {
		return ErrDamaged
	}
	c.side, c.sideRead = lz, side.read
	c.Last, c.alias = side.Last, tl.alias
	c.baseAlias = append(slices.Clip(tl.alias), c.Last.Verified)
	return nil
}

// ForgetBase is called once the cache was written whole: a sidecar of it
// would name a file no longer there.
func (c *Cache) ForgetBase() { c.base = fileID{} }

// Side is a sidecar as planned by PlanSide.
type Side struct {
	sub  *Cache
	size int // bytes of its records
	// same holds the directories whose records are the base's (at base
	// index i): FinishSide adds those whose tree differs.
	same []sameDir
}

type sameDir struct {
	path string
	i    int
}

// PlanSide returns the records a sidecar of the cache would hold, or
// false when the cache is to be written whole: it was not read from a
// file, or too much changed. window is the snapshots' racy window. The
// records must be final (Relist done); the trees may still change.
func (c *Cache) PlanSide(window time.Duration) (Side, bool) {
	c.Full()
	if c.base == (fileID{}) || c.lz == nil || len(c.baseAlias)+len(c.alias) > aliasMax {
		return Side{}, false
	}
	lz := c.lz
	sub := &Cache{
		Dirs: make(map[string]*Dir), TreeOf: make(map[string]string), Trees: make(map[string][]byte), Older: make(map[string]bool),
		read: c.read, added: c.added, sideRead: c.sideRead, over: c.base,
		alias: mergeAlias(c.baseAlias, c.alias),
	}
	sub.full.Store(true)
	limit := c.sideLimit()
	found := 0
	same := make([]sameDir, 0, len(c.Dirs))
	for d, r := range c.Dirs {
		i, rd := lz.find(d)
		if i >= 0 {
			found++
			if b := lz.dirFrom(i, rd); b != nil && c.sameDir(r, b, window) {
				same = append(same, sameDir{d, i})
				continue
			}
		}
		sub.Dirs[d] = r
	}
	if found < lz.nd {
		for i := range lz.nd {
			d, _, ok := lz.pathAt(i)
			if _, kept := c.Dirs[d]; ok && !kept {
				sub.Dirs[d] = &Dir{removed: true}
			}
		}
	}
	h := sub.EncodeHead()
	if h.size > limit {
		return Side{}, false
	}
	return Side{sub: sub, size: h.size, same: same}, true
}

// mergeAlias returns the times of a and b, each once.
func mergeAlias(a, b []int64) []int64 {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// sameDir reports whether the record r (the cache's) reads as the base's
// record b does: the same stat, names and entries, each verified at the
// same time, or r's at the last Relist and b's at a time the sidecar's
// alias carries (baseAlias) without being racy by it.
func (c *Cache) sameDir(r, b *Dir, window time.Duration) bool {
	if r.St != b.St || r.Listed != b.Listed || !c.sameVerified(r.Verified, Entry{St: b.St, Verified: b.Verified}, window) || !slices.Equal(r.Names, b.Names) {
		return false
	}
	for i, e := range r.Ents {
		be := b.Ents[i]
		if (e.n > 0) != (be.n > 0) {
			return false
		}
		if e.n > 0 && (e.St != be.St || !c.sameVerified(e.Verified, be, window) || !bytes.Equal(c.rawRefs(e), c.rawRefs(be))) {
			return false
		}
	}
	return true
}

// sameVerified reports whether v, a record's or an entry's verified time
// in the cache, may be left as the base's b.Verified (see sameDir).
func (c *Cache) sameVerified(v int64, b Entry, window time.Duration) bool {
	if v == b.Verified {
		return true
	}
	return c.relisted != 0 && v == c.relisted && slices.Contains(c.baseAlias, b.Verified) && !racy(b, window)
}

// FinishSide adds to the sidecar planned as s the trees that differ from
// the base's, and the last snapshot, once they are final. It reports
// false when the sidecar would be too big: the cache is then to be
// written whole.
func (c *Cache) FinishSide(s *Side) bool {
	sub, lz := s.sub, c.lz
	size := s.size
	var buf [refSize]byte
	for _, sd := range s.same {
		i := sd.i
		if !bytes.Equal(appendFixedRef(buf[:0], c.TreeOf[sd.path]), lz.treeOf[refSize*i:refSize*(i+1)]) {
			r := c.Dirs[sd.path]
			sub.Dirs[sd.path] = r
			size += recordSize(sd.path, r, 0) + 8
		}
	}
	for d := range sub.Dirs {
		if t, ok := c.TreeOf[d]; ok {
			sub.TreeOf[d] = t
		}
	}
	found := 0 // trees of the base the cache has
	for ref, data := range c.Trees {
		old := c.Older[ref]
		_, flag, ok := lz.tree(ref)
		if ok {
			found++
			if (flag == treeOlder) == old {
				continue
			}
		}
		sub.Trees[ref] = data
		if old {
			sub.Older[ref] = true
		}
		size += len(data) + refSize + 4
	}
	// A tree the base holds that the cache no longer does is marked gone:
	// a snapshot trusts one of the last snapshot's to be stored without
	// looking, and the others only grow every read of the cache.
	if found < lz.nt {
		sub.gone = make(map[string]bool)
		lz.eachMissing(c.Trees, func(ref string) {
			sub.Trees[ref] = nil
			sub.gone[ref] = true
			size += refSize + 2
		})
	}
	sub.Last = c.Last
	return size <= c.sideLimit()
}

// Write writes the sidecar (see FinishSide) to w.
func (s Side) Write(w io.Writer) error { return s.sub.WriteParts(w, s.sub.EncodeHead()) }

// eachMissing calls fn with each tree lz holds that trees lacks. A ref
// becomes a string only for fn: a lookup of one spelled in a buffer
// allocates nothing.
func (lz *lazy) eachMissing(trees map[string][]byte, fn func(ref string)) {
	r := &wire.Reader{B: lz.trees}
	var buf [wire.RefLen]byte
	for range lz.nt {
		bin := fixed(r, refSize-1)
		r.Bytes()
		lz.treeFlag(r)
		if r.Err != nil {
			return
		}
		if !refAlgo[bin[0]] {
			continue
		}
		n := copy(buf[:], "blob:")
		n += copy(buf[n:], cas.Algorithm(bin[0]).String())
		buf[n] = ':'
		n += 1 + hex.Encode(buf[n+1:], bin[1:])
		if _, ok := trees[string(buf[:n])]; !ok {
			fn(string(buf[:n]))
		}
	}
}
