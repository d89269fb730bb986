package statcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// refSize is the bytes of a directory's tree ref in the second block:
// appendCacheRef's flag, algorithm and digest, zeros for none.
const refSize = cacheRefMax

// appendFixedRef writes s as appendCacheRef does, padded to refSize.
func appendFixedRef(b []byte, s string) []byte {
	at := len(b)
	b = appendCacheRef(b, s)
	for len(b)-at < refSize {
		b = append(b, 0)
	}
	return b
}

// lazy is a cache as read: both blocks checked, the records decoded as
// they are asked for (dir), the trees found by their table (tree). Decoding
// every record before the walk started was most of loading the cache, on a
// dry run's critical path, and the trees' and directories' refs, turned
// into 3,300 strings in two maps, were a third of it; a plan looks up a
// few dozen of them.
type lazy struct {
	head   string // the first block (without its CRC), as one string
	offs   []byte // each record's offset in head, from recs
	table  []byte // the records' hash table
	recs   int    // where the records start in head
	nd     int
	treeOf []byte // refSize bytes per record: its directory's tree
	ttable []byte // the trees' hash table
	trees  []byte // the trees' records
	nt     int
	// offBits is set in the refs' offset of every entry decoded
	// (refsSide for a sidecar's: its entries are copied, never mapped).
	offBits uint32
	// slots hold the records decoded so far (badDir: damaged).
	slots []atomic.Pointer[Dir]
	// Records and names are cut from shared arrays, as a decode of the
	// whole file did: one allocation each, not one per directory. The
	// entries are the file's bytes (see entrySize).
	dirs                []Dir
	names               []string
	nextDir, nextName   atomic.Int64
	dirsFull, namesFull atomic.Bool
}

// badDir marks a record that did not decode: a record a checksum passed
// but that is damaged all the same (a bug, not the disk) is as good as
// none, and costs its directory a rehash.
var badDir Dir

// Decode parses what Encode wrote; another version's cache is
// ErrVersion, anything else ErrDamaged. It checks the checksums of both
// blocks and reads their tables; the records are decoded as they are
// asked for, and a damaged one reads as missing. The cache keeps slices
// of data: the caller must never write data again.
func Decode(data []byte) (*Cache, error) {
	c, tl, err := decode(data)
	if err != nil {
		return nil, err
	}
	if tl.over != (fileID{}) {
		return nil, ErrDamaged // a sidecar, not a cache
	}
	c.base, c.alias = tl.self, tl.alias
	c.baseAlias = append(slices.Clip(tl.alias), c.Last.Verified)
	return c, nil
}

// tailInfo is what the second block says of its file besides the last
// snapshot (see fileID, Cache.alias).
type tailInfo struct {
	self, over fileID
	alias      []int64
}

// decode is Decode of a cache or a sidecar.
func decode(data []byte) (*Cache, tailInfo, error) {
	c, tl, err := decodeFile(data)
	if err == nil {
		tl.self.size = uint64(len(data))
		tl.self.sum = binary.LittleEndian.Uint32(data[len(data)-4:])
	}
	return c, tl, err
}

func decodeFile(data []byte) (*Cache, tailInfo, error) {
	var tl tailInfo
	if !bytes.HasPrefix(data, []byte(cacheMagic)) {
		if bytes.HasPrefix(data, []byte(cacheFamily)) {
			return nil, tl, ErrVersion
		}
		return nil, tl, ErrDamaged
	}
	if len(data) < headAt {
		return nil, tl, ErrDamaged
	}
	n := binary.LittleEndian.Uint64(data[len(cacheMagic):])
	if n > uint64(len(data)-headAt) {
		return nil, tl, ErrDamaged
	}
	head, tail := data[headAt:headAt+int(n)], data[headAt+int(n):]
	hraw, err := checkCRC(head)
	if err != nil {
		return nil, tl, err
	}
	traw, err := checkCRCFrom(tail, headSum(head))
	if err != nil {
		return nil, tl, err
	}
	// An entry's refs are an offset into the first block, with
	// refsAdded's bit clear.
	if len(hraw) >= refsSide {
		return nil, tl, ErrDamaged
	}
	c := &Cache{read: hraw}
	lz, names, err := readHead(hraw)
	if err != nil {
		return nil, tl, err
	}
	if c.Last, tl, err = lz.readTail(traw); err != nil {
		return nil, tl, err
	}
	c.lz, c.count = lz, names
	return c, tl, nil
}

