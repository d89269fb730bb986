package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/trovekit/trove/cas"
)

// The stat cache remembers, per workspace path, the lstat it had and the
// digest its content hashed to, so a snapshot reads only files whose stat
// changed. It is an optimisation only: a missing, stale or damaged cache
// costs time, never correctness, because an entry is trusted only when the
// stat matches exactly and the entry is not racy (see racy).
type statCache struct {
	entries map[string]cacheEntry
	// dirs remembers directory listings: a directory's mtime and ctime
	// change whenever an entry is added, removed or renamed in it, so while
	// its stat is unchanged (and not racy) its names are too, and the walk
	// stats them without opening and reading the directory.
	dirs map[string]dirCacheEntry
	// trees holds the tree objects of the last tree snapshot by ref, so
	// loading a checkpoint reads from cas only the trees that differ from
	// it.
	trees map[string][]byte
	// older marks the trees of trees kept from snapshots before the last.
	older map[string]bool
	// treeOf is the ref of the tree object of each directory of the last
	// tree snapshot that has one (git's cache-tree): a directory proven
	// unchanged since (see provenSame) has that tree again.
	treeOf map[string]string
	// last is the tree snapshot that wrote entries verified at its start:
	// while its manifest is stored, naming the same root tree, GC keeps
	// every blob it names, so those entries' blobs need no lookup.
	last lastSnapshot
	// read and added hold the entries' refs as the file does (three
	// appendCacheRef each: ref, base, delta): read is the decoded block
	// they were read from, added what put wrote since. An entry holds
	// where its own are, so it has no pointer: the map of thousands of
	// them costs the GC nothing to scan, nor a write barrier to fill.
	read, added []byte
}

type lastSnapshot struct {
	id, tree string
	verified int64
}

type dirCacheEntry struct {
	st       fileStat
	names    []string
	verified int64
}

type cacheEntry struct {
	st       fileStat
	verified int64 // ns: when the snapshot that last hashed or checked it started
	// refs are the entry's ref, base and delta in statCache.read, or in
	// statCache.added when off has refsAdded set (see refsOf): most
	// entries are only compared by stat, never turned into strings.
	off uint32
	n   uint16
}

// refsAdded marks an offset into statCache.added.
const refsAdded = 1 << 31

// cacheRefs is an entry's content: ref, and how it is stored when as a
// delta (base, delta; see Entry).
type cacheRefs struct{ ref, base, delta string }

// rawRefs returns the bytes of e's refs, as the file holds them.
func (c *statCache) rawRefs(e cacheEntry) []byte {
	if e.off&refsAdded != 0 {
		off := e.off &^ refsAdded
		return c.added[off : off+uint32(e.n)]
	}
	return c.read[e.off : e.off+uint32(e.n)]
}

// refsOf returns e's refs as strings.
func (c *statCache) refsOf(e cacheEntry) cacheRefs {
	r := &reader{b: c.rawRefs(e)}
	return cacheRefs{r.cacheRef(), r.cacheRef(), r.cacheRef()}
}

// cacheMagic starts the file (see encode for the rest).
const cacheMagic = "trove-statcache-11\n"

// cacheMaxBody bounds what a damaged or hostile cache decompresses to.
const cacheMaxBody = 1 << 30

// Racy windows: how close to a snapshot's start an mtime or ctime must be
// for the stat to prove nothing. Sub-second timestamps come from a clock
// that lags by at most a scheduler tick; whole-second ones may be truncated
// by a second or two (ext3, HFS+, FAT).
const (
	racyFine   = 100 * time.Millisecond
	racyCoarse = 2 * time.Second
)

func newStatCache() *statCache {
	return &statCache{entries: make(map[string]cacheEntry), dirs: make(map[string]dirCacheEntry), trees: make(map[string][]byte), older: make(map[string]bool), treeOf: make(map[string]string)}
}

// listing returns the cached names of dir when st proves them current.
func (c *statCache) listing(dir string, st fileStat, window time.Duration) ([]string, bool) {
	d, ok := c.dirs[dir]
	if !ok || d.st != st || racy(cacheEntry{st: d.st, verified: d.verified}, window) {
		return nil, false
	}
	return d.names, true
}

