package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strings"
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
//
// It is kept per directory, as the walk goes: a directory's record holds
// its listing and its files' entries side by side, so the walk finds an
// entry by its position in the listing (no map of every path to build at
// load or to look up per file), and anyone else by the directory's record
// and a binary search of its names.
type statCache struct {
	dirs map[string]*dirRec
	// names is how many names dirs held when read or relisted.
	names int
	// trees holds the tree objects of the last tree snapshot by ref, so
	// loading a checkpoint reads from cas only the trees that differ from
	// it.
	trees map[string][]byte
	// older marks the trees of trees kept from snapshots before the last.
	older map[string]bool
	// treeOf is the ref of the tree object of each directory of the last
	// tree snapshot that has one (git's cache-tree): a directory proven
	// unchanged since (see byLast) has that tree again.
	treeOf map[string]string
	// last is the tree snapshot that wrote entries verified at its start:
	// while its manifest is stored, naming the same root tree, GC keeps
	// every blob it names, so those entries' blobs need no lookup.
	last lastSnapshot
	// read and added hold the entries' refs as the file does (three
	// appendCacheRef each: ref, base, delta): read is the decoded block
	// they were read from, added what put wrote since. An entry holds
	// where its own are, so it has no pointer: the thousands of them cost
	// the GC nothing to scan, nor a write barrier to fill.
	read, added []byte
}

type lastSnapshot struct {
	id, tree string
	verified int64
}

// dirRec is one directory's record. A directory's mtime and ctime change
// whenever an entry is added, removed or renamed in it, so while its stat
// is st (and not racy), the names of a listed record are its names, and
// the walk stats them without opening and reading the directory. A record
// not listed (a files checkpoint put into a directory no walk read, or a
// name the listing lacked) only holds entries.
type dirRec struct {
	st       fileStat
	verified int64
	listed   bool
	names    []string     // sorted
	ents     []cacheEntry // ents[i] is names[i]'s entry; n 0 for none
}

// seek moves at, an index into r's names, forward to name's place and
// reports whether name is there: names asked for in order take one pass.
func (r *dirRec) seek(at int, name string) (int, bool) {
	for at < len(r.names) && r.names[at] < name {
		at++
	}
	return at, at < len(r.names) && r.names[at] == name
}

// find returns the index of name in r's names, or -1.
func (r *dirRec) find(name string) int {
	if r == nil {
		return -1
	}
	i, ok := slices.BinarySearch(r.names, name)
	if !ok {
		return -1
	}
	return i
}

type cacheEntry struct {
	st       fileStat
	verified int64 // ns: when the snapshot that last hashed or checked it started
	// refs are the entry's ref, base and delta in statCache.read, or in
	// statCache.added when off has refsAdded set (see refsOf): most
	// entries are only compared by stat, never turned into strings.
	off uint32
	n   uint16 // 0: no entry
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
const cacheMagic = cacheFamily + "13\n"

// cacheFamily starts every version's cache: one another version of trove
// wrote is not damage, only rebuilt (errCacheVersion).
const cacheFamily = "trove-statcache-"

var errCacheVersion = fmt.Errorf("%w: written by another version", errBadCache)

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
	return &statCache{dirs: make(map[string]*dirRec), trees: make(map[string][]byte), older: make(map[string]bool), treeOf: make(map[string]string)}
}

// listing returns dir's record, if any, and whether st proves its names
// current.
func (c *statCache) listing(dir string, st fileStat, window time.Duration) (*dirRec, bool) {
	r := c.dirs[dir]
	if r == nil || !r.listed || r.st != st || racy(cacheEntry{st: r.st, verified: r.verified}, window) {
		return r, false
	}
	return r, true
}

// size is about how many names the records hold: a walk's size.
func (c *statCache) size() int { return c.names }

// splitPath returns p's directory ("." for the root) and name.
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// slot returns the entry of path, to read or update in place, or nil.
func (c *statCache) slot(path string) *cacheEntry {
	var k cacheCursor
	return k.slot(c, path)
}

// prevRefs returns the refs of path's entry, if any: a changed file's
// last stored version, the base of its delta.
func (c *statCache) prevRefs(path string) *cacheRefs {
	ce, ok := c.entry(path)
	if !ok {
		return nil
	}
	refs := c.refsOf(ce)
	return &refs
}

// entry returns the entry of path.
func (c *statCache) entry(path string) (cacheEntry, bool) {
	if e := c.slot(path); e != nil {
		return *e, true
	}
	return cacheEntry{}, false
}

// lookup returns the cached digest of path when st proves the content
// unchanged: identical stat and not racy.
func (c *statCache) lookup(path string, st fileStat, window time.Duration) (string, bool) {
	e, _ := c.entry(path)
	if !proves(e, st, window) {
		return "", false
	}
	return c.refsOf(e).ref, true
}

