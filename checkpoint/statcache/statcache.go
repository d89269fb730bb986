package statcache

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// Cache is the stat cache. It is kept per directory, as the walk goes: a directory's record holds
// its listing and its files' entries side by side, so the walk finds an
// entry by its position in the listing (no map of every path to build at
// load or to look up per file), and anyone else by the directory's record
// and a binary search of its names.
//
// A decoded cache is lazy: its records, trees and directories' trees are
// read from the file as they are asked for (Listing, Slot, Entry, TreeRef,
// Tree, which work either way), and Dirs, TreeOf, Trees and Older are
// nil until Full fills them. Code that changes the cache or reads those
// fields calls Full first (Put, Relist and the encoders do).
type Cache struct {
	Dirs map[string]*Dir
	// count is how many names Dirs held when read or relisted.
	count int
	// Trees holds the tree objects of the last tree snapshot by ref, so
	// loading a checkpoint reads from cas only the trees that differ from
	// it.
	Trees map[string][]byte
	// Older marks the trees of Trees kept from snapshots before the last.
	Older map[string]bool
	// gone holds, for a sidecar's encoding, the trees its base holds
	// that the cache no longer does.
	gone map[string]bool
	// TreeOf is the ref of the tree object of each directory of the last
	// tree snapshot that has one (git's cache-tree): a directory proven
	// unchanged since (see ByLast) has that tree again.
	TreeOf map[string]string
	// Last is the tree snapshot that wrote entries verified at its start:
	// while its manifest is stored, naming the same root tree, GC keeps
	// every blob it names, so those entries' blobs need no lookup.
	Last Last
	// read and added hold the entries' refs as the file does (three
	// appendCacheRef each: ref, base, delta): read is the decoded block
	// they were read from, added what Put wrote since. An entry holds
	// where its own are, so it has no pointer: the thousands of them cost
	// the GC nothing to scan, nor a write barrier to fill.
	read, added []byte
	// lz is the file the cache was decoded from (nil for New's), and
	// side the sidecar read over it (nil for none; see Overlay), whose
	// entries' refs are in sideRead.
	lz, side *lazy
	sideRead []byte
	// base is lz's file, which a sidecar names (see Overlay), and over
	// what a sidecar encoding of this cache names: zero for a whole
	// cache.
	base, over fileID
	// alias holds Verified times besides Last.Verified that mean the
	// last tree snapshot verified an entry (see ByLastAt), and baseAlias
	// those of the base's records as read (alias and Last.Verified then):
	// a snapshot that finds a base record unchanged leaves it as it is
	// instead of writing it again with its own time (see EncodeSide).
	alias, baseAlias []int64
	// relisted is the verified time of the last Relist, 0 for none.
	relisted int64
	full     atomic.Bool // the maps hold everything (see Full)
	fullMu   sync.Mutex
}

// Last is the tree snapshot the cache was last written by (see Cache.Last).
type Last struct {
	ID, Tree string
	Verified int64
}

// Dir is one directory's record. A directory's mtime and ctime change
// whenever an entry is added, removed or renamed in it, so while its stat
// is st (and not racy), the names of a listed record are its names, and
// the walk stats them without opening and reading the directory. A record
// not listed (a files checkpoint put into a directory no walk read, or a
// name the listing lacked) only holds entries.
type Dir struct {
	St       Stat
	Verified int64
	Listed   bool
	Names    []string // sorted
	Ents     []Entry  // Ents[i] is Names[i]'s entry; n 0 for none
	// removed marks a sidecar's record of a directory the base holds
	// and the cache no longer does.
	removed bool
}

// Seek moves at, an index into r's Names, forward to name's place and
// reports whether name is there: names asked for in order take one pass.
func (r *Dir) Seek(at int, name string) (int, bool) {
	for at < len(r.Names) && r.Names[at] < name {
		at++
	}
	return at, at < len(r.Names) && r.Names[at] == name
}

// Find returns the index of name in r's Names, or -1.
func (r *Dir) Find(name string) int {
	if r == nil {
		return -1
	}
	i, ok := slices.BinarySearch(r.Names, name)
	if !ok {
		return -1
	}
	return i
}

