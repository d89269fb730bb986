package checkpoint

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/trovekit/trove/backend/stage"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// lastKept reports whether the last tree snapshot's manifest is still
// stored and names the tree it wrote: then GC keeps every blob it names
// (see statcache.Cache.last). Under m.mu.
func (m *Manager) lastKept(ctx context.Context) bool {
	return m.keptHeader(ctx) != nil
}

// keptHeader is the header of the last tree snapshot when lastKept, else
// nil.
func (m *Manager) keptHeader(ctx context.Context) *Manifest {
	last := m.loadCache(ctx).Last
	if last.ID == "" || ValidID(last.ID) != nil {
		return nil
	}
	man, err := m.loadHeader(ctx, last.ID)
	if err != nil || man.Version != ManifestVersion || man.Tree != last.Tree {
		return nil
	}
	return man
}

// reuser says which directories of a tree snapshot have the last tree
// snapshot's tree object: those the walk proved unchanged (tree.same),
// under the same rules (the snapshot's options and every .gitignore above
// them), so that neither they nor anything below is built again.
type reuser struct {
	t       *tree
	treeOf  map[string]string // the last snapshot's
	changed map[string]bool   // t.rulesChanged
	took    int               // trees reuse took
}

// newReuser returns nil when nothing can be reused: no last snapshot whose
// manifest is kept (last, keptHeader's; GC keeps the trees it names only
// then), or one taken with other options.
func (m *Manager) newReuser(man *Manifest, t *tree, last *Manifest) *reuser {
	if t.dirty == nil {
		return nil
	}
	if last == nil || last.MaxFileSize != man.MaxFileSize || !slices.Equal(last.DefaultIgnore, man.DefaultIgnore) || !slices.Equal(last.Ignore, man.Ignore) {
		return nil
	}
	m.cache.Full() // see writeManifest
	r := &reuser{t: t, treeOf: m.cache.TreeOf, changed: make(map[string]bool, len(t.rulesChanged))}
	for _, d := range t.rulesChanged {
		r.changed[d] = true
	}
	return r
}

func (r *reuser) reuse(dir string) (string, bool) {
	if !r.reused(dir) {
		return "", false
	}
	r.took++
	return r.treeOf[dir], true
}

// reused reports whether reuse takes dir's tree, without recording it.
// Of a directory the walk read, it is also whether it is at or below one
// reuse took: everything below a directory reuse takes is unchanged too,
// and a directory reuse could take is reached from the root through
// directories it could not, each built.
func (r *reuser) reused(dir string) bool {
	if r.treeOf[dir] == "" || !r.t.same(dir) {
		return false
	}
	if len(r.changed) == 0 {
		return true
	}
	for d := dir; d != "."; {
		d = path.Dir(d)
		if r.changed[d] {
			return false
		}
	}
	return true
}

