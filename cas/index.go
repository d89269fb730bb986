package cas

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovekit/trove/backend"
)

// index caches the pack indexes of the store. Indexes are small and change
// rarely; a miss re-lists the index directory and loads what is new.
type index struct {
	refreshMu sync.Mutex // one refresh at a time
	// begun counts the refreshes begun; refreshed is the number of the
	// last one that listed the index directory and loaded it, under
	// refreshMu (see Store.refreshSince).
	begun     atomic.Uint64
	refreshed uint64

	mu     sync.RWMutex
	loaded bool
	packs  map[string]*packIdx
	refs   map[Ref]entry // of the packs not taken from table
	table  *idxTable     // the index cache this process read (idxcache.go)
}

type packIdx struct {
	id      string
	size    int64     // of the pack
	idxSize int64     // of the index object, to see it rewritten
	modTime time.Time // of the index object
	entries []entry   // nil when cached: see index.entriesOf
	// cached: the pack came from the index cache, number num of its table;
	// its entries are the table's records.
	cached bool
	num    int
}

func (x *index) lookup(ref Ref) (entry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if e, ok := x.refs[ref]; ok {
		return e, true
	}
	if x.table == nil {
		return entry{}, false
	}
	// A record counts while its pack is the one the cache had: dropped or
	// rewritten since, the pack is another (or no) packIdx.
	return x.table.find(ref, func(p *packIdx) bool { return x.packs[p.id] == p })
}

// lookupUntried is lookup for a pack not in tried: once a pack is found
// gone or damaged, another may hold the blob (an index that outlived its
// pack, merged by AutoPack, after a crash). With nothing tried it is
// lookup; else it looks through every pack.
func (x *index) lookupUntried(ref Ref, tried map[string]bool) (entry, bool) {
	if e, ok := x.lookup(ref); !ok || len(tried) == 0 || !tried[e.packID] {
		return e, ok
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.table != nil {
		if e, ok := x.table.find(ref, func(p *packIdx) bool { return x.packs[p.id] == p && !tried[p.id] }); ok {
			return e, true
		}
	}
	for id, p := range x.packs {
		if p.cached || tried[id] {
			continue
		}
		for _, e := range p.entries {
			if e.ref == ref {
				return e, true
			}
		}
	}
	return entry{}, false
}

// entriesOf returns the entries of p, a pack of x.
func (x *index) entriesOf(p *packIdx) []entry {
	if !p.cached {
		return p.entries
	}
	x.mu.RLock()
	t := x.table
	x.mu.RUnlock()
	return t.entriesOf(p.num)
}

func (x *index) isLoaded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.loaded
}

func (x *index) modTime(id string) time.Time {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.packs[id]; p != nil {
		return p.modTime
	}
	return time.Time{}
}

// snapshot returns the packs currently known.
func (x *index) snapshot() []*packIdx {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*packIdx, 0, len(x.packs))
	for _, p := range x.packs {
		out = append(out, p)
	}
	return out
}