// proves reports whether e vouches for the content of a file with stat st:
// an entry, with that very stat, and not racy.
func proves(e cacheEntry, st fileStat, window time.Duration) bool {
	return e.n > 0 && e.st == st && !racy(e, window)
}

// byLast reports whether the last tree snapshot verified e: with a stat
// that proves its content (see proves), the file is the one that snapshot
// stored, not one a files checkpoint put since.
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
	ce := cacheEntry{st: st, verified: verified, off: uint32(off) | refsAdded, n: uint16(len(c.added) - off)}
	dir, name := splitPath(path)
	r := c.dirs[dir]
	if r == nil {
		r = &dirRec{}
		c.dirs[dir] = r
	}
	i, ok := slices.BinarySearch(r.names, name)
	if !ok {
		// A name the listing lacks: it is no longer the directory's.
		r.listed = false
		// Clipped, so that a record decoded into a shared array never
		// writes into its neighbour's.
		r.names = slices.Insert(slices.Clip(r.names), i, name)
		r.ents = slices.Insert(slices.Clip(r.ents), i, cacheEntry{})
	}
	r.ents[i] = ce
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
	for _, r := range c.dirs {
		for i, e := range r.ents {
			if e.n > 0 && e.off&refsAdded != 0 {
				raw := c.rawRefs(e)
				r.ents[i].off = uint32(len(b)) | refsAdded
				b = append(b, raw...)
			}
		}
	}
	c.added = b
}

// relist makes the listings of a tree snapshot's walk the cache's records,
// keeping of the entries only those the snapshot verified (at verified):
// the paths it did not store (deleted, ignored since, or only named by a
// files checkpoint) would only grow the cache.
func (c *statCache) relist(listings map[string]dirListing, verified int64) {
	dirs := make(map[string]*dirRec, len(listings))
	recs := make([]dirRec, len(listings))
	n := 0
	for _, l := range listings {
		n += len(l.names)
	}
	ents := make([]cacheEntry, n)
	k := 0
	for d, l := range listings {
		r := &recs[k]
		k++
		r.st, r.verified, r.listed, r.names = l.st, verified, true, l.names
		r.ents, ents = ents[:len(l.names):len(l.names)], ents[len(l.names):]
		if old := c.dirs[d]; old != nil {
			j := 0
			for i, name := range r.names {
				var ok bool
				if j, ok = old.seek(j, name); ok && old.ents[j].n > 0 && old.ents[j].verified == verified {
					r.ents[i] = old.ents[j]
				}
			}
		}
		dirs[d] = r
	}
	c.dirs, c.names = dirs, n
}

// cacheCursor finds the entries of paths in order, looking a directory's
// record up once for all its files.
type cacheCursor struct {
	dir string
	rec *dirRec
}

// slot is statCache.slot.
func (k *cacheCursor) slot(c *statCache, path string) *cacheEntry {
	dir, name := splitPath(path)
	if k.rec == nil || dir != k.dir {
		k.dir, k.rec = dir, c.dirs[dir]
	}
	if i := k.rec.find(name); i >= 0 && k.rec.ents[i].n > 0 {
		return &k.rec.ents[i]
	}
	return nil
}

// dirListing is a directory as a walk read it.
type dirListing struct {
	st    fileStat
	names []string // sorted
}

// The cache is written as two blocks: magic, uvarint length of the first,
// the first (S2-compressed), the second (raw: its refs and trees are
// digests, which S2 shrank by a sixth at the cost of a copy to decode). A
// snapshot compresses the first (the directories, final once its files
// are stored) while it builds its trees, and writes the second (trees and
// the last snapshot) after; a reader decodes the two at once. Each block
// ends with the CRC-32C of its bytes. Decoded,
// the first is a base time and the directories: path, stat, verified (as
// the distance back from the base, one byte for nearly all), whether
// listed, and the names, each with a byte telling whether an entry
// follows, its stat and verified time, without its refs. The second holds
// the number of entries and their refs in the order of the first, the
// number of directories and their tree refs (treeOf) in the order of the
// first (which the first's decoder reads, while the trees are read), the
// trees, and the last snapshot.

// encode writes the whole cache.
func (c *statCache) encode() []byte { return c.encodeTail(c.encodeHead(c.last.verified)) }

// cacheHead is the first block, compressed, and the order it holds the
// directories in.
type cacheHead struct {
	block   []byte
	paths   []string
	recs    []*dirRec
	refs    int // bytes of the entries' refs
	entries int
}