// lookup returns the cached digest of path when st proves the content
// unchanged: identical stat and not racy.
func (c *statCache) lookup(path string, st fileStat, window time.Duration) (string, bool) {
	e, ok := c.lookupEntry(path, st, window)
	if !ok {
		return "", false
	}
	return c.refsOf(e).ref, true
}

// lookupEntry is lookup returning the whole entry.
func (c *statCache) lookupEntry(path string, st fileStat, window time.Duration) (cacheEntry, bool) {
	e, ok := c.entries[path]
	if !ok || e.st != st || racy(e, window) {
		return cacheEntry{}, false
	}
	return e, true
}

// provenSame reports whether path, with stat st, is the file the last
// tree snapshot stored: its entry is the one that snapshot verified (not
// one a files checkpoint put since) and the stat proves the content.
func (c *statCache) provenSame(path string, st fileStat, window time.Duration) bool {
	e, ok := c.lookupEntry(path, st, window)
	return ok && c.byLast(e)
}

// byLast reports whether the last tree snapshot verified e.
func (c *statCache) byLast(e cacheEntry) bool {
	return c.last.tree != "" && e.verified == c.last.verified
}

// racy is the racy-git rule: a file whose mtime (or ctime) is not clearly
// before the moment its content was hashed may have been changed again
// within the same timestamp tick, invisibly to stat. Such an entry is
// re-hashed, whatever its stat says.
func racy(e cacheEntry, window time.Duration) bool {
	if window <= 0 {
		window = racyFine
		if e.st.mtime%int64(time.Second) == 0 {
			window = racyCoarse
		}
	}
	limit := e.verified - int64(window)
	return e.st.mtime >= limit || (e.st.ctime != 0 && e.st.ctime >= limit)
}

// put records path's stat and e's content.
func (c *statCache) put(path string, st fileStat, e *Entry, verified int64) {
	off := len(c.added)
	c.added = appendCacheRef(appendCacheRef(appendCacheRef(c.added, e.Digest), e.Base), e.Delta)
	c.entries[path] = cacheEntry{st: st, verified: verified, off: uint32(off) | refsAdded, n: uint16(len(c.added) - off)}
}

// addedMax is how many bytes of refs put may leave behind in added (those
// of entries put again or deleted since) before compactAdded drops them:
// a Manager an agent keeps for a long session puts on every snapshot.
const addedMax = 1 << 20

// compactAdded copies the refs entries still use out of added, when it has
// grown past addedMax; nothing may read the cache meanwhile.
func (c *statCache) compactAdded() {
	if len(c.added) <= addedMax {
		return
	}
	var b []byte
	for p, e := range c.entries {
		if e.off&refsAdded != 0 {
			raw := c.rawRefs(e)
			e.off = uint32(len(b)) | refsAdded
			b = append(b, raw...)
			c.entries[p] = e
		}
	}
	c.added = b
}

// reverify records that the entry of path, content unchanged, has stat st
// as of verified.
func (c *statCache) reverify(path string, ce cacheEntry, st fileStat, verified int64) {
	ce.st, ce.verified = st, verified
	c.entries[path] = ce
}

// The cache is written as three S2 blocks: magic, uvarint length of the
// first, the first, uvarint length of the second, the second, the third.
// A snapshot compresses the first two (entries and listings, final once its
// files are stored) while it builds its trees, and only the third (trees
// and the last snapshot) after; a reader decodes the three at once. Each
// block ends with the CRC-32C of its bytes. Decoded, the first is a base
// time and the entries sorted by path (verified as the distance back from
// the base, one byte for nearly all) without their refs; the second the
// base time and the listings; the third the entries' refs in the order of
// the first (beside the trees, which hold the same digests, so they
// compress against them), the trees, the tree refs of the directories
// (treeOf) in the order of the second, and the last snapshot.

// encode writes the whole cache.
func (c *statCache) encode() []byte { return c.encodeTail(c.encodeHead(c.last.verified, nil)) }

// cacheHead is the first two blocks, compressed, and the order their
// entries and listings were written in.
type cacheHead struct {
	entries, dirs []byte
	paths         []string
	order         []string // of dirs
}