// Entry is a file's record: its stat and where its refs are.
type Entry struct {
	St       Stat
	Verified int64 // ns: when the snapshot that last hashed or checked it started
	// refs are the entry's ref, base and delta in Cache.read, or in
	// Cache.added when off has refsAdded set (see RefsOf): most
	// entries are only compared by stat, never turned into strings.
	off uint32
	n   uint16 // 0: no entry
}

// refsAdded marks an offset into Cache.added, refsSide one into
// Cache.sideRead.
const (
	refsAdded = 1 << 31
	refsSide  = 1 << 30
)

// Refs is an entry's content: ref, and how it is stored when as a
// delta (base, delta; see Entry).
type Refs struct{ Ref, Base, Delta string }

// rawRefs returns the bytes of e's refs, as the file holds them.
func (c *Cache) rawRefs(e Entry) []byte {
	switch {
	case e.off&refsAdded != 0:
		off := e.off &^ refsAdded
		return c.added[off : off+uint32(e.n)]
	case e.off&refsSide != 0:
		off := e.off &^ refsSide
		return c.sideRead[off : off+uint32(e.n)]
	}
	return c.read[e.off : e.off+uint32(e.n)]
}

// RefsOf returns e's refs as strings.
func (c *Cache) RefsOf(e Entry) Refs {
	r := &wire.Reader{B: c.rawRefs(e)}
	return Refs{cacheRef(r), cacheRef(r), cacheRef(r)}
}

// cacheMagic starts the file (see Encode for the rest).
const cacheMagic = cacheFamily + "18\n"

// cacheFamily starts every version's cache: one another version of trove
// wrote is not damage, only rebuilt (ErrVersion).
const cacheFamily = "trove-statcache-"

// ErrDamaged is what Decode returns for a cache it cannot read: a
// damaged file, which is only rebuilt.
var ErrDamaged = errors.New("stat cache damaged")

// ErrVersion is what Decode returns for a cache another version of trove
// wrote; it wraps ErrDamaged.
var ErrVersion = fmt.Errorf("%w: written by another version", ErrDamaged)

// Racy windows: how close to a snapshot's start an mtime or ctime must be
// for the stat to prove nothing. Sub-second timestamps come from a clock
// that lags by at most a scheduler tick; whole-second ones may be truncated
// by a second or two (ext3, HFS+, FAT).
const (
	racyFine   = 100 * time.Millisecond
	racyCoarse = 2 * time.Second
)

func New() *Cache {
	c := &Cache{Dirs: make(map[string]*Dir), Trees: make(map[string][]byte), Older: make(map[string]bool), TreeOf: make(map[string]string)}
	c.full.Store(true)
	return c
}

// dir returns dir's record, or nil. Safe for concurrent use.
func (c *Cache) dir(dir string) *Dir { return c.dirNear(nil, dir) }

// Near is where one walker last found a directory's record in the file.
// The records are in the order a walk reads them (walkOrder), so the
// next directory a walker reads is most often the next record: it is
// tried first, before the table, whose slots are spread over the file.
// The zero Near knows nothing; a Near is for one goroutine.
type Near struct{ next int }

// dirNear is dir, trying the record after n's first when n is not nil.
func (c *Cache) dirNear(n *Near, dir string) *Dir {
	if c.full.Load() {
		return c.Dirs[dir]
	}
	if c.side != nil {
		if i, r := c.side.find(dir); i >= 0 {
			if d := c.side.dirFrom(i, r); d != nil && !d.removed {
				return d
			}
			return nil
		}
	}
	lz := c.lz
	if n != nil && n.next > 0 && n.next < lz.nd {
		if path, r, ok := lz.pathAt(n.next); ok && path == dir {
			n.next++
			return lz.dirFrom(n.next-1, r)
		}
	}
	i, r := lz.find(dir)
	if i < 0 {
		return nil
	}
	if n != nil {
		n.next = i + 1
	}
	return lz.dirFrom(i, r)
}

// NumDirs is about how many directories the cache holds: a walk's size.
func (c *Cache) NumDirs() int {
	if c.full.Load() {
		return len(c.Dirs)
	}
	return c.lz.nd
}

// TreeRef returns the ref of dir's tree object in the last tree snapshot
// (see TreeOf), or "".
func (c *Cache) TreeRef(dir string) string {
	if c.full.Load() {
		return c.TreeOf[dir]
	}
	if c.side != nil {
		if i, _ := c.side.find(dir); i >= 0 {
			return c.side.treeRef(i) // "" for a removed one
		}
	}
	if i, _ := c.lz.find(dir); i >= 0 {
		return c.lz.treeRef(i)
	}
	return ""
}

