package statcache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"unsafe"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// The cache is written as two blocks: magic, the length of the first as 8
// bytes (little-endian, as every fixed-width field), the first, the second,
// both raw (decoding was on a dry run's critical path: the walk waits for
// the cache), each ending with the CRC-32C of its bytes (the second's
// started from the first's: headSum). A snapshot encodes the first (the
// directories, final once its files are stored) while it builds its trees,
// and writes the second (the directories' trees, the trees and the last
// snapshot) after.
//
// A reader checks both checksums and decodes a directory's record only
// when it is asked for (see lazy): a dry run's walk starts at once and
// decodes each record as it reaches it, on its own goroutines, and only
// the few trees and directory trees a plan looks up are ever turned into
// strings. So both blocks have tables to find things by: the first holds
// the number of directories, of names, and the size of a hash table
// (a power of two), then each record's offset (uint32, in record order),
// the table (uint32 slots: record index + 1, 0 empty; FNV-1a of the
// path, linear probing), then the records: path, stat and verified time
// at fixed width, whether listed (recRemoved in a sidecar), the names,
// zeros up to a multiple of 8 in the file, an entry per name (entrySize
// bytes, zeros for none), then the entries' refs (ref, base, delta as
// appendCacheRef writes them). The second holds the last snapshot, the
// file's nonce, the base a sidecar is of (fileID; zeros for a cache), the
// alias times (Cache.alias), the number of directories and each one's
// tree ref at fixed width (refSize) in record order, then the number of
// trees, the size of their hash table and the table (uint32 slots:
// offset + 1 of the tree's record; the first four bytes of the digest as
// the hash), then the trees: binary ref (algorithm and digest), length,
// bytes, flag (treeCurrent, treeOlder, treeGone in a sidecar).

// Encode writes the whole cache.
func (c *Cache) Encode() []byte { return c.EncodeTail(c.EncodeHead()) }

// Head is the first block as planned by EncodeHead: the order it holds
// the directories in, its start (counts, offsets, table) and its size. The
// records are written by WriteParts, through a buffer: built whole, the
// block was 0.8 MB of fresh memory on the cpbench tree.
type Head struct {
	paths []string
	recs  []*Dir
	pre   []byte
	size  int // bytes of the block, its CRC included
}

// tableSize is the slots of a hash table of n keys: a power of two, at
// least twice n.
func tableSize(n int) int {
	ts := 1
	for ts < 2*n {
		ts <<= 1
	}
	return ts
}

// pathHash is FNV-1a of a directory's path, the first block's table's hash.
func pathHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// putSlot sets v in the first free slot of table (a power of two of
// uint32 slots) from hash h on.
func putSlot(table []byte, h uint32, v uint32) {
	mask := uint32(len(table)/4 - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		if binary.LittleEndian.Uint32(table[4*p:]) == 0 {
			binary.LittleEndian.PutUint32(table[4*p:], v)
			return
		}
	}
}

// headAt is where the first block starts in the file: the magic, then
// its length as 8 bytes, so that an encoder knows each byte's place in the
// file and can align the entries (see entrySize).
const headAt = len(cacheMagic) + 8

// EncodeHead plans the first block: the directories' order, offsets and
// table, and its size.
func (c *Cache) EncodeHead() Head {
	c.Full()
	nd := len(c.Dirs)
	h := Head{paths: make([]string, 0, nd), recs: make([]*Dir, 0, nd)}
	names := 0
	for _, r := range c.Dirs {
		names += len(r.Names)
	}
	ts := tableSize(nd)
	b := binary.AppendUvarint(nil, uint64(nd))
	b = binary.AppendUvarint(b, uint64(names))
	b = binary.AppendUvarint(b, uint64(ts))
	offs := len(b)
	b = append(b, make([]byte, 4*nd+4*ts)...)
	table := b[offs+4*nd:]
	pos := len(b) // where the next record starts in the block
	// In the order a walk reaches them (the table finds them in any):
	// records the walk reads one after another are then near each other
	// in the mapped file, not spread over all of it.
	for d := range c.Dirs {
		h.paths = append(h.paths, d)
	}
	slices.SortFunc(h.paths, walkOrder)
	for i, d := range h.paths {
		r := c.Dirs[d]
		h.recs = append(h.recs, r)
		binary.LittleEndian.PutUint32(b[offs+4*i:], uint32(pos-len(b)))
		putSlot(table, pathHash(d), uint32(i+1))
		pos += recordSize(d, r, pos)
	}
	h.pre, h.size = b, pos+crc32.Size
	return h
}