// encodeHead encodes the entries and listings, verified times relative to
// base (any time; the snapshot's start keeps them short). sorted, when it
// is the entries' paths sorted (a tree snapshot's files are), spares
// sorting them again.
func (c *statCache) encodeHead(base int64, sorted []string) cacheHead {
	paths := sorted
	if !c.isKeyOrder(sorted) {
		paths = slices.Sorted(maps.Keys(c.entries))
	}
	b := make([]byte, 0, 64+len(paths)*80)
	b = binary.AppendVarint(b, base)
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		e := c.entries[p]
		b = appendStr(b, p)
		b = appendStat(b, e.st)
		b = binary.AppendVarint(b, base-e.verified)
	}
	entries := compressCache(appendCRC(b), false)
	// Directories and trees in map order: nothing needs them sorted.
	b = b[:0]
	b = binary.AppendVarint(b, base)
	b = binary.AppendUvarint(b, uint64(len(c.dirs)))
	order := make([]string, 0, len(c.dirs))
	for d, e := range c.dirs {
		order = append(order, d)
		b = appendStr(b, d)
		b = appendStat(b, e.st)
		b = binary.AppendVarint(b, base-e.verified)
		b = binary.AppendUvarint(b, uint64(len(e.names)))
		for _, n := range e.names {
			b = appendStr(b, n)
		}
	}
	return cacheHead{entries: entries, dirs: compressCache(appendCRC(b), false), paths: paths, order: order}
}

// isKeyOrder reports whether paths are the entries' paths, sorted: as
// many, in strictly increasing order, each one of them.
func (c *statCache) isKeyOrder(paths []string) bool {
	if len(paths) != len(c.entries) {
		return false
	}
	for i, p := range paths {
		if i > 0 && paths[i-1] >= p {
			return false
		}
		if _, ok := c.entries[p]; !ok {
			return false
		}
	}
	return true
}

// encodeTail encodes the refs, trees and the last snapshot after head and
// returns the whole file.
func (c *statCache) encodeTail(head cacheHead) []byte {
	// The exact bound: growing b would copy it, and the garbage of a
	// snapshot is what its GC cycles cost.
	size := 2*binary.MaxVarintLen64 + len(head.paths)*3*cacheRefMax + len(head.order)*cacheRefMax +
		binary.MaxVarintLen64 + len(c.last.id) + cacheRefMax + binary.MaxVarintLen64 + crc32.Size
	for _, t := range c.trees {
		size += cacheRefMax + binary.MaxVarintLen64 + len(t) + 1
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(head.paths)))
	for _, p := range head.paths {
		b = append(b, c.rawRefs(c.entries[p])...)
	}
	b = binary.AppendUvarint(b, uint64(len(c.trees)))
	for r, t := range c.trees {
		b = appendCacheRef(b, r)
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = appendBool(b, c.older[r])
	}
	for _, d := range head.order {
		b = appendCacheRef(b, c.treeOf[d])
	}
	b = appendStr(b, c.last.id)
	b = appendCacheRef(b, c.last.tree)
	b = binary.AppendVarint(b, c.last.verified)
	tail := compressCache(appendCRC(b), true)
	out := make([]byte, 0, len(cacheMagic)+20+len(head.entries)+len(head.dirs)+len(tail))
	out = append(out, cacheMagic...)
	out = binary.AppendUvarint(out, uint64(len(head.entries)))
	out = append(out, head.entries...)
	out = binary.AppendUvarint(out, uint64(len(head.dirs)))
	out = append(out, head.dirs...)
	return append(out, tail...)
}

// appendCRC appends the CRC-32C of b.
func appendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// compressCache is one S2 block (snappy's successor, from the zstd module):
// a few times faster than zstd's fastest level both ways. Its "better" mode
// costs about a millisecond more per 5,000 files than the fastest: on the
// second part it saves a third of the bytes (the entries' refs match the
// trees' digests far back), which count in the store's size; on the first
// (paths and stats, encoded while the snapshot builds its trees) a tenth.
func compressCache(b []byte, better bool) []byte {
	if !better {
		return s2.Encode(make([]byte, s2.MaxEncodedLen(len(b))), b)
	}
	return s2.EncodeBetter(make([]byte, s2.MaxEncodedLen(len(b))), b)
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
	out, err := appendRef(append(b, 1), s)
	if err != nil {
		return append(b, 0) // not a ref: dropped, it only costs a rehash
	}
	return out
}

func (r *reader) cacheRef() string {
	if r.err != nil || len(r.b) == 0 {
		r.err = errBadCache
		return ""
	}
	set := r.b[0]
	r.b = r.b[1:]
	if set == 0 {
		return ""
	}
	return r.ref()
}

