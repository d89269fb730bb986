package statcache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// The cache is written as two blocks: magic, uvarint length of the first,
// the first, the second, both raw: S2 shrank the first by a third but
// decoding it, and the varints it held, was a tenth of a dry run's work
// after process start, on its critical path (the walk waits for the
// cache). A snapshot encodes the first (the directories, final once its
// files are stored) while it builds its trees, and writes the second
// (trees and the last snapshot) after; a reader decodes the two at once.
// Each block ends with the CRC-32C of its bytes (the second's started from
// the first's: headSum). The first holds the
// directories: path, stat and verified time at fixed width, whether
// listed, and the names, each with a flags byte (an entry follows; its
// ctime is its mtime; its device, or its verified time, is its
// directory's) and the entry's stat and verified time at fixed width,
// little-endian, leaving out what the flags say, without its refs. The
// second holds the number of entries and their refs in the order of the
// first, the number of directories and their tree refs (treeOf) in the
// order of the first (which the first's decoder reads, while the trees
// are read), the trees, and the last snapshot.

// Encode writes the whole cache.
func (c *Cache) Encode() []byte { return c.EncodeTail(c.EncodeHead()) }

// Head is the first block and the order it holds the directories in.
type Head struct {
	block   []byte
	paths   []string
	recs    []*Dir
	refs    int // bytes of the entries' refs
	entries int
}

// EncodeHead encodes the directories.
func (c *Cache) EncodeHead() Head {
	h := Head{paths: make([]string, 0, len(c.Dirs)), recs: make([]*Dir, 0, len(c.Dirs))}
	size := binary.MaxVarintLen64 + crc32.Size
	for d, r := range c.Dirs {
		size += 2*binary.MaxVarintLen64 + len(d) + statSize + 9
		for _, n := range r.Names {
			size += binary.MaxVarintLen64 + len(n) + 1 + entryMax
		}
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(c.Dirs)))
	// In map order: nothing needs them sorted.
	for d, r := range c.Dirs {
		h.paths = append(h.paths, d)
		h.recs = append(h.recs, r)
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
				h.refs += int(e.n)
				h.entries++
			}
		}
	}
	h.block = appendCRC(b)
	return h
}

// EncodeTail encodes the refs, trees and the last snapshot after head and
// returns the whole file.
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
// first block and the entries' refs, then calls ready before the rest:
// until it returns, the directories' trees, the trees and the last
// snapshot (TreeOf, Trees, Older, Last) may still change. A snapshot
// writes most of the file so while it finishes them. An error from ready
// stops the write there.
func (c *Cache) WritePartsAfter(w io.Writer, head Head, ready func() error) error {
	prefix := binary.AppendUvarint([]byte(cacheMagic), uint64(len(head.block)))
	if _, err := w.Write(prefix); err != nil {
		return err
	}
	if _, err := w.Write(head.block); err != nil {
		return err
	}
	t := tailWriter{w: w, b: make([]byte, 0, tailChunk+tailRoom), crc: headSum(head.block)}
	t.b = binary.AppendUvarint(t.b, uint64(head.entries))
	for _, r := range head.recs {
		for _, e := range r.Ents {
			if e.n > 0 {
				t.b = append(t.b, c.rawRefs(e)...)
				t.spill()
			}
		}
	}
	if ready != nil {
		t.flush()
		if err := cmp.Or(t.err, ready()); err != nil {
			return err
		}
	}
	t.b = binary.AppendUvarint(t.b, uint64(len(head.paths)))
	for _, d := range head.paths {
		t.b = appendCacheRef(t.b, c.TreeOf[d])
		t.spill()
	}
	t.b = binary.AppendUvarint(t.b, uint64(len(c.Trees)))
	for r, tree := range c.Trees {
		t.b = appendCacheRef(t.b, r)
		t.b = binary.AppendUvarint(t.b, uint64(len(tree)))
		t.bytes(tree)
		t.b = wire.AppendBool(t.b, c.Older[r])
		t.spill()
	}
	t.b = wire.AppendStr(t.b, c.Last.ID)
	t.b = appendCacheRef(t.b, c.Last.Tree)
	t.b = binary.AppendVarint(t.b, c.Last.Verified)
	t.flush()
	t.b = binary.LittleEndian.AppendUint32(t.b, t.crc)
	_, err := t.w.Write(t.b)
	return cmp.Or(t.err, err)
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
	err := c.decodeTail(tail, headSum(head), refs)
	wg.Wait()
	if err = cmp.Or(err, errD); err != nil {
		return nil, err
	}
	return c, nil
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

// decodeDirs parses the first block, once the entries' refs (as the second
// holds them) come from refs, returning the records, the directories' tree
// refs (which the second holds in the order of the first) and how many
// names the records hold. The names and entries of all records share two
// arrays, each record's clipped to its own.
func decodeDirs(block []byte, refs <-chan *tailRefs) (map[string]*Dir, map[string]string, int, error) {
	raw, err := checkCRC(block)
	tr := <-refs
	if err != nil {
		return nil, nil, 0, err
	}
	if tr == nil {
		return nil, nil, 0, ErrDamaged
	}
	rs := tr.spans
	r := wire.NewReader(raw)
	nd := r.Uvarint()
	// A record takes 55 bytes at least (path length, stat, verified,
	// listed, names): more than the block holds is damage, not an
	// allocation to make.
	if nd > uint64(len(r.B))/(statSize+11) || nd != tr.dirs {
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
		d := r.Str()
		if ref := cacheRef(trees); ref != "" {
			treeOf[d] = ref
		}
		rec := &recs[i]
		fx := fixed(r, statSize+9)
		if fx == nil {
			return nil, nil, 0, ErrDamaged
		}
		rec.St = readStat(fx)
		rec.Verified = int64(binary.LittleEndian.Uint64(fx[statSize:]))
		rec.Listed = fx[statSize+8] != 0
		nn := r.Uvarint()
		if r.Err != nil || nn > uint64(len(r.B))/2 || fx[statSize+8] > 1 {
			return nil, nil, 0, ErrDamaged
		}
		n0 := len(names)
		for j := uint64(0); j < nn; j++ {
			names = append(names, r.Str())
			e, ok := readEntry(r, rec)
			if !ok {
				return nil, nil, 0, ErrDamaged
			}
			if e.n > 0 {
				if k >= len(rs) {
					return nil, nil, 0, ErrDamaged
				}
				e.off, e.n = rs[k].off, rs[k].n
				k++
			}
			ents = append(ents, e)
		}
		rec.Names, rec.Ents = names[n0:len(names):len(names)], ents[n0:len(ents):len(ents)]
		if r.Err != nil || !slices.IsSorted(rec.Names) {
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
func (c *Cache) decodeTail(block []byte, seed uint32, refs chan<- *tailRefs) error {
	raw, err := checkCRCFrom(block, seed)
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