// encodeHead encodes the directories, verified times relative to base (any
// time; the snapshot's start keeps them short).
func (c *statCache) encodeHead(base int64) cacheHead {
	h := cacheHead{paths: make([]string, 0, len(c.dirs)), recs: make([]*dirRec, 0, len(c.dirs))}
	size := 64
	for d, r := range c.dirs {
		size += len(d) + 48 + len(r.names)*(24+40)
	}
	b := make([]byte, 0, size)
	b = binary.AppendVarint(b, base)
	b = binary.AppendUvarint(b, uint64(len(c.dirs)))
	// In map order: nothing needs them sorted.
	for d, r := range c.dirs {
		h.paths = append(h.paths, d)
		h.recs = append(h.recs, r)
		b = appendStr(b, d)
		b = appendStat(b, r.st)
		b = binary.AppendVarint(b, base-r.verified)
		b = appendBool(b, r.listed)
		b = binary.AppendUvarint(b, uint64(len(r.names)))
		for i, n := range r.names {
			b = appendStr(b, n)
			e := r.ents[i]
			b = appendBool(b, e.n > 0)
			if e.n > 0 {
				b = appendStat(b, e.st)
				b = binary.AppendVarint(b, base-e.verified)
				h.refs += int(e.n)
				h.entries++
			}
		}
	}
	h.block = compressCache(appendCRC(b))
	return h
}

// encodeTail encodes the refs, trees and the last snapshot after head and
// returns the whole file.
func (c *statCache) encodeTail(head cacheHead) []byte {
	// The exact bound: growing b would copy it, and the garbage of a
	// snapshot is what its GC cycles cost.
	size := 3*binary.MaxVarintLen64 + head.refs + len(head.paths)*cacheRefMax +
		binary.MaxVarintLen64 + len(c.last.id) + cacheRefMax + binary.MaxVarintLen64 + crc32.Size
	for _, t := range c.trees {
		size += cacheRefMax + binary.MaxVarintLen64 + len(t) + 1
	}
	// The second block is written raw, in place after the first.
	b := make([]byte, 0, len(cacheMagic)+binary.MaxVarintLen64+len(head.block)+size)
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(head.block)))
	b = append(b, head.block...)
	tail := len(b)
	b = binary.AppendUvarint(b, uint64(head.entries))
	for _, r := range head.recs {
		for _, e := range r.ents {
			if e.n > 0 {
				b = append(b, c.rawRefs(e)...)
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(head.paths)))
	for _, d := range head.paths {
		b = appendCacheRef(b, c.treeOf[d])
	}
	b = binary.AppendUvarint(b, uint64(len(c.trees)))
	for r, t := range c.trees {
		b = appendCacheRef(b, r)
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = appendBool(b, c.older[r])
	}
	b = appendStr(b, c.last.id)
	b = appendCacheRef(b, c.last.tree)
	b = binary.AppendVarint(b, c.last.verified)
	return appendCRCFrom(b, tail)
}

// appendCRC appends the CRC-32C of b.
func appendCRC(b []byte) []byte { return appendCRCFrom(b, 0) }

// appendCRCFrom appends the CRC-32C of b[from:].
func appendCRCFrom(b []byte, from int) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[from:], castagnoli))
}