// skipCacheRef passes over what cacheRef reads, reporting whether a ref
// is set.
func (r *reader) skipCacheRef() bool {
	if r.err != nil || len(r.b) == 0 {
		r.err = errBadCache
		return false
	}
	set := r.b[0] != 0
	n := 1
	if set {
		n += 33
		if len(r.b) < n || len("blob:")+len(cas.Algorithm(r.b[1]).String())+1+64 > len("blob:sha256:")+64 {
			r.err = errBadCache
			return false
		}
	}
	if len(r.b) < n {
		r.err = errBadCache
		return false
	}
	r.b = r.b[n:]
	return set
}

var errBadCache = errors.New("stat cache damaged")

// decodeStatCache parses what encode wrote; anything else is errBadCache.
// The three blocks are decoded at once: the cache is read before a walk
// can start.
func decodeStatCache(data []byte) (*statCache, error) {
	if !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return nil, errBadCache
	}
	rest := data[len(cacheMagic):]
	var blocks [3][]byte
	for i := range 2 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, errBadCache
		}
		blocks[i], rest = rest[k:k+int(n)], rest[k+int(n):]
	}
	blocks[2] = rest
	c := &statCache{older: make(map[string]bool)}
	var (
		wg         sync.WaitGroup
		errE, errD error
		order      []string                  // of the listings
		listed     = make(chan struct{})     // closed once order is set
		refs       = make(chan []refSpan, 1) // the entries' refs, nil on failure
	)
	wg.Go(func() { c.entries, errE = decodeEntries(blocks[0], refs) })
	wg.Go(func() {
		defer close(listed)
		c.dirs, order, errD = decodeListings(blocks[1])
	})
	err := c.decodeTail(blocks[2], refs, listed, &order)
	wg.Wait()
	if err == nil {
		err = cmp.Or(errE, errD)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// openBlock decompresses a block and checks its CRC-32C.
func openBlock(b []byte) ([]byte, error) {
	raw, err := decodeBlock(b)
	if err != nil {
		return nil, err
	}
	if len(raw) < 4 {
		return nil, errBadCache
	}
	raw, sum := raw[:len(raw)-4], binary.LittleEndian.Uint32(raw[len(raw)-4:])
	if crc32.Checksum(raw, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum", errBadCache)
	}
	return raw, nil
}

// newReader reads b; the decoded bytes are ours and never written again,
// so strings can share them.
func newReader(b []byte) *reader {
	return &reader{b: b, s: unsafe.String(unsafe.SliceData(b), len(b))}
}

// decodeEntries parses the first block, once the entries' refs (as the
// third block holds them) come from refs: each entry goes into the map as
// it is read, with no copy of them all to gather first.
func decodeEntries(block []byte, refs <-chan []refSpan) (map[string]cacheEntry, error) {
	raw, err := openBlock(block)
	rs := <-refs
	if err != nil {
		return nil, err
	}
	r := newReader(raw)
	base := r.varint()
	ne := r.uvarint()
	if ne > uint64(len(r.b)) || rs == nil || uint64(len(rs)) != ne {
		return nil, errBadCache
	}
	m := make(map[string]cacheEntry, ne)
	for i := uint64(0); i < ne && r.err == nil; i++ {
		p := r.str()
		var e cacheEntry
		e.st = r.stat()
		e.verified = base - r.varint()
		if rs[i].n > 0 {
			e.off, e.n = rs[i].off, rs[i].n
			m[p] = e
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errBadCache
	}
	return m, nil
}

// decodeListings parses the second block, returning the listings and the
// order they were written in.
func decodeListings(block []byte) (map[string]dirCacheEntry, []string, error) {
	raw, err := openBlock(block)
	if err != nil {
		return nil, nil, err
	}
	r := newReader(raw)
	base := r.varint()
	nd := r.uvarint()
	if nd > uint64(len(r.b)) {
		return nil, nil, errBadCache
	}
	dirs := make(map[string]dirCacheEntry, nd)
	order := make([]string, 0, nd)
	for i := uint64(0); i < nd && r.err == nil; i++ {
		d := r.str()
		order = append(order, d)
		var e dirCacheEntry
		e.st = r.stat()
		e.verified = base - r.varint()
		nn := r.uvarint()
		if nn > uint64(len(r.b)) {
			return nil, nil, errBadCache
		}
		e.names = make([]string, 0, nn)
		for j := uint64(0); j < nn && r.err == nil; j++ {
			e.names = append(e.names, r.str())
		}
		dirs[d] = e
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, nil, errBadCache
	}
	return dirs, order, nil
}

// refSpan is where an entry's refs are in the third block (n 0: none).
type refSpan struct {
	off uint32
	n   uint16
}

// decodeTail parses the third block: it hands the entries' refs to refs
// (always once, nil on failure), then reads the trees, and the directories'
// tree refs once the listings are read (listed closed, order set).
func (c *statCache) decodeTail(block []byte, refs chan<- []refSpan, listed <-chan struct{}, order *[]string) error {
	raw, err := openBlock(block)
	if err != nil {
		refs <- nil
		return err
	}
	c.read = raw
	r := newReader(raw)
	ne := r.uvarint()
	if ne > uint64(len(r.b)) {
		refs <- nil
		return errBadCache
	}
	rs := make([]refSpan, ne)
	for i := range rs {
		at := len(raw) - len(r.b)
		ref, base, delta := r.skipCacheRef(), r.skipCacheRef(), r.skipCacheRef()
		// The checksum guards against damage; refs are checked again where
		// a manifest is loaded.
		if r.err == nil && ref && delta == base {
			rs[i] = refSpan{uint32(at), uint16(len(raw) - len(r.b) - at)}
		}
	}
	if r.err != nil {
		refs <- nil
		return errBadCache
	}
	refs <- rs
	nt := r.uvarint()
	if nt > uint64(len(r.b)) {
		return errBadCache
	}
	// The trees' refs share one buffer, the directories' another.
	r.arena = make([]byte, 0, (int(nt)+1)*(len("blob:sha256:")+64))
	c.trees = make(map[string][]byte, nt)
	for i := uint64(0); i < nt && r.err == nil; i++ {
		ref := r.cacheRef()
		c.trees[ref] = r.bytes()
		if r.bool() {
			c.older[ref] = true
		}
	}
	<-listed // the order of the tree refs
	r.arena = make([]byte, 0, (len(*order)+1)*(len("blob:sha256:")+64))
	c.treeOf = make(map[string]string, len(*order))
	for _, d := range *order {
		if ref := r.cacheRef(); ref != "" {
			c.treeOf[d] = ref
		}
	}
	c.last = lastSnapshot{id: r.str(), tree: r.cacheRef(), verified: r.varint()}
	if r.err != nil || len(r.b) != 0 {
		return errBadCache
	}
	return nil
}

// decodeBlock decompresses one S2 block of the cache, bounded.
func decodeBlock(b []byte) ([]byte, error) {
	size, err := s2.DecodedLen(b)
	if err != nil || size > cacheMaxBody {
		return nil, fmt.Errorf("%w: length %d: %v", errBadCache, size, err)
	}
	out, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCache, err)
	}
	return out, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStat(b []byte, st fileStat) []byte {
	b = binary.AppendUvarint(b, uint64(st.mode))
	b = binary.AppendVarint(b, st.size)
	b = binary.AppendVarint(b, st.mtime)
	b = binary.AppendVarint(b, st.ctime)
	b = binary.AppendUvarint(b, st.ino)
	return binary.AppendUvarint(b, st.dev)
}

func (r *reader) stat() fileStat {
	var st fileStat
	st.mode = fs.FileMode(r.uvarint())
	st.size = r.varint()
	st.mtime = r.varint()
	st.ctime = r.varint()
	st.ino = r.uvarint()
	st.dev = r.uvarint()
	return st
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func (r *reader) bool() bool {
	if r.err != nil || len(r.b) == 0 {
		r.err = errBadCache
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v == 1
}

// reader decodes varints, latching the first error. With s (b's bytes
// as one string) the strings it returns share s's memory.
type reader struct {
	b   []byte
	err error
	s   string
	// arena, when not nil, holds the refs ref returns.
	arena []byte
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string {
	b := r.bytes()
	if r.s != "" && b != nil {
		// A slice of the one string of the whole input: no allocation.
		at := len(r.s) - len(r.b) - len(b)
		return r.s[at : at+len(b)]
	}
	return string(b)
}

// bytes reads a length-prefixed byte string, a slice of the input.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadCache
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}