// allStored reports whether every ref is in the blob store, remembering
// the answers in stored.
func (m *Manager) allStored(ctx context.Context, refs []string, stored map[string]bool) (bool, error) {
	for _, r := range refs {
		if ok, seen := stored[r]; seen {
			if !ok {
				return false, nil
			}
			continue
		}
		ok, err := m.blobs.has(ctx, r)
		if err != nil {
			return false, err
		}
		stored[r] = ok
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// knownTrees puts tree objects through a batch, except those the last tree
// snapshot stored (the stat cache holds them) and the store still has:
// putting an old blob again writes a fresh copy (cas keeps a dedup hit on
// an old blob young that way), which for every unchanged directory at every
// snapshot would cost far more than the race it closes, one that unchanged
// file content (never put again either) has too.
type knownTrees struct {
	blobBatch
	m     *Manager
	known map[string][]byte
	older map[string]bool
	// kept: the last snapshot, which stored the trees of known not older,
	// is kept (see lastKept), so those need no lookup.
	kept bool
}

func (k knownTrees) put(ctx context.Context, b []byte) (string, error) {
	if len(k.known) > 0 {
		ref, err := k.m.blobs.sumLike("", b)
		if err != nil {
			return "", err
		}
		if _, ok := k.known[ref]; ok {
			if k.kept && !k.older[ref] {
				return ref, nil
			}
			if ok, err := k.m.blobs.has(ctx, ref); err != nil || ok {
				return ref, err
			}
		}
	}
	return k.blobBatch.put(ctx, b)
}

// inlineMax is the most entries a files checkpoint lists inline.
const inlineMax = 64

// manifestWrite is how writeManifest writes a checkpoint.
type manifestWrite struct {
	keep  bool  // the stat cache keeps the trees (a tree snapshot)
	save  bool  // the stat cache is written beside the manifest
	start int64 // when the checkpoint started (ns)
	ru    *reuser
	// listings (a tree snapshot's walk) become the stat cache's records
	// (statcache.Cache.Relist) before it is encoded, while the trees are
	// built: on the cpbench tree that took half a millisecond the
	// snapshot waited for.
	listings map[string]statcache.Listing
	// kept is lastKept, when the caller knows it: a tree snapshot reads
	// the last one's manifest once, not at each of three steps.
	kept *bool
}

// writeManifest stores the tree objects of man through batch, flushes it
// (so the blobs it names are durable before it), and writes the manifest
// atomically and, with w.save, beside it the stat cache, which keeps the
// trees of a tree snapshot (w.keep).
//
// w.ru (tree snapshots, may be nil) reuses the trees of unchanged
// directories.
func (m *Manager) writeManifest(ctx context.Context, batch blobBatch, man *Manifest, w manifestWrite) error {
	keep, save, start, ru := w.keep, w.save, w.start, w.ru
	t0 := time.Now()
	cache := m.loadCache(ctx)
	// Its maps, which a snapshot reads and replaces.
	cache.Full()
	// A tree per directory, about as many as the last snapshot had: sized
	// so, the maps are not rehashed as they fill (a rehash moves every
	// entry, into fresh memory).
	dirs := len(cache.TreeOf)
	var kept map[string][]byte
	if keep {
		kept = make(map[string][]byte, dirs)
	}
	// The cache's entries and listings are final: they are encoded while
	// the trees are built (which touches only its trees and last).
	// The cache is written as soon as it can be: its directories and the
	// entries' refs (half of it) once the trees are put, while the pack
	// is written, the rest once keepSnapshot has made its trees ready (on
	// the cpbench tree the cache was written last, after the manifest,
	// in 7 of 12 creates). Should the pack's write fail, the cache names
	// a snapshot whose manifest is missing (see lastKept), so its entries
	// are checked against the store before they are trusted.
	var wg sync.WaitGroup
	defer wg.Wait()
	treesPut, treesReady := make(chan error, 1), make(chan struct{})
	if save {
		wg.Go(func() {
			// Nothing else reads the records until the head is encoded.
			if w.listings != nil {
				cache.Relist(w.listings, start)
			}
			cache.CompactAdded()
			whole := func(h statcache.Head) {
				err := m.writeCache(ctx, false, func(w io.Writer) error {
					return cache.WritePartsAfter(w, h, func() error { <-treesReady; return nil })
				})
				if err == nil {
					cache.ForgetBase()
				}
			}
			// Little changed since the cache was last written whole: a
			// sidecar of what did, written once the trees are ready.
			if side, ok := cache.PlanSide(m.cfg.racy); ok {
				if <-treesPut != nil {
					return
				}
				<-treesReady
				if cache.FinishSide(&side) {
					_ = m.writeCache(ctx, true, side.Write)
				} else {
					whole(cache.EncodeHead())
				}
				return
			}
			h := cache.EncodeHead()
			if <-treesPut != nil {
				return // the old cache stays as it was
			}
			whole(h)
		})
	} else if w.listings != nil {
		cache.Relist(w.listings, start)
	}
	var root string
	var trees []string
	var built int // tree objects built, not reused
	var err error
	treeOf := make(map[string]string, dirs)
	if man.Kind == KindFiles && len(man.Files) <= inlineMax {
		// A few named files (a rewind's undo, an agent's checkpoint before
		// an edit) are listed in the manifest itself, version 1: a tree
		// object per directory on their paths would cost more bytes, and a
		// pack and its fsyncs even when their content is stored already.
		man.Version = manifestV1
	} else {
		lastKept := w.kept
		if lastKept == nil {
			k := m.lastKept(ctx)
			lastKept = &k
		}
		sink := knownTrees{blobBatch: batch, m: m, known: cache.Trees, older: cache.Older, kept: *lastKept}
		hooks := treeHooks{built: func(dir, ref string) { treeOf[dir] = ref; built++ }}
		if ru != nil {
			hooks.reuse, hooks.reused = ru.reuse, ru.reused
		}
		root, trees, err = putTreesWith(ctx, sink, man.Files, kept, hooks)
	}
	treesPut <- err
	if err != nil {
		batch.discard()
		return fmt.Errorf("checkpoint %q: storing its trees: %w", man.ID, err)
	}
	// The pack is written (its fsyncs are most of what is left) while the
	// manifest is written and synced under a temporary name: it needs
	// only the root. The cache's trees are made ready meanwhile; the
	// manifest waited 1-3 ms for that work when it came first.
	flushed := make(chan error, 1)
	go func() { flushed <- batch.flush(ctx) }()
	man.Tree = root
	if man.Version != manifestV1 {
		man.Entries = len(man.Files) // what a listing reads instead of the trees
	}
	wg.Go(func() {
		m.keepSnapshot(man, snapshotTrees{ru: ru, treeOf: treeOf, trees: trees, kept: kept, cache: cache, keep: keep, start: start})
		close(treesReady)
	})
	// The manifest is put at its name only once the pack and its index
	// are durable (where the storage stages files; else it is written
	// whole then).
	data := man.AppendJSON(make([]byte, 0, 1024), man.Version == manifestV1)
	staged, serr := stage.Stage(ctx, m.store, m.manifestName(man.ID), data)
	if err := <-flushed; err != nil {
		if staged != nil {
			staged.Abort()
		}
		batch.discard()
		return fmt.Errorf("checkpoint %q: storing its trees: %w", man.ID, err)
	}
	if serr == nil {
		serr = staged.Commit(ctx)
	}
	if serr != nil {
		return fmt.Errorf("checkpoint %q: %w", man.ID, serr)
	}
	m.cfg.log.Debug("checkpoint: manifest written", "id", man.ID, "bytes", len(data), "built", built, "took", time.Since(t0))
	m.cfg.log.Debug("checkpoint: created", "id", man.ID, "kind", man.Kind, "files", len(man.Files), "skipped", len(man.Skipped))
	return nil
}

// staleTemp is the age past which a temporary file of rewind's is left
// over (a rewind killed while writing it), not one being written: a writer
// keeps its mtime current.
const staleTemp = time.Minute

// removeStaleTemps removes the temporary files a killed rewind left (the
// walk found them); a failure is only logged: they are never snapshotted.
func (m *Manager) removeStaleTemps(temps []treeEntry) {
	for _, t := range temps {
		if time.Since(time.Unix(0, t.st.Mtime)) < staleTemp {
			continue
		}
		if err := m.ws.remove(t.path); err != nil && !isAbsent(err) {
			m.cfg.log.Warn("checkpoint: stale temporary file not removed", "path", t.path, "err", err)
			continue
		}
		m.cfg.log.Debug("checkpoint: stale temporary file removed", "path", t.path)
	}
}

// keepTrees returns the trees of the new snapshot plus some of those the
// cache held (older snapshots', which a rewind or diff to an earlier
// checkpoint reads), up to a quarter of the new ones' bytes: first those of
// the snapshot before (after a rewind, the versions it restored), then
// older ones.
// olderBudget is the bytes of older trees the cache keeps beside a
// snapshot's trees of size bytes (keepTrees, keepReused).
func olderBudget(size int) int { return max(64<<10, size/4) }

func keepTrees(cur, old map[string][]byte, older map[string]bool) map[string][]byte {
	var size int
	for _, b := range cur {
		size += len(b)
	}
	budget := olderBudget(size)
	kept := make(map[string]bool)
	for _, pass := range []bool{false, true} {
		for ref, b := range old {
			if _, ok := cur[ref]; ok || older[ref] != pass || budget < len(b) {
				continue
			}
			budget -= len(b)
			cur[ref] = b
			kept[ref] = true
		}
	}
	clear(older)
	maps.Copy(older, kept)
	return cur
}

// snapshotTrees is what keepSnapshot needs of writeManifest.
type snapshotTrees struct {
	ru     *reuser
	treeOf map[string]string
	trees  []string
	kept   map[string][]byte
	cache  *statcache.Cache
	keep   bool
	start  int64
}

// keepSnapshot records the trees of man (every one, reused included) in
// man and, for a tree snapshot (keep), in the stat cache with the
// snapshot as its last. Under m.mu.
func (m *Manager) keepSnapshot(man *Manifest, s snapshotTrees) {
	if man.Version != manifestV1 && s.keep && s.kept != nil && s.ru != nil && s.ru.took > 0 {
		m.keepReused(man, s)
		return
	}
	if man.Version != manifestV1 {
		if s.ru != nil && s.ru.took > 0 {
			// Below a reused tree, every directory has the last snapshot's.
			for d, ref := range s.ru.treeOf {
				if s.ru.reused(d) {
					s.treeOf[d] = ref
					s.trees = append(s.trees, ref)
					if b, ok := s.cache.Trees[ref]; ok && s.kept != nil {
						s.kept[ref] = b
					}
				}
			}
		}
		if s.keep {
			s.cache.TreeOf = s.treeOf
		}
	}
	man.SetTrees(s.trees)
	if s.keep {
		m.cache.Trees = keepTrees(s.kept, m.cache.Trees, m.cache.Older)
		m.cache.Last = statcache.Last{ID: man.ID, Tree: man.Tree, Verified: s.start}
	}
}

// keepReused is keepSnapshot of a tree snapshot that reused the last
// one's trees, nearly all of them after a few edits: the cache's maps of
// directories and trees (the last snapshot's) are changed where they
// differ instead of copied into new ones, and the trees kept besides the
// snapshot's are chosen as keepTrees does. On the cpbench tree (1,641
// directories) copying them took about a millisecond, most of it hashing
// refs, and each new map was fresh memory.
func (m *Manager) keepReused(man *Manifest, s snapshotTrees) {
	treeOf := s.ru.treeOf // the cache's: the last snapshot's directories
	cur := make(map[string]struct{}, len(treeOf))
	for d, ref := range treeOf {
		if !s.ru.reused(d) {
			delete(treeOf, d)
			continue
		}
		s.trees = append(s.trees, ref)
		cur[ref] = struct{}{}
	}
	maps.Copy(treeOf, s.treeOf) // the directories built
	s.cache.TreeOf = treeOf
	man.SetTrees(s.trees)

	trees, older := m.cache.Trees, m.cache.Older
	for ref := range s.kept {
		cur[ref] = struct{}{}
	}
	// Every tree the cache held that the snapshot has not, the last
	// snapshot's first, then older ones, kept while they fit in a quarter
	// of the snapshot's trees' bytes.
	var size int
	var others [2][]string
	for ref, b := range trees {
		if _, ok := cur[ref]; ok {
			size += len(b)
			continue
		}
		i := 0
		if older[ref] {
			i = 1
		}
		others[i] = append(others[i], ref)
	}
	for ref, b := range s.kept {
		if _, ok := trees[ref]; !ok {
			size += len(b)
			trees[ref] = b
		}
	}
	budget := olderBudget(size)
	clear(older)
	for _, refs := range others {
		for _, ref := range refs {
			if b := trees[ref]; budget >= len(b) {
				budget -= len(b)
				older[ref] = true
				continue
			}
			delete(trees, ref)
		}
	}
	m.cache.Last = statcache.Last{ID: man.ID, Tree: man.Tree, Verified: s.start}
}