// walkOrder orders directories as a walk that takes the last queued
// directory first reaches them: a directory before those below it, and
// of two siblings the one whose name sorts last first. "." is the root.
func walkOrder(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == ".":
		return -1
	case b == ".":
		return 1
	}
	for {
		ca, ra, moreA := strings.Cut(a, "/")
		cb, rb, moreB := strings.Cut(b, "/")
		if ca != cb {
			return strings.Compare(cb, ca)
		}
		switch {
		case !moreA:
			return -1 // a is b's ancestor
		case !moreB:
			return 1
		}
		a, b = ra, rb
	}
}

// recordSize is the bytes appendRecord writes for d's record r at pos.
func recordSize(d string, r *Dir, pos int) int {
	n := uvarintLen(len(d)) + len(d) + statSize + 9 + uvarintLen(len(r.Names))
	for _, name := range r.Names {
		n += uvarintLen(len(name)) + len(name)
	}
	n += (8 - (headAt+pos+n)%8) % 8
	for _, e := range r.Ents {
		n += entrySize + int(e.n)
	}
	return n
}

// appendRecord appends d's record r, which starts at pos in the block.
func (c *Cache) appendRecord(b []byte, d string, r *Dir, pos int) []byte {
	start := len(b)
	b = wire.AppendStr(b, d)
	b = appendStat(b, r.St)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Verified))
	switch {
	case r.removed:
		b = append(b, recRemoved)
	default:
		b = wire.AppendBool(b, r.Listed)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Names)))
	for _, n := range r.Names {
		b = wire.AppendStr(b, n)
	}
	for (headAt+pos+len(b)-start)%8 != 0 {
		b = append(b, 0)
	}
	// The entries, then their refs: each entry's offset is where its refs
	// will be.
	refs := pos + len(b) - start + entrySize*len(r.Ents)
	for _, e := range r.Ents {
		b = appendEntryFixed(b, e, uint32(refs))
		refs += int(e.n)
	}
	for _, e := range r.Ents {
		if e.n > 0 {
			b = append(b, c.rawRefs(e)...)
		}
	}
	return b
}

// EncodeTail encodes the directories' trees, the trees and the last
// snapshot after head and returns the whole file.
func (c *Cache) EncodeTail(head Head) []byte {
	var b bytes.Buffer
	_ = c.WriteParts(&b, head) // a bytes.Buffer takes every write
	return b.Bytes()
}

// WriteParts writes the whole file to w: the magic and the first block's
// length, the first block (head's own bytes), then the second block
// through a buffer of tailChunk bytes, its CRC-32C summed as it goes.
// Built whole, the second block was 0.6 MB of fresh memory on the
// cpbench tree (a page fault every 4 KiB, and its trees copied once more),
// for one write.
func (c *Cache) WriteParts(w io.Writer, head Head) error {
	return c.WritePartsAfter(w, head, nil)
}

// WritePartsAfter is WriteParts that, when ready is not nil, writes the
// first block, then calls ready before the rest: until it returns, the
// directories' trees, the trees and the last snapshot (TreeOf, Trees,
// Older, Last) may still change. A snapshot writes the first block so
// while it finishes them. An error from ready stops the write there.
func (c *Cache) WritePartsAfter(w io.Writer, head Head, ready func() error) error {
	prefix := binary.LittleEndian.AppendUint64([]byte(cacheMagic), uint64(head.size))
	if _, err := w.Write(prefix); err != nil {
		return err
	}
	t := tailWriter{w: w, b: make([]byte, 0, tailChunk+tailRoom)}
	t.bytes(head.pre)
	pos := len(head.pre)
	for i, r := range head.recs {
		at := len(t.b)
		t.b = c.appendRecord(t.b, head.paths[i], r, pos)
		pos += len(t.b) - at
		t.spill()
	}
	t.flush()
	sum := t.crc
	if t.err == nil {
		_, t.err = w.Write(binary.LittleEndian.AppendUint32(t.b, sum))
	}
	if t.err != nil {
		return t.err
	}
	if pos+crc32.Size != head.size {
		// The records changed since EncodeHead: the file would not read.
		return fmt.Errorf("%w: the first block took %d bytes, planned %d", ErrDamaged, pos+crc32.Size, head.size)
	}
	if ready != nil {
		if err := ready(); err != nil {
			return err
		}
	}
	t = tailWriter{w: w, b: t.b[:0], crc: sum}
	t.b = wire.AppendStr(t.b, c.Last.ID)
	t.b = appendCacheRef(t.b, c.Last.Tree)
	t.b = binary.AppendVarint(t.b, c.Last.Verified)
	t.b = binary.LittleEndian.AppendUint64(t.b, rand.Uint64()) // this file's nonce (fileID)
	t.b = c.over.append(t.b)
	t.b = binary.AppendUvarint(t.b, uint64(len(c.alias)))
	for _, v := range c.alias {
		t.b = binary.AppendVarint(t.b, v)
	}
	t.b = binary.AppendUvarint(t.b, uint64(len(head.paths)))
	for _, d := range head.paths {
		t.b = appendFixedRef(t.b, c.TreeOf[d])
		t.spill()
	}
	// The trees' table first: their offsets, from their sizes.
	type treeRec struct {
		ref  string
		bin  []byte
		data []byte
	}
	recs := make([]treeRec, 0, len(c.Trees))
	var bins []byte
	for r, tree := range c.Trees {
		at := len(bins)
		var err error
		if bins, err = wire.AppendRef(bins, r); err != nil || len(bins)-at != refSize-1 {
			bins = bins[:at] // not a ref: dropped, it only costs a read
			continue
		}
		recs = append(recs, treeRec{r, bins[at:len(bins):len(bins)], tree})
	}
	ts := tableSize(len(recs))
	table := make([]byte, 4*ts)
	off := 0
	for _, r := range recs {
		putSlot(table, binary.LittleEndian.Uint32(r.bin[1:]), uint32(off+1))
		off += len(r.bin) + uvarintLen(len(r.data)) + len(r.data) + 1
	}
	t.b = binary.AppendUvarint(t.b, uint64(len(recs)))
	t.b = binary.AppendUvarint(t.b, uint64(ts))
	t.bytes(table)
	for _, r := range recs {
		t.b = append(t.b, r.bin...)
		t.b = binary.AppendUvarint(t.b, uint64(len(r.data)))
		t.bytes(r.data)
		switch {
		case c.gone[r.ref]:
			t.b = append(t.b, treeGone)
		case c.Older[r.ref]:
			t.b = append(t.b, treeOlder)
		default:
			t.b = append(t.b, treeCurrent)
		}
		t.spill()
	}
	t.flush()
	t.b = binary.LittleEndian.AppendUint32(t.b, t.crc)
	_, err := t.w.Write(t.b)
	return cmp.Or(t.err, err)
}

