package statcache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// The cache is written as two blocks: magic, uvarint length of the first,
// the first, the second, both raw (decoding was on a dry run's critical
// path: the walk waits for the cache), each ending with the CRC-32C of its
// bytes (the second's started from the first's: headSum). A snapshot
// encodes the first (the directories, final once its files are stored)
// while it builds its trees, and writes the second (the directories'
// trees, the trees and the last snapshot) after.
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
// at fixed width, whether listed, and the names, each with a flags byte
// (an entry follows; its ctime is its mtime; its device, or its verified
// time, is its directory's) and the entry's stat and verified time at
// fixed width, little-endian, leaving out what the flags say, then its
// refs (ref, base, delta as appendCacheRef writes them). The second holds
// the last snapshot, the number of directories and each one's tree ref at
// fixed width (refSize) in record order, then the number of trees, the
// size of their hash table and the table (uint32 slots: offset + 1 of the
// tree's record; the first four bytes of the digest as the hash), then
// the trees: binary ref (algorithm and digest), length, bytes, older.

// Encode writes the whole cache.
func (c *Cache) Encode() []byte { return c.EncodeTail(c.EncodeHead()) }

// Head is the first block and the order it holds the directories in.
type Head struct {
	block []byte
	paths []string
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

// EncodeHead encodes the directories.
func (c *Cache) EncodeHead() Head {
	c.Full()
	nd := len(c.Dirs)
	h := Head{paths: make([]string, 0, nd)}
	names := 0
	size := 3*binary.MaxVarintLen64 + crc32.Size
	for d, r := range c.Dirs {
		size += 2*binary.MaxVarintLen64 + len(d) + statSize + 9
		names += len(r.Names)
		for i, n := range r.Names {
			size += binary.MaxVarintLen64 + len(n) + 1 + entryMax + int(r.Ents[i].n)
		}
	}
	ts := tableSize(nd)
	size += 4*nd + 4*ts
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(nd))
	b = binary.AppendUvarint(b, uint64(names))
	b = binary.AppendUvarint(b, uint64(ts))
	at := len(b)
	b = b[:at+4*nd+4*ts]
	clear(b[at:])
	offs, table := b[at:at+4*nd], b[at+4*nd:]
	recs := len(b)
	// In map order: the table finds them.
	for d, r := range c.Dirs {
		i := len(h.paths)
		h.paths = append(h.paths, d)
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(len(b)-recs))
		putSlot(table, pathHash(d), uint32(i+1))
		b = wire.AppendStr(b, d)
		b = appendStat(b, r.St)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Verified))
		b = wire.AppendBool(b, r.Listed)
		b = binary.AppendUvarint(b, uint64(len(r.Names)))
		for i, n := range r.Names {
			b = wire.AppendStr(b, n)
			e := r.Ents[i]
			b = appendEntry(b, e, r)
			if e.n > 0 {
				b = append(b, c.rawRefs(e)...)
			}
		}
	}
	h.block = appendCRC(b)
	return h
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
	prefix := binary.AppendUvarint([]byte(cacheMagic), uint64(len(head.block)))
	if _, err := w.Write(prefix); err != nil {
		return err
	}
	if _, err := w.Write(head.block); err != nil {
		return err
	}
	if ready != nil {
		if err := ready(); err != nil {
			return err
		}
	}
	t := tailWriter{w: w, b: make([]byte, 0, tailChunk+tailRoom), crc: headSum(head.block)}
	t.b = wire.AppendStr(t.b, c.Last.ID)
	t.b = appendCacheRef(t.b, c.Last.Tree)
	t.b = binary.AppendVarint(t.b, c.Last.Verified)
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
		t.b = wire.AppendBool(t.b, c.Older[r.ref])
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

// appendCRC appends the CRC-32C of b.
func appendCRC(b []byte) []byte { return appendCRCFrom(b, 0) }