// readHead reads the first block's counts and tables.
func readHead(raw []byte) (*lazy, int, error) {
	r := wire.NewReader(raw)
	nd, names, ts := r.Uvarint(), r.Uvarint(), r.Uvarint()
	left := uint64(len(r.B))
	// A record takes 55 bytes at least (path length, stat, verified,
	// listed, names), a name 2: more than the block holds is damage, not
	// an allocation to make.
	if r.Err != nil || nd > left/(statSize+11) || names > left/2 || ts == 0 || ts&(ts-1) != 0 || ts < nd || ts > left/4 {
		return nil, 0, ErrDamaged
	}
	lz := &lazy{nd: int(nd)}
	lz.offs = fixed(r, 4*lz.nd)
	lz.table = fixed(r, 4*int(ts))
	if r.Err != nil {
		return nil, 0, ErrDamaged
	}
	lz.head = unsafe.String(unsafe.SliceData(raw), len(raw))
	lz.recs = len(raw) - len(r.B)
	lz.slots = make([]atomic.Pointer[Dir], nd)
	lz.dirs = make([]Dir, nd)
	lz.names = make([]string, names)
	return lz, int(names), nil
}

// readTail reads the second block: the last snapshot, then where the
// directories' trees, the trees' table and the trees are.
func (lz *lazy) readTail(raw []byte) (Last, tailInfo, error) {
	var tl tailInfo
	r := wire.NewReader(raw)
	last := Last{ID: r.Str(), Tree: cacheRef(r), Verified: r.Varint()}
	if n := fixed(r, 8); n != nil {
		tl.self.nonce = binary.LittleEndian.Uint64(n)
	}
	tl.over = readFileID(r)
	na := r.Uvarint()
	if r.Err != nil || na > uint64(len(r.B)) {
		return Last{}, tl, ErrDamaged
	}
	for range na {
		tl.alias = append(tl.alias, r.Varint())
	}
	if nd := r.Uvarint(); r.Err != nil || nd != uint64(lz.nd) || nd > uint64(len(r.B))/refSize {
		return Last{}, tl, ErrDamaged
	}
	lz.treeOf = fixed(r, refSize*lz.nd)
	nt, ts := r.Uvarint(), r.Uvarint()
	if r.Err != nil || ts == 0 || ts&(ts-1) != 0 || ts < nt || ts > uint64(len(r.B))/4 {
		return Last{}, tl, ErrDamaged
	}
	lz.ttable = fixed(r, 4*int(ts))
	lz.trees, lz.nt = r.B, int(nt)
	if r.Err != nil || nt > uint64(len(lz.trees))/refSize {
		return Last{}, tl, ErrDamaged
	}
	return last, tl, nil
}

// slot returns the uint32 in slot p of table (a power of two of them).
func slot(table []byte, p uint32) uint32 {
	return binary.LittleEndian.Uint32(table[4*(p&uint32(len(table)/4-1)):])
}

// find returns the index of dir's record, or -1, and a reader at the rest
// of the record.
func (lz *lazy) find(dir string) (int, wire.Reader) {
	h := pathHash(dir)
	for p := range uint32(len(lz.table) / 4) {
		v := slot(lz.table, h+p)
		if v == 0 || int(v) > lz.nd {
			break
		}
		i := int(v - 1)
		if path, r, ok := lz.pathAt(i); ok && path == dir {
			return i, r
		}
	}
	return -1, wire.Reader{}
}

// pathAt returns record i's path and a reader at the rest of it.
func (lz *lazy) pathAt(i int) (string, wire.Reader, bool) {
	off := uint64(binary.LittleEndian.Uint32(lz.offs[4*i:])) + uint64(lz.recs)
	if off >= uint64(len(lz.head)) {
		return "", wire.Reader{}, false
	}
	b := unsafe.Slice(unsafe.StringData(lz.head), len(lz.head))
	r := wire.Reader{B: b[off:], S: lz.head[off:]}
	path := r.Str()
	return path, r, r.Err == nil
}

// dir returns record i, decoding it on first use; nil when damaged. Safe
// for concurrent use: two decoding one record keep the first's.
func (lz *lazy) dir(i int) *Dir {
	return lz.dirFrom(i, wire.Reader{})
}

// dirFrom is dir, with r at the rest of the record after its path when
// the caller has read that (find), else empty.
func (lz *lazy) dirFrom(i int, r wire.Reader) *Dir {
	d := lz.slots[i].Load()
	if d == nil {
		if d = lz.decode(i, r); d == nil {
			d = &badDir
		}
		if !lz.slots[i].CompareAndSwap(nil, d) {
			d = lz.slots[i].Load()
		}
	}
	if d == &badDir {
		return nil
	}
	return d
}

