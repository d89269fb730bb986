package statcache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

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

// Encode writes the whole cache.
func (c *Cache) Encode() []byte { return c.EncodeTail(c.EncodeHead(c.Last.Verified)) }

// Head is the first block, compressed, and the order it holds the
// directories in.
type Head struct {
	block   []byte
	paths   []string
	recs    []*Dir
	refs    int // bytes of the entries' refs
	entries int
}

// EncodeHead encodes the directories, verified times relative to base (any
// time; the snapshot's start keeps them short).
func (c *Cache) EncodeHead(base int64) Head {
	h := Head{paths: make([]string, 0, len(c.Dirs)), recs: make([]*Dir, 0, len(c.Dirs))}
	size := 64
	for d, r := range c.Dirs {
		size += len(d) + 48 + len(r.Names)*(24+40)
	}
	b := make([]byte, 0, size)
	b = binary.AppendVarint(b, base)
	b = binary.AppendUvarint(b, uint64(len(c.Dirs)))
	// In map order: nothing needs them sorted.
	for d, r := range c.Dirs {
		h.paths = append(h.paths, d)
		h.recs = append(h.recs, r)
		b = wire.AppendStr(b, d)
		b = appendStat(b, r.St)
		b = binary.AppendVarint(b, base-r.Verified)
		b = wire.AppendBool(b, r.Listed)
		b = binary.AppendUvarint(b, uint64(len(r.Names)))
		for i, n := range r.Names {
			b = wire.AppendStr(b, n)
			e := r.Ents[i]
			b = wire.AppendBool(b, e.n > 0)
			if e.n > 0 {
				b = appendStat(b, e.St)
				b = binary.AppendVarint(b, base-e.Verified)
				h.refs += int(e.n)
				h.entries++
			}
		}
	}
	h.block = compressCache(appendCRC(b))
	return h
}