// appendCRCFrom appends the CRC-32C of b[from:].
func appendCRCFrom(b []byte, from int) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[from:], castagnoli))
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
	if r.Err != nil || len(r.B) == 0 {
		r.Err = ErrDamaged
		return false
	}
	set := r.B[0] != 0
	n := 1
	if set {
		n += 33
		if len(r.B) < n || len("blob:")+len(cas.Algorithm(r.B[1]).String())+1+64 > wire.RefLen {
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

// statSize is the bytes of a Stat at fixed width: mode, then size,
// mtime, ctime, inode and device.
const statSize = 4 + 5*8

// Flags of an entry in the first block: an entry follows (else none is
// there), and which of its fields are left out as its directory's or its
// mtime.
const (
	entSet byte = 1 << iota
	entCtimeIsMtime
	entDevOfDir
	entVerifiedOfDir
	entFlags = entSet | entCtimeIsMtime | entDevOfDir | entVerifiedOfDir
)

// entryMax is the most bytes appendEntry writes after the flags.
const entryMax = statSize + 8

// appendEntry writes e, an entry of the directory dir, as its flags and
// the fields they do not leave out.
func appendEntry(b []byte, e Entry, dir *Dir) []byte {
	if e.n == 0 {
		return append(b, 0)
	}
	f := entSet
	if e.St.Ctime == e.St.Mtime {
		f |= entCtimeIsMtime
	}
	if e.St.Dev == dir.St.Dev {
		f |= entDevOfDir
	}
	if e.Verified == dir.Verified {
		f |= entVerifiedOfDir
	}
	le := binary.LittleEndian
	b = append(b, f)
	b = le.AppendUint32(b, uint32(e.St.Mode))
	b = le.AppendUint64(b, uint64(e.St.Size))
	b = le.AppendUint64(b, uint64(e.St.Mtime))
	if f&entCtimeIsMtime == 0 {
		b = le.AppendUint64(b, uint64(e.St.Ctime))
	}
	b = le.AppendUint64(b, e.St.Ino)
	if f&entDevOfDir == 0 {
		b = le.AppendUint64(b, e.St.Dev)
	}
	if f&entVerifiedOfDir == 0 {
		b = le.AppendUint64(b, uint64(e.Verified))
	}
	return b
}

// readEntry reads what appendEntry wrote for an entry of dir: the zero
// Entry for none, ok false for damage.
func readEntry(r *wire.Reader, dir *Dir) (e Entry, ok bool) {
	if r.Err != nil || len(r.B) == 0 {
		return Entry{}, false
	}
	f := r.B[0]
	r.B = r.B[1:]
	if f == 0 {
		return Entry{}, true
	}
	if f&^entFlags != 0 || f&entSet == 0 {
		return Entry{}, false
	}
	n := entryMax
	for _, bit := range [...]byte{entCtimeIsMtime, entDevOfDir, entVerifiedOfDir} {
		if f&bit != 0 {
			n -= 8
		}
	}
	b := fixed(r, n)
	if b == nil {
		return Entry{}, false
	}
	le := binary.LittleEndian
	e.St.Mode = fs.FileMode(le.Uint32(b))
	e.St.Size = int64(le.Uint64(b[4:]))
	e.St.Mtime = int64(le.Uint64(b[12:]))
	b = b[20:]
	e.St.Ctime = e.St.Mtime
	if f&entCtimeIsMtime == 0 {
		e.St.Ctime, b = int64(le.Uint64(b)), b[8:]
	}
	e.St.Ino, b = le.Uint64(b), b[8:]
	e.St.Dev = dir.St.Dev
	if f&entDevOfDir == 0 {
		e.St.Dev, b = le.Uint64(b), b[8:]
	}
	e.Verified = dir.Verified
	if f&entVerifiedOfDir == 0 {
		e.Verified = int64(le.Uint64(b))
	}
	// An entry's refs are set by the caller; n marks it as one.
	e.n = 1
	return e, true
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
func readStat(b []byte) Stat {
	le := binary.LittleEndian
	return Stat{
		Mode:  fs.FileMode(le.Uint32(b)),
		Size:  int64(le.Uint64(b[4:])),
		Mtime: int64(le.Uint64(b[12:])),
		Ctime: int64(le.Uint64(b[20:])),
		Ino:   le.Uint64(b[28:]),
		Dev:   le.Uint64(b[36:]),
	}
}