// decode decodes record i, rd at its rest after its path if not empty,
// or returns nil when it is damaged.
func (lz *lazy) decode(i int, rd wire.Reader) *Dir {
	if rd.B == nil {
		var ok bool
		if _, rd, ok = lz.pathAt(i); !ok {
			return nil
		}
	}
	r := &rd
	fx := fixed(r, statSize+9)
	nn := r.Uvarint()
	if r.Err != nil || nn > uint64(len(r.B))/(entrySize+1) || fx[statSize+8] > 1 && (fx[statSize+8] != recRemoved || lz.offBits == 0 || nn != 0) {
		return nil
	}
	rec := lz.newDir()
	rec.St = readStat(fx)
	rec.Verified = int64(binary.LittleEndian.Uint64(fx[statSize:]))
	rec.Listed = fx[statSize+8] == 1
	rec.removed = fx[statSize+8] == recRemoved
	rec.Names = lz.alloc(int(nn))
	for j := range rec.Names {
		rec.Names[j] = r.Str()
	}
	fixed(r, (8-(headAt+len(lz.head)-len(r.B))%8)%8)
	eb := fixed(r, entrySize*int(nn))
	if r.Err != nil || !slices.IsSorted(rec.Names) {
		return nil
	}
	if nn > 0 && entryMapped && lz.offBits == 0 && uintptr(unsafe.Pointer(&eb[0]))%8 == 0 {
		rec.Ents = unsafe.Slice((*Entry)(unsafe.Pointer(&eb[0])), nn)
	} else {
		rec.Ents = make([]Entry, nn)
		for j := range rec.Ents {
			rec.Ents[j] = readEntryFixed(eb[entrySize*j:])
		}
	}
	for j, e := range rec.Ents {
		if e.n > 0 && !lz.validRefs(e) {
			return nil
		}
		if e.n > 0 && lz.offBits != 0 { // then a copy: a mapping is read only
			rec.Ents[j].off |= lz.offBits
		}
	}
	return rec
}

// validRefs reports whether e's refs are in the first block, as
// appendCacheRef wrote them: a ref, and a base and delta both set or
// neither. The checksum guards against damage; refs are checked again
// where a manifest is loaded.
func (lz *lazy) validRefs(e Entry) bool {
	end := uint64(e.off) + uint64(e.n)
	if end > uint64(len(lz.head)) {
		return false
	}
	b := unsafe.Slice(unsafe.StringData(lz.head), len(lz.head))
	r := &wire.Reader{B: b[e.off:end]}
	ref, base, delta := skipCacheRef(r), skipCacheRef(r), skipCacheRef(r)
	return r.Err == nil && len(r.B) == 0 && ref && delta == base
}

// newDir returns a record from the shared array, or a new one.
func (lz *lazy) newDir() *Dir {
	if !lz.dirsFull.Load() {
		if i := lz.nextDir.Add(1) - 1; i < int64(len(lz.dirs)) {
			return &lz.dirs[i]
		}
		lz.dirsFull.Store(true)
	}
	return new(Dir)
}

// alloc returns n names from the shared array, clipped to their own, or
// new ones.
func (lz *lazy) alloc(n int) []string {
	if !lz.namesFull.Load() {
		end := lz.nextName.Add(int64(n))
		if end <= int64(len(lz.names)) {
			return lz.names[int(end)-n : end : end]
		}
		lz.namesFull.Store(true)
	}
	return make([]string, n)
}

// treeRef returns the tree ref of record i's directory, "" for none.
func (lz *lazy) treeRef(i int) string {
	r := &wire.Reader{B: lz.treeOf[refSize*i : refSize*(i+1)]}
	return cacheRef(r)
}

// A tree's flag: the last snapshot's, an older one's, or (in a sidecar)
// one its base holds that the cache no longer does.
const (
	treeCurrent = 0
	treeOlder   = 1
	treeGone    = 2
)

// tree returns the tree object of ref and its flag, if the second block
// holds it.
func (lz *lazy) tree(ref string) ([]byte, byte, bool) {
	algo, d, ok := wire.FastRef(ref)
	if !ok {
		return nil, 0, false
	}
	h := binary.LittleEndian.Uint32(d[:])
	for p := range uint32(len(lz.ttable) / 4) {
		v := slot(lz.ttable, h+p)
		if v == 0 || uint64(v)-1+refSize > uint64(len(lz.trees)) {
			return nil, 0, false
		}
		rec := lz.trees[v-1:]
		if rec[0] == byte(algo) && bytes.Equal(rec[1:refSize-1], d[:]) {
			r := &wire.Reader{B: rec[refSize-1:]}
			data := r.Bytes()
			flag := lz.treeFlag(r)
			return data, flag, r.Err == nil
		}
	}
	return nil, 0, false
}