// EncodeTail encodes the refs, trees and the last snapshot after head and
// returns the whole file.
func (c *Cache) EncodeTail(head Head) []byte {
	// The exact bound: growing b would copy it, and the garbage of a
	// snapshot is what its GC cycles cost.
	size := 3*binary.MaxVarintLen64 + head.refs + len(head.paths)*cacheRefMax +
		binary.MaxVarintLen64 + len(c.Last.ID) + cacheRefMax + binary.MaxVarintLen64 + crc32.Size
	for _, t := range c.Trees {
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
		for _, e := range r.Ents {
			if e.n > 0 {
				b = append(b, c.rawRefs(e)...)
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(head.paths)))
	for _, d := range head.paths {
		b = appendCacheRef(b, c.TreeOf[d])
	}
	b = binary.AppendUvarint(b, uint64(len(c.Trees)))
	for r, t := range c.Trees {
		b = appendCacheRef(b, r)
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = wire.AppendBool(b, c.Older[r])
	}
	b = wire.AppendStr(b, c.Last.ID)
	b = appendCacheRef(b, c.Last.Tree)
	b = binary.AppendVarint(b, c.Last.Verified)
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

// Decode parses what Encode wrote; another version's cache is
// ErrVersion, anything else ErrDamaged. The cache keeps slices of
// data's second block: the caller must never write data again.
// The two blocks are decoded at once: the cache is read before a walk can
// start.
func Decode(data []byte) (*Cache, error) {
	if !bytes.HasPrefix(data, []byte(cacheMagic)) {
		if bytes.HasPrefix(data, []byte(cacheFamily)) {
			return nil, ErrVersion
		}
		return nil, ErrDamaged
	}
	rest := data[len(cacheMagic):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, ErrDamaged
	}
	head, tail := rest[k:k+int(n)], rest[k+int(n):]
	c := &Cache{Older: make(map[string]bool)}
	var (
		wg   sync.WaitGroup
		errD error
		refs = make(chan *tailRefs, 1) // nil on failure
	)
	wg.Go(func() {
		c.Dirs, c.TreeOf, c.count, errD = decodeDirs(head, refs)
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
		return nil, ErrDamaged
	}
	raw, sum := raw[:len(raw)-4], binary.LittleEndian.Uint32(raw[len(raw)-4:])
	if crc32.Checksum(raw, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum", ErrDamaged)
	}
	return raw, nil
}

// decodeDirs parses the first block, once the entries' refs (as the second
// holds them) come from refs, returning the records, the directories' tree
// refs (which the second holds in the order of the first) and how many
// names the records hold. The names and entries of all records share two
// arrays, each record's clipped to its own.
func decodeDirs(block []byte, refs <-chan *tailRefs) (map[string]*Dir, map[string]string, int, error) {
	raw, err := openBlock(block)
	tr := <-refs
	if err != nil {
		return nil, nil, 0, err
	}
	if tr == nil {
		return nil, nil, 0, ErrDamaged
	}
	rs := tr.spans
	r := wire.NewReader(raw)
	base := r.Varint()
	nd := r.Uvarint()
	// A record takes 10 bytes at least (path length, six stat fields,
	// verified, listed, names): more than the block holds is damage, not
	// an allocation to make.
	if nd > uint64(len(r.B))/10 || nd != tr.dirs {
		return nil, nil, 0, ErrDamaged
	}
	dirs := make(map[string]*Dir, nd)
	// The refs of the trees share one buffer.
	trees := &wire.Reader{B: tr.treeOf, Arena: make([]byte, 0, (int(nd)+1)*wire.RefLen)}
	treeOf := make(map[string]string, nd)
	recs := make([]Dir, nd)
	names := make([]string, 0, len(rs)+int(nd))
	ents := make([]Entry, 0, len(rs)+int(nd))
	k := 0 // the next ref
	for i := range recs {
		if r.Err != nil {
			break
		}
		d := r.Str()
		if ref := cacheRef(trees); ref != "" {
			treeOf[d] = ref
		}
		rec := &recs[i]
		rec.St = readStat(r)
		rec.Verified = base - r.Varint()
		rec.Listed = r.Bool()
		nn := r.Uvarint()
		if nn > uint64(len(r.B)) {
			return nil, nil, 0, ErrDamaged
		}
		n0 := len(names)
		for j := uint64(0); j < nn && r.Err == nil; j++ {
			names = append(names, r.Str())
			var e Entry
			if r.Bool() {
				e.St = readStat(r)
				e.Verified = base - r.Varint()
				if k >= len(rs) {
					return nil, nil, 0, ErrDamaged
				}
				e.off, e.n = rs[k].off, rs[k].n
				k++
			}
			ents = append(ents, e)
		}
		rec.Names, rec.Ents = names[n0:len(names):len(names)], ents[n0:len(ents):len(ents)]
		if !slices.IsSorted(rec.Names) {
			return nil, nil, 0, ErrDamaged
		}
		dirs[d] = rec
	}
	if r.Err != nil || len(r.B) != 0 || k != len(rs) || trees.Err != nil || len(trees.B) != 0 {
		return nil, nil, 0, ErrDamaged
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
func (c *Cache) decodeTail(block []byte, refs chan<- *tailRefs) error {
	raw, err := checkCRC(block)
	if err != nil {
		refs <- nil
		return err
	}
	c.read = raw
	r := wire.NewReader(raw)
	ne := r.Uvarint()
	if ne > uint64(len(r.B)) {
		refs <- nil
		return ErrDamaged
	}
	rs := make([]refSpan, ne)
	for i := range rs {
		at := len(raw) - len(r.B)
		ref, base, delta := skipCacheRef(r), skipCacheRef(r), skipCacheRef(r)
		// The checksum guards against damage; refs are checked again where
		// a manifest is loaded.
		if r.Err == nil && ref && delta == base {
			rs[i] = refSpan{uint32(at), uint16(len(raw) - len(r.B) - at)}
		}
	}
	nd := r.Uvarint()
	at := len(r.B)
	for range min(nd, uint64(len(r.B))) {
		skipCacheRef(r)
	}
	if r.Err != nil || nd > uint64(at) {
		refs <- nil
		return ErrDamaged
	}
	refs <- &tailRefs{spans: rs, treeOf: raw[len(raw)-at : len(raw)-len(r.B)], dirs: nd}
	nt := r.Uvarint()
	if nt > uint64(len(r.B)) {
		return ErrDamaged
	}
	// The trees' refs share one buffer, the directories' another.
	r.Arena = make([]byte, 0, (int(nt)+1)*wire.RefLen)
	c.Trees = make(map[string][]byte, nt)
	for i := uint64(0); i < nt && r.Err == nil; i++ {
		ref := cacheRef(r)
		c.Trees[ref] = r.Bytes()
		if r.Bool() {
			c.Older[ref] = true
		}
	}
	c.Last = Last{ID: r.Str(), Tree: cacheRef(r), Verified: r.Varint()}
	if r.Err != nil || len(r.B) != 0 {
		return ErrDamaged
	}
	return nil
}

// decodeBlock decompresses one S2 block of the cache, bounded.
func decodeBlock(b []byte) ([]byte, error) {
	size, err := s2.DecodedLen(b)
	if err != nil || size > cacheMaxBody {
		return nil, fmt.Errorf("%w: length %d: %v", ErrDamaged, size, err)
	}
	out, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return out, nil
}

func appendStat(b []byte, st Stat) []byte {
	b = binary.AppendUvarint(b, uint64(st.Mode))
	b = binary.AppendVarint(b, st.Size)
	b = binary.AppendVarint(b, st.Mtime)
	b = binary.AppendVarint(b, st.Ctime)
	b = binary.AppendUvarint(b, st.Ino)
	return binary.AppendUvarint(b, st.Dev)
}

func readStat(r *wire.Reader) Stat {
	var st Stat
	st.Mode = fs.FileMode(r.Uvarint())
	st.Size = r.Varint()
	st.Mtime = r.Varint()
	st.Ctime = r.Varint()
	st.Ino = r.Uvarint()
	st.Dev = r.Uvarint()
	return st
}