// Tree returns the tree object of ref, when the cache holds it (see
// Trees).
func (c *Cache) Tree(ref string) ([]byte, bool) {
	if c.full.Load() {
		b, ok := c.Trees[ref]
		return b, ok
	}
	if c.side != nil {
		if b, flag, ok := c.side.tree(ref); ok {
			return b, flag != treeGone
		}
	}
	b, _, ok := c.lz.tree(ref)
	return b, ok
}

// Listing returns dir's record, if any, and whether st Proves its names
// current.
func (c *Cache) Listing(dir string, st Stat, window time.Duration) (*Dir, bool) {
	return c.ListingNear(nil, dir, st, window)
}

// ListingNear is Listing for a walker that read the directory's record
// last from n (nil for none), and updates n.
func (c *Cache) ListingNear(n *Near, dir string, st Stat, window time.Duration) (*Dir, bool) {
	r := c.dirNear(n, dir)
	if r == nil || !r.Listed || r.St != st || racy(Entry{St: r.St, Verified: r.Verified}, window) {
		return r, false
	}
	return r, true
}

// Size is about how many names the records hold: a walk's size.
func (c *Cache) Size() int { return c.count }

// splitPath returns p's directory ("." for the root) and name.
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// Slot returns the entry of path, to update in place, or nil. It makes
// the cache Full: a lazy record's entries may be the file's bytes.
func (c *Cache) Slot(path string) *Entry {
	var k Cursor
	return k.Slot(c, path)
}

// PrevRefs returns the refs of path's entry, if any: a changed file's
// last stored version, the base of its delta.
func (c *Cache) PrevRefs(path string) *Refs {
	ce, ok := c.Entry(path)
	if !ok {
		return nil
	}
	refs := c.RefsOf(ce)
	return &refs
}

// Entry returns the entry of path. Safe for concurrent use.
func (c *Cache) Entry(path string) (Entry, bool) {
	dir, name := splitPath(path)
	r := c.dir(dir)
	if i := r.Find(name); i >= 0 && r.Ents[i].n > 0 {
		return r.Ents[i], true
	}
	return Entry{}, false
}

// Lookup returns the cached digest of path when st Proves the content
// unchanged: identical stat and not racy.
func (c *Cache) Lookup(path string, st Stat, window time.Duration) (string, bool) {
	e, _ := c.Entry(path)
	if !Proves(e, st, window) {
		return "", false
	}
	return c.RefsOf(e).Ref, true
}

// Proves reports whether e vouches for the content of a file with stat st:
// an entry, with that very stat, and not racy.
func Proves(e Entry, st Stat, window time.Duration) bool {
	return e.n > 0 && e.St == st && !racy(e, window)
}

// ByLast reports whether the last tree snapshot verified e: with a stat
// that proves its content (see Proves), the file is the one that snapshot
// stored, not one a files checkpoint put since.
func (c *Cache) ByLast(e Entry) bool {
	return c.Last.Tree != "" && c.ByLastAt(e.Verified)
}

// ByLastAt reports whether an entry or a directory's record verified at
// v was verified by the last tree snapshot: v is its start, or one of the
// earlier starts a sidecar says its base's records count as (Overlay).
func (c *Cache) ByLastAt(v int64) bool {
	return v == c.Last.Verified || slices.Contains(c.alias, v)
}

// racy is the racy-git rule: a file whose mtime (or ctime) is not clearly
// before the moment its content was hashed may have been changed again
// within the same timestamp tick, invisibly to stat. Such an entry is
// re-hashed, whatever its stat says.
func racy(e Entry, window time.Duration) bool {
	if window <= 0 {
		window = racyFine
		if e.St.Mtime%int64(time.Second) == 0 {
			window = racyCoarse
		}
	}
	limit := e.Verified - int64(window)
	return e.St.Mtime >= limit || (e.St.Ctime != 0 && e.St.Ctime >= limit)
}