// treeFlag reads a tree's flag: treeGone only in a sidecar.
func (lz *lazy) treeFlag(r *wire.Reader) byte {
	if r.Err != nil || len(r.B) == 0 || r.B[0] > treeGone || r.B[0] == treeGone && lz.offBits == 0 {
		r.Err = ErrDamaged
		return 0
	}
	f := r.B[0]
	r.B = r.B[1:]
	return f
}

// eachTree calls fn with every tree of the second block, in its order,
// until one is damaged.
func (lz *lazy) eachTree(fn func(ref string, data []byte, flag byte)) {
	r := &wire.Reader{B: lz.trees, Arena: make([]byte, 0, (lz.nt+1)*wire.RefLen)}
	for range lz.nt {
		ref := r.Ref()
		data := r.Bytes()
		flag := lz.treeFlag(r)
		if r.Err != nil {
			return
		}
		fn(ref, data, flag)
	}
}

// Full decodes every record and tree into Dirs, TreeOf, Trees and Older,
// which code that changes the cache works on. A decoded cache is lazy
// until then: records a walk decoded are kept, the rest decoded now. Safe
// to call while others only read the cache.
func (c *Cache) Full() {
	if c.full.Load() {
		return
	}
	c.fullMu.Lock()
	defer c.fullMu.Unlock()
	if c.full.Load() {
		return
	}
	lz := c.lz
	dirs := make(map[string]*Dir, lz.nd)
	treeOf := make(map[string]string, lz.nd)
	trees := make(map[string][]byte, lz.nt)
	older := make(map[string]bool)
	for _, lz := range []*lazy{lz, c.side} {
		if lz != nil {
			lz.fill(dirs, treeOf, trees, older)
		}
	}
	c.Dirs, c.TreeOf, c.Trees, c.Older = dirs, treeOf, trees, older
	c.full.Store(true)
}

// fill adds lz's records and trees to the maps, over those there.
func (lz *lazy) fill(dirs map[string]*Dir, treeOf map[string]string, trees map[string][]byte, older map[string]bool) {
	arena := make([]byte, 0, (lz.nd+1)*wire.RefLen)
	// Copies, their entries in memory of their own: those of the records
	// may be the file's (read only), and a walk may still read them.
	recs := make([]Dir, lz.nd)
	ents := make([]Entry, 0, len(lz.names)+lz.nd)
	for i := range lz.nd {
		d := lz.dir(i)
		if d == nil {
			continue
		}
		path, _, _ := lz.pathAt(i) // read by dir already
		if d.removed {
			delete(dirs, path)
			delete(treeOf, path)
			continue
		}
		rec := &recs[i]
		*rec = *d
		at := len(ents)
		ents = append(ents, d.Ents...)
		rec.Ents = ents[at:len(ents):len(ents)]
		dirs[path] = rec
		tr := &wire.Reader{B: lz.treeOf[refSize*i : refSize*(i+1)], Arena: arena}
		if ref := cacheRef(tr); ref != "" {
			treeOf[path] = ref
		} else {
			delete(treeOf, path)
		}
		arena = tr.Arena
	}
	lz.eachTree(func(ref string, data []byte, flag byte) {
		switch flag {
		case treeGone:
			delete(trees, ref)
			delete(older, ref)
		case treeOlder:
			trees[ref] = data
			older[ref] = true
		default:
			trees[ref] = data
			delete(older, ref)
		}
	})
}

// checkCRC checks the CRC-32C that ends raw and returns what it covers.
func checkCRC(raw []byte) ([]byte, error) { return checkCRCFrom(raw, 0) }

// checkCRCFrom checks the CRC-32C, started from seed, that ends raw and
// returns what it covers.
func checkCRCFrom(raw []byte, seed uint32) ([]byte, error) {
	if len(raw) < 4 {
		return nil, ErrDamaged
	}
	raw, sum := raw[:len(raw)-4], binary.LittleEndian.Uint32(raw[len(raw)-4:])
	if crc32.Update(seed, castagnoli, raw) != sum {
		return nil, fmt.Errorf("%w: checksum", ErrDamaged)
	}
	return raw, nil
}