// uvarintLen is how many bytes binary.AppendUvarint writes for n.
func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// tailChunk is how many bytes of the second block tailWriter holds
// before it writes them; tailRoom is the most one record adds past it
// (an entry's three refs, or a tree's ref, length and flag).
const (
	tailChunk = 64 << 10
	tailRoom  = 3*cacheRefMax + binary.MaxVarintLen64 + 1
)

// tailWriter writes the second block in chunks, summing its CRC-32C.
type tailWriter struct {
	w   io.Writer
	b   []byte
	crc uint32
	err error
}

// spill writes what is held once it reaches tailChunk.
func (t *tailWriter) spill() {
	if len(t.b) >= tailChunk {
		t.flush()
	}
}

// flush writes what is held (after the first error, only drops it).
func (t *tailWriter) flush() {
	t.crc = crc32.Update(t.crc, castagnoli, t.b)
	if t.err == nil {
		_, t.err = t.w.Write(t.b)
	}
	t.b = t.b[:0]
}

// bytes adds p: held when it fits, else written as it is.
func (t *tailWriter) bytes(p []byte) {
	if len(t.b)+len(p) > tailChunk {
		t.flush()
	}
	if len(p) <= tailChunk {
		t.b = append(t.b, p...)
		return
	}
	t.crc = crc32.Update(t.crc, castagnoli, p)
	if t.err == nil {
		_, t.err = t.w.Write(p)
	}
}

// headSum is the CRC-32C that ends the first block: the second block's
// CRC starts from it. Two processes snapshotting one workspace at once
// write the file over each other; a first block of one and a second of the
// other, each whole, would otherwise both check, and pair the one's
// entries (in its map order) with the other's refs.
func headSum(block []byte) uint32 {
	if len(block) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(block[len(block)-4:])
}

// castagnoli is the CRC-32C table (hardware on amd64 and arm64). The cache
// only needs damage detected: a wrong entry costs a rehash at most, and
// whoever can write the store can write manifests too.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheRefMax is the most bytes appendCacheRef writes: flag, algorithm
// and a 32-byte digest (cas.Ref.Digest).
const cacheRefMax = 2 + 32

// appendCacheRef writes a ref as a flag byte and, when set, its algorithm
// byte and digest (the tree objects' form); "" is one zero byte.
func appendCacheRef(b []byte, s string) []byte {
	if s == "" {
		return append(b, 0)
	}
	out, err := wire.AppendRef(append(b, 1), s)
	if err != nil {
		return append(b, 0) // not a ref: dropped, it only costs a rehash
	}
	return out
}

func cacheRef(r *wire.Reader) string {
	if r.Err != nil || len(r.B) == 0 {
		r.Err = ErrDamaged
		return ""
	}
	set := r.B[0]
	r.B = r.B[1:]
	if set == 0 {
		return ""
	}
	return r.Ref()
}