func (x *index) packsHolding(ref Ref) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var ids []string
	if x.table != nil {
		// The cached packs holding it, in one search of the table: a
		// record counts while its pack is the one the cache had.
		for _, p := range x.table.holding(ref) {
			if x.packs[p.id] == p && !slices.Contains(ids, p.id) {
				ids = append(ids, p.id)
			}
		}
	}
	for id, p := range x.packs {
		if p.cached {
			continue
		}
		for _, e := range p.entries {
			if e.ref == ref {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids
}

// add records a pack this process just wrote.
func (x *index) add(p *packIdx) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.packs == nil {
		x.packs = map[string]*packIdx{}
		x.refs = map[Ref]entry{}
	}
	x.packs[p.id] = p
	for _, e := range p.entries {
		if _, ok := x.refs[e.ref]; !ok {
			x.refs[e.ref] = e
		}
	}
}

// LoadIndexes reads the pack indexes now, as the first lookup would: a
// caller about to look blobs up can do it while it does other work.
func (s *Store) LoadIndexes(ctx context.Context) error { return s.ensureIndex(ctx) }

func (s *Store) ensureIndex(ctx context.Context) error {
	if s.idx.isLoaded() {
		return nil
	}
	return s.refresh(ctx)
}

// refresh brings the cache in line with the index directory: new and
// rewritten indexes are loaded, removed ones dropped.
func (s *Store) refresh(ctx context.Context) error {
	x := &s.idx
	x.refreshMu.Lock()
	defer x.refreshMu.Unlock()
	return s.refreshLocked(ctx)
}

// refreshSince refreshes the cache unless a refresh begun after gen (a
// value of idx.begun) has done so already, or is doing it: a batch made
// before a process loads its indexes (a snapshot loads them while it
// walks) lists the index directory once, not a second time for its
// first blob.
func (s *Store) refreshSince(ctx context.Context, gen uint64) error {
	x := &s.idx
	x.refreshMu.Lock()
	defer x.refreshMu.Unlock()
	if x.refreshed > gen {
		return nil
	}
	return s.refreshLocked(ctx)
}

// refreshLocked is refresh, under idx.refreshMu.
func (s *Store) refreshLocked(ctx context.Context) error {
	x := &s.idx
	gen := x.begun.Add(1)

	listed := map[string]backend.Info{}
	for fi, err := range s.st.List(ctx, s.indexDir()) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		if id := fi.Base(); !fi.IsDir && validID(id) {
			listed[id] = fi
		}
	}

	first := !x.isLoaded()
	// A process's first refresh takes what it can from the index cache,
	// where there are indexes enough for it to have been written.
	var t *idxTable
	cachedPacks := map[string]*packIdx{}
	if first && idxCacheWorth(listed) {
		if t = s.readIdxCache(ctx); t != nil {
			for _, p := range t.packs {
				cachedPacks[p.id] = p
			}
		}
	}

	x.mu.RLock()
	var load []backend.Info
	var adopted []*packIdx
	changed := false
	for id, fi := range listed {
		p := x.packs[id]
		switch {
		case p == nil:
			if c := cachedPacks[id]; c != nil && c.idxSize == fi.Size && !c.modTime.IsZero() && c.modTime.Equal(fi.ModTime) {
				adopted = append(adopted, c)
				continue
			}
			load = append(load, fi)
		case p.idxSize != fi.Size || (!p.modTime.IsZero() && !p.modTime.Equal(fi.ModTime)):
			load = append(load, fi)
			changed = true
		}
	}
	for id := range x.packs {
		if _, ok := listed[id]; !ok {
			changed = true
		}
	}
	x.mu.RUnlock()

	var fresh []*packIdx
	for _, fi := range load {
		p, err := s.loadIndex(ctx, fi)
		if errors.Is(err, fs.ErrNotExist) {
			delete(listed, fi.Base())
			changed = true
			continue
		}
		if isCorrupt(err) {
			// Verify reports it; readers go on with the other packs.
			s.cfg.log.Warn("cas: skipping unreadable pack index", "name", fi.Name, "err", err)
			delete(listed, fi.Base())
			continue
		}
		if err != nil {
			return err
		}
		fresh = append(fresh, p)
	}

	x.mu.Lock()
	if x.packs == nil {
		// Sized at once: growing it entry by entry costs more than
		// reading the indexes.
		n := 0
		for _, p := range fresh {
			n += len(p.entries)
		}
		x.packs = make(map[string]*packIdx, len(fresh)+len(adopted))
		x.refs = make(map[Ref]entry, n)
	}
	if len(adopted) > 0 {
		x.table = t
	}
	for _, p := range adopted {
		x.packs[p.id] = p
	}
	for _, p := range fresh {
		x.packs[p.id] = p
	}
	for id, p := range x.packs {
		if _, ok := listed[id]; !ok {
			delete(x.packs, id)
			changed = true
		} else if p.modTime.IsZero() {
			p.modTime = listed[id].ModTime
		}
	}
	if changed {
		x.refs = make(map[Ref]entry, len(x.refs))
		for _, p := range x.packs {
			for _, e := range p.entries { // none for a cached pack
				if _, ok := x.refs[e.ref]; !ok {
					x.refs[e.ref] = e
				}
			}
		}
	} else {
		for _, p := range fresh {
			for _, e := range p.entries {
				if _, ok := x.refs[e.ref]; !ok {
					x.refs[e.ref] = e
				}
			}
		}
	}
	x.loaded = true
	x.refreshed = gen
	// The cache is written again once it saves less than it could: enough
	// indexes were read one by one, or it names packs gone since.
	stale := 0
	if t != nil {
		stale = len(t.packs) - len(adopted)
	}
	var data []byte
	if len(fresh)+stale >= idxCacheRewrite && idxCacheWorth(listed) {
		packs := make([]*packIdx, 0, len(x.packs))
		for _, p := range x.packs {
			packs = append(packs, p)
		}
		data = encodeIdxCache(packs, x.table)
	}
	x.mu.Unlock()
	if data != nil {
		// A store this process may only read (a backup, a viewer's
		// credentials) refuses it at every start: not worth a warning.
		if err := s.st.WriteFile(ctx, s.idxCacheName(), data); err != nil {
			s.cfg.log.Debug("cas: index cache not saved", "name", s.idxCacheName(), "err", err)
		}
	}
	return nil
}

func (s *Store) loadIndex(ctx context.Context, fi backend.Info) (*packIdx, error) {
	data, err := s.st.ReadFile(ctx, fi.Name)
	if err != nil {
		return nil, err
	}
	id := fi.Base()
	size, entries, err := decodeIndex(id, data)
	if err != nil {
		return nil, backend.PathErr("read", fi.Name, err)
	}
	return &packIdx{id: id, size: size, idxSize: int64(len(data)), modTime: fi.ModTime, entries: entries}, nil
}

// dropFromPack removes the entries for which drop is true from a pack's
// index, rereading the index from storage rather than trusting the cache. An
// index left empty is removed, then its pack: never a pack before its index.
func (s *Store) dropFromPack(ctx context.Context, id string, drop func(entry) bool) (int, error) {
	name := s.indexName(id)
	data, err := s.st.ReadFile(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	size, entries, err := decodeIndex(id, data)
	if err != nil {
		return 0, backend.PathErr("read", name, err)
	}
	keep := entries[:0:0]
	for _, e := range entries {
		if !drop(e) {
			keep = append(keep, e)
		}
	}
	n := len(entries) - len(keep)
	switch {
	case n == 0:
		return 0, nil
	case len(keep) == 0:
		return n, s.removePack(ctx, id)
	}
	return n, s.st.WriteFile(ctx, name, encodeIndex(size, keep, isColdIndex(data)))
}

// removePack removes a pack and its index. Unlink need not be durable, so
// the index is first emptied with a durable WriteFile: after a crash at any
// point an index names nothing or its pack is still there. An empty index
// (and its pack, if any) is garbage that GC removes.
func (s *Store) removePack(ctx context.Context, id string) error {
	name := s.indexName(id)
	if err := s.st.WriteFile(ctx, name, encodeIndex(0, nil, false)); err != nil {
		return err
	}
	if err := s.st.Unlink(ctx, s.packName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := s.st.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