// compressCache is one S2 block (snappy's successor, from the zstd module),
// in its fastest mode: a few times faster than zstd's fastest level both
// ways. Its "better" mode halves the second block (the entries' refs match
// the trees' digests far back), but costs one to three milliseconds more
// per 5,000 files where a snapshot waits for it: 0.3 MiB more for a tree
// of 2,000 files, against a store of 17 MiB.
func compressCache(b []byte) []byte {
	return s2.Encode(make([]byte, s2.MaxEncodedLen(len(b))), b)
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
		if len(r.b) < n || len("blob:")+len(cas.Algorithm(r.b[1]).String())+1+64 > refLen {
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

// decodeStatCache parses what encode wrote; another version's cache is
// errCacheVersion, anything else errBadCache. The cache keeps slices of
// data's second block: the caller must never write data again.
// The two blocks are decoded at once: the cache is read before a walk can
// start.
func decodeStatCache(data []byte) (*statCache, error) {
	if !bytes.HasPrefix(data, []byte(cacheMagic)) {
		if bytes.HasPrefix(data, []byte(cacheFamily)) {
			return nil, errCacheVersion
		}
		return nil, errBadCache
	}
	rest := data[len(cacheMagic):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, errBadCache
	}
	head, tail := rest[k:k+int(n)], rest[k+int(n):]
	c := &statCache{older: make(map[string]bool)}
	var (
		wg   sync.WaitGroup
		errD error
		refs = make(chan *tailRefs, 1) // nil on failure
	)
	wg.Go(func() {
		c.dirs, c.treeOf, c.names, errD = decodeDirs(head, refs)
	})
	err := c.decodeTail(tail, refs)
	wg.Wait()
	if err = cmp.Or(err, errD); err != nil {
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
	return checkCRC(raw)
}

// checkCRC checks the CRC-32C that ends raw and returns what it covers.
func checkCRC(raw []byte) ([]byte, error) {
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

// decodeDirs parses the first block, once the entries' refs (as the second
// holds them) come from refs, returning the records, the directories' tree
// refs (which the second holds in the order of the first) and how many
// names the records hold. The names and entries of all records share two
// arrays, each record's clipped to its own.
func decodeDirs(block []byte, refs <-chan *tailRefs) (map[string]*dirRec, map[string]string, int, error) {
	raw, err := openBlock(block)
	tr := <-refs
	if err != nil {
		return nil, nil, 0, err
	}
	if tr == nil {
		return nil, nil, 0, errBadCache
	}
	rs := tr.spans
	r := newReader(raw)
	base := r.varint()
	nd := r.uvarint()
	// A record takes 10 bytes at least (path length, six stat fields,
	// verified, listed, names): more than the block holds is damage, not
	// an allocation to make.
	if nd > uint64(len(r.b))/10 || nd != tr.dirs {
		return nil, nil, 0, errBadCache
	}
	dirs := make(map[string]*dirRec, nd)
	// The refs of the trees share one buffer.
	trees := &reader{b: tr.treeOf, arena: make([]byte, 0, (int(nd)+1)*refLen)}
	treeOf := make(map[string]string, nd)
	recs := make([]dirRec, nd)
	names := make([]string, 0, len(rs)+int(nd))
	ents := make([]cacheEntry, 0, len(rs)+int(nd))
	k := 0 // the next ref
	for i := range recs {
		if r.err != nil {
			break
		}
		d := r.str()
		if ref := trees.cacheRef(); ref != "" {
			treeOf[d] = ref
		}
		rec := &recs[i]
		rec.st = r.stat()
		rec.verified = base - r.varint()
		rec.listed = r.bool()
		nn := r.uvarint()
		if nn > uint64(len(r.b)) {
			return nil, nil, 0, errBadCache
		}
		n0 := len(names)
		for j := uint64(0); j < nn && r.err == nil; j++ {
			names = append(names, r.str())
			var e cacheEntry
			if r.bool() {
				e.st = r.stat()
				e.verified = base - r.varint()
				if k >= len(rs) {
					return nil, nil, 0, errBadCache
				}
				e.off, e.n = rs[k].off, rs[k].n
				k++
			}
			ents = append(ents, e)
		}
		rec.names, rec.ents = names[n0:len(names):len(names)], ents[n0:len(ents):len(ents)]
		if !slices.IsSorted(rec.names) {
			return nil, nil, 0, errBadCache
		}
		dirs[d] = rec
	}
	if r.err != nil || len(r.b) != 0 || k != len(rs) || trees.err != nil || len(trees.b) != 0 {
		return nil, nil, 0, errBadCache
	}
	return dirs, treeOf, len(names), nil
}

// tailRefs is what the first block's decoding needs of the second: where
// the entries' refs are, and the directories' tree refs.
type tailRefs struct {
	spans  []refSpan
	treeOf []byte // a cacheRef per directory, in the first block's order
	dirs   uint64 // how many
}

// refSpan is where an entry's refs are in the second block (n 0: none).
type refSpan struct {
	off uint32
	n   uint16
}

// decodeTail parses the second block: it hands the entries' refs and the
// directories' tree refs to refs (always once, nil on failure), for the
// first block's decoding, then reads the trees and the last snapshot.
func (c *statCache) decodeTail(block []byte, refs chan<- *tailRefs) error {
	raw, err := checkCRC(block)
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
	nd := r.uvarint()
	at := len(r.b)
	for range min(nd, uint64(len(r.b))) {
		r.skipCacheRef()
	}
	if r.err != nil || nd > uint64(at) {
		refs <- nil
		return errBadCache
	}
	refs <- &tailRefs{spans: rs, treeOf: raw[len(raw)-at : len(raw)-len(r.b)], dirs: nd}
	nt := r.uvarint()
	if nt > uint64(len(r.b)) {
		return errBadCache
	}
	// The trees' refs share one buffer, the directories' another.
	r.arena = make([]byte, 0, (int(nt)+1)*refLen)
	c.trees = make(map[string][]byte, nt)
	for i := uint64(0); i < nt && r.err == nil; i++ {
		ref := r.cacheRef()
		c.trees[ref] = r.bytes()
		if r.bool() {
			c.older[ref] = true
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