// skipCacheRef passes over what cacheRef reads, reporting whether a ref
// is set.
func skipCacheRef(r *wire.Reader) bool {
	// A walk checks three per entry, 20,000 on the cpbench tree: the
	// algorithm's name was formatted for each (for an unknown one, by
	// fmt), a tenth of decoding a record.
	if r.Err != nil || len(r.B) == 0 {
		r.Err = ErrDamaged
		return false
	}
	set := r.B[0] != 0
	n := 1
	if set {
		n += 33
		if len(r.B) < n || !refAlgo[r.B[1]] {
			r.Err = ErrDamaged
			return false
		}
	}
	if len(r.B) < n {
		r.Err = ErrDamaged
		return false
	}
	r.B = r.B[n:]
	return set
}

// refAlgo tells the algorithm bytes whose refs Reader.Ref can spell.
var refAlgo = func() (ok [256]bool) {
	for a := range ok {
		ok[a] = len("blob:")+len(cas.Algorithm(a).String())+1+64 <= wire.RefLen
	}
	return ok
}()

// statSize is the bytes of a Stat at fixed width: mode, then size,
// mtime, ctime, inode and device.
const statSize = 4 + 5*8

// entrySize is the bytes of an entry in the first block: an Entry as Go
// lays it out in memory on a 64-bit little-endian machine (mode, padding,
// size, mtime, ctime, inode, device, verified, offset of its refs in the
// block, their length, padding), at an offset in the file that is a
// multiple of 8. Where the layout is the machine's (entryMapped), a
// record's entries are its bytes, read where they are, not copied: a
// walk's copies were a tenth of a dry run's page faults. A name without an
// entry has zeros.
const entrySize = 64

// entryMapped reports whether Entry is laid out as the file holds it.
var entryMapped = func() bool {
	var e Entry
	var st Stat
	one := uint16(1)
	return *(*byte)(unsafe.Pointer(&one)) == 1 && unsafe.Sizeof(e) == entrySize &&
		unsafe.Offsetof(e.St) == 0 && unsafe.Offsetof(e.Verified) == 48 && unsafe.Offsetof(e.off) == 56 && unsafe.Offsetof(e.n) == 60 &&
		unsafe.Offsetof(st.Mode) == 0 && unsafe.Sizeof(st.Mode) == 4 && unsafe.Offsetof(st.Size) == 8 && unsafe.Offsetof(st.Mtime) == 16 &&
		unsafe.Offsetof(st.Ctime) == 24 && unsafe.Offsetof(st.Ino) == 32 && unsafe.Offsetof(st.Dev) == 40
}()

// appendEntryFixed writes e, its refs at off, as entrySize bytes.
func appendEntryFixed(b []byte, e Entry, off uint32) []byte {
	if e.n == 0 {
		return append(b, make([]byte, entrySize)...)
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(e.St.Mode))
	b = le.AppendUint32(b, 0)
	for _, v := range [...]int64{e.St.Size, e.St.Mtime, e.St.Ctime, int64(e.St.Ino), int64(e.St.Dev), e.Verified} {
		b = le.AppendUint64(b, uint64(v))
	}
	b = le.AppendUint32(b, off)
	b = le.AppendUint16(b, e.n)
	return le.AppendUint16(b, 0)
}

// readEntryFixed reads what appendEntryFixed wrote, from entrySize bytes.
func readEntryFixed(b []byte) Entry {
	le := binary.LittleEndian
	return Entry{
		St:       readStatAt(b, 8),
		Verified: int64(le.Uint64(b[48:])),
		off:      le.Uint32(b[56:]),
		n:        le.Uint16(b[60:]),
	}
}

// fixed returns the next n bytes of r, or nil (and r damaged) when fewer
// are left.
func fixed(r *wire.Reader, n int) []byte {
	if r.Err != nil || len(r.B) < n {
		r.Err = ErrDamaged
		return nil
	}
	b := r.B[:n:n]
	r.B = r.B[n:]
	return b
}

func appendStat(b []byte, st Stat) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(st.Mode))
	b = le.AppendUint64(b, uint64(st.Size))
	b = le.AppendUint64(b, uint64(st.Mtime))
	b = le.AppendUint64(b, uint64(st.Ctime))
	b = le.AppendUint64(b, st.Ino)
	return le.AppendUint64(b, st.Dev)
}

// readStat reads what appendStat wrote from b, statSize bytes at least.
func readStat(b []byte) Stat { return readStatAt(b, 4) }

// readStatAt reads a stat whose mode is b's first 4 bytes and its other
// fields 8 bytes each from at.
func readStatAt(b []byte, at int) Stat {
	le := binary.LittleEndian
	return Stat{
		Mode:  fs.FileMode(le.Uint32(b)),
		Size:  int64(le.Uint64(b[at:])),
		Mtime: int64(le.Uint64(b[at+8:])),
		Ctime: int64(le.Uint64(b[at+16:])),
		Ino:   le.Uint64(b[at+24:]),
		Dev:   le.Uint64(b[at+32:]),
	}
}