// Put records path's stat and content (refs).
func (c *Cache) Put(path string, st Stat, refs Refs, verified int64) {
	c.Full()
	off := len(c.added)
	c.added = appendCacheRef(appendCacheRef(appendCacheRef(c.added, refs.Ref), refs.Base), refs.Delta)
	ce := Entry{St: st, Verified: verified, off: uint32(off) | refsAdded, n: uint16(len(c.added) - off)}
	dir, name := splitPath(path)
	r := c.Dirs[dir]
	if r == nil {
		r = &Dir{}
		c.Dirs[dir] = r
	}
	i, ok := slices.BinarySearch(r.Names, name)
	if !ok {
		// A name the listing lacks: it is no longer the directory's.
		r.Listed = false
		// Clipped, so that a record decoded into a shared array never
		// writes into its neighbour's.
		r.Names = slices.Insert(slices.Clip(r.Names), i, name)
		r.Ents = slices.Insert(slices.Clip(r.Ents), i, Entry{})
	}
	r.Ents[i] = ce
}

// addedMax is how many bytes of refs Put may leave behind in added (those
// of entries put again or deleted since) before CompactAdded drops them:
// a Manager an agent keeps for a long session puts on every snapshot.
const addedMax = 1 << 20

// CompactAdded copies the refs entries still use out of added, when it has
// grown past addedMax; nothing may read the cache meanwhile.
func (c *Cache) CompactAdded() {
	c.Full()
	if len(c.added) <= addedMax {
		return
	}
	var b []byte
	for _, r := range c.Dirs {
		for i, e := range r.Ents {
			if e.n > 0 && e.off&refsAdded != 0 {
				raw := c.rawRefs(e)
				r.Ents[i].off = uint32(len(b)) | refsAdded
				b = append(b, raw...)
			}
		}
	}
	c.added = b
}

// Relist makes the listings of a tree snapshot's walk the cache's records,
// keeping of the entries only those the snapshot verified (at verified):
// the paths it did not store (deleted, ignored since, or only named by a
// files checkpoint) would only grow the cache. A record whose names are
// the listing's (most: the walk took them from it) is kept in place, its
// other entries cleared, and so is the map when every listing has one:
// building them afresh put the whole cache into new memory, on the path a
// snapshot waits for.
func (c *Cache) Relist(listings map[string]Listing, verified int64) {
	c.Full()
	// Every entry left is verified at verified, by the snapshot about to
	// be the last.
	c.relisted, c.alias = verified, nil
	n, fresh, known := 0, 0, 0
	for d, l := range listings {
		n += len(l.Names)
		old := c.Dirs[d]
		if old != nil {
			known++
		}
		if old == nil || !slices.Equal(old.Names, l.Names) {
			fresh += len(l.Names)
		}
	}
	// Both hold the same directories: the map is kept.
	dirs := c.Dirs
	if known != len(listings) || len(dirs) != len(listings) {
		dirs = make(map[string]*Dir, len(listings))
	}
	ents := make([]Entry, fresh)
	for d, l := range listings {
		old := c.Dirs[d]
		if old != nil && slices.Equal(old.Names, l.Names) {
			for i, e := range old.Ents {
				if e.n > 0 && e.Verified != verified {
					old.Ents[i] = Entry{}
				}
			}
			old.St, old.Verified, old.Listed = l.St, verified, true
			dirs[d] = old
			continue
		}
		r := &Dir{St: l.St, Verified: verified, Listed: true, Names: l.Names}
		r.Ents, ents = ents[:len(l.Names):len(l.Names)], ents[len(l.Names):]
		if old != nil {
			j := 0
			for i, name := range r.Names {
				var ok bool
				if j, ok = old.Seek(j, name); ok && old.Ents[j].n > 0 && old.Ents[j].Verified == verified {
					r.Ents[i] = old.Ents[j]
				}
			}
		}
		dirs[d] = r
	}
	c.Dirs, c.count = dirs, n
}

// Cursor finds the entries of paths in order, looking a directory's
// record up once for all its files.
type Cursor struct {
	dir string
	rec *Dir
}

// Slot is Cache.Slot.
func (k *Cursor) Slot(c *Cache, path string) *Entry {
	c.Full()
	dir, name := splitPath(path)
	if k.rec == nil || dir != k.dir {
		k.dir, k.rec = dir, c.dir(dir)
	}
	if i := k.rec.Find(name); i >= 0 && k.rec.Ents[i].n > 0 {
		return &k.rec.Ents[i]
	}
	return nil
}

// Listing is a directory as a walk read it.
type Listing struct {
	St    Stat
	Names []string // sorted
}
