package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/checkpoint/ignore"
)

// CreateOption configures one Create or CreateTree.
type CreateOption func(*createConfig)

type createConfig struct {
	// undo: the checkpoint a rewind takes of what it will overwrite; the
	// rewind rewrites those paths next, so their stat cache entries would
	// be stale at once and the cache is not saved.
	undo             bool
	session, message string
	note             string
	ignore           []string
	noDefaults       bool
	maxSize          int64
}

// WithSession links the checkpoint to a session id.
func WithSession(id string) CreateOption { return func(c *createConfig) { c.session = id } }

// WithMessage links the checkpoint to the user message it was taken for.
func WithMessage(id string) CreateOption { return func(c *createConfig) { c.message = id } }

// WithNote records what the checkpoint was taken before, such as the
// tool call about to change the workspace.
func WithNote(note string) CreateOption { return func(c *createConfig) { c.note = note } }

// WithIgnore adds .gitignore-syntax patterns, relative to the workspace
// root, that win over the defaults and every .gitignore (CreateTree only).
func WithIgnore(patterns ...string) CreateOption {
	return func(c *createConfig) { c.ignore = append(c.ignore, patterns...) }
}

// DefaultIgnores returns the patterns a tree snapshot skips unless told
// otherwise (ignore.Defaults): version control metadata, dependency caches
// and build outputs, which agents do not edit and which are large.
func DefaultIgnores() []string { return ignore.Defaults() }

// WithoutDefaultIgnores drops DefaultIgnores (CreateTree only).
func WithoutDefaultIgnores() CreateOption { return func(c *createConfig) { c.noDefaults = true } }

// WithMaxFileSize sets the per-file cap of CreateTree (default
// DefaultMaxFileSize); bigger files are listed as skipped. n <= 0: no cap.
func WithMaxFileSize(n int64) CreateOption { return func(c *createConfig) { c.maxSize = n } }

// Create snapshots the named paths (slash-separated, relative to the
// workspace root) as checkpoint id, replacing any checkpoint of that id. A
// path that does not exist is recorded as absent, so a rewind deletes what
// was created there later. A directory is an error (ErrIsDir), as is a path
// under a symlinked directory (ErrUnsafePath): name the real path instead.
func (m *Manager) Create(ctx context.Context, id string, paths []string, opts ...CreateOption) (*Manifest, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	var cc createConfig
	for _, o := range opts {
		o(&cc)
	}
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		if err := validRel(p); err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		clean = append(clean, p)
	}
	sort.Strings(clean)
	clean = slices.Compact(clean)

	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createLocked(ctx, id, clean, cc)
}

// createLocked is Create of clean, sorted paths, under m.mu.
func (m *Manager) createLocked(ctx context.Context, id string, clean []string, cc createConfig) (*Manifest, error) {
	start := m.cfg.now()
	man := m.newManifest(id, KindFiles, cc, start)
	var files []int // indexes into man.Files of regular files
	var sts []fileStat
	pc := parentCheck{ws: m.ws}
	for _, p := range clean {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		state, parent, err := pc.check(p)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		if state == parentSymlink {
			return nil, fmt.Errorf("checkpoint %q: %w: %q: parent %q is a symlink", id, ErrUnsafePath, p, parent)
		}
		e := Entry{Path: p}
		var st fileStat
		if state == parentsOK {
			st, err = m.ws.lstat(p)
			switch {
			case isAbsent(err):
			case err != nil:
				return nil, fmt.Errorf("checkpoint %q: %w", id, err)
			case st.isDir() && cc.undo:
				// A rewind's undo keeps a directory it makes, removes or
				// changes the mode of as it is: there, with its mode.
				e = Entry{Path: p, Exists: true, Type: TypeDir, Mode: Mode(st.mode.Perm())}
			case st.isDir():
				return nil, fmt.Errorf("checkpoint %q: %q: %w", id, p, ErrIsDir)
			case st.isSymlink():
				target, err := m.ws.readlink(p)
				if err != nil {
					return nil, fmt.Errorf("checkpoint %q: %w", id, err)
				}
				if !utf8.ValidString(target) {
					return nil, fmt.Errorf("checkpoint %q: %w: symlink %q has a target that is not UTF-8", id, backend.ErrNotSupported, p)
				}
				e = Entry{Path: p, Exists: true, Type: TypeSymlink, Target: target}
			case st.isRegular():
				e = fileEntry(p, st)
				files = append(files, len(man.Files))
			default:
				return nil, fmt.Errorf("checkpoint %q: %q is not a file, symlink or directory: %w", id, p, backend.ErrNotSupported)
			}
		}
		man.Files = append(man.Files, e)
		sts = append(sts, st)
	}
	batch := m.blobs.newBatch()
	if err := m.storeFiles(ctx, batch, man, files, sts, -1, start.UnixNano(), nil); err != nil {
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	m.cache.compactAdded() // an agent may take thousands of these in one process
	return man, m.writeManifest(ctx, batch, man, false, !cc.undo, start.UnixNano(), nil)
}

// CreateTree snapshots the whole workspace as checkpoint id, minus what the
// ignore rules exclude: DefaultIgnores (unless WithoutDefaultIgnores), every
// .gitignore in the tree, then WithIgnore patterns. Files over the size cap
// and names a manifest cannot hold are listed in Manifest.Skipped. Only
// files whose stat changed since the last snapshot are read.
func (m *Manager) CreateTree(ctx context.Context, id string, opts ...CreateOption) (*Manifest, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	cc := createConfig{maxSize: DefaultMaxFileSize}
	for _, o := range opts {
		o(&cc)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.warmBlobs(ctx, true)()
	start := m.cfg.now()
	man := m.newManifest(id, KindTree, cc, start)
	if !cc.noDefaults {
		man.DefaultIgnore = DefaultIgnores()
	}
	man.Ignore = cc.ignore
	if cc.maxSize > 0 {
		man.MaxFileSize = cc.maxSize
	}
	limit := man.MaxFileSize
	if limit == 0 {
		limit = -1
	}

	batch := m.blobs.newBatch()
	pf := m.newPrefetcher(ctx, batch, limit)
	tree, err := m.walkTree(ctx, baseIgnorer(man), m.workspaceGitignore, walkOptions{dirty: true, found: pf.found})
	prefetched := pf.wait()
	if err != nil {
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	ru := m.newReuser(ctx, man, &tree)
	m.cfg.log.Debug("checkpoint: walked", "id", id, "entries", len(tree.entries), "took", time.Since(start))
	m.removeStaleTemps(tree.temps)
	man.Skipped = tree.skipped
	files := make([]int, 0, len(tree.entries))
	sts := make([]fileStat, 0, len(tree.entries)) // parallel to man.Files
	man.Files = make([]Entry, 0, len(tree.entries))
	for _, te := range tree.entries {
		st := te.st
		switch {
		case st.isDir():
			man.Files = append(man.Files, Entry{Path: te.path, Exists: true, Type: TypeDir, Mode: Mode(st.mode.Perm())})
			sts = append(sts, st)
		case st.isSymlink():
			target, err := m.ws.readlink(te.path)
			if isAbsent(err) {
				continue // gone since the walk
			}
			if err != nil {
				batch.discard()
				return nil, fmt.Errorf("checkpoint %q: %w", id, err)
			}
			if !utf8.ValidString(target) {
				// JSON cannot carry it byte for byte.
				man.Skipped = append(man.Skipped, Skipped{Path: te.path, Reason: "target"})
				continue
			}
			man.Files = append(man.Files, Entry{Path: te.path, Exists: true, Type: TypeSymlink, Target: target})
			sts = append(sts, st)
		case st.isRegular():
			if limit >= 0 && st.size > limit {
				man.Skipped = append(man.Skipped, Skipped{Path: te.path, Size: st.size, Reason: "size"})
				continue
			}
			files = append(files, len(man.Files))
			man.Files = append(man.Files, fileEntry(te.path, st))
			sts = append(sts, st)
		default:
			man.Skipped = append(man.Skipped, Skipped{Path: te.path, Reason: "type"})
		}
	}
	if err := m.storeFiles(ctx, batch, man, files, sts, limit, start.UnixNano(), prefetched); err != nil {
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	m.cfg.log.Debug("checkpoint: stored", "id", id, "took", time.Since(start))
	m.cache.relist(tree.listings, start.UnixNano())
	m.cache.compactAdded()
	// Drop files that vanished or grew past the cap while we read.
	kept := man.Files[:0]
	for _, e := range man.Files {
		if e.Exists {
			kept = append(kept, e)
		}
	}
	man.Files = kept
	sortSkipped(man.Skipped)
	return man, m.writeManifest(ctx, batch, man, true, true, start.UnixNano(), ru)
}

func (m *Manager) newManifest(id, kind string, cc createConfig, start time.Time) *Manifest {
	return &Manifest{
		Version: ManifestVersion, ID: id, Kind: kind, CreatedAt: start.UTC(),
		Session: cc.session, Message: cc.message, Note: cc.note, Root: m.ws.abs(), Files: []Entry{},
	}
}

// fileEntry records no mtime: a rewind does not restore it, and with it a
// directory whose files were rewound (same bytes, new mtimes) would get a
// new tree object instead of sharing the one it had.
func fileEntry(p string, st fileStat) Entry {
	return Entry{Path: p, Exists: true, Size: st.size, Mode: Mode(st.mode.Perm())}
}

func sortSkipped(s []Skipped) {
	sort.Slice(s, func(i, j int) bool { return s[i].Path < s[j].Path })
}

// storeFiles fills in the digest of the entries at idx: from the stat cache
// when the stat proves the content unchanged, else by reading the file and
// putting it into batch (flushed by writeManifest), with a few workers
// reading and storing at once. A file gone since its lstat, or grown past limit, is marked absent
// (Create) or dropped by the caller (CreateTree). Files in pre (stored while
// the walk went on) with the same stat are not read again.
func (m *Manager) storeFiles(ctx context.Context, batch blobBatch, man *Manifest, idx []int, sts []fileStat, limit int64, start int64, pre map[string]prefetched) error {
	cache := m.loadCache(ctx)
	var jobs, done []int        // files to store, files stored by the prefetch
	stored := map[string]bool{} // refs known to be in the store, this call
	kept := m.lastKept(ctx)
	var cur cacheCursor
	for _, i := range idx {
		e := &man.Files[i]
		if slot := cur.slot(cache, e.Path); slot != nil && proves(*slot, sts[i], m.cfg.racy) {
			ce := *slot
			full := cache.refsOf(ce)
			e.Digest, e.Base, e.Delta = full.ref, full.base, full.delta
			// The stat proves the content, not that its blobs are still
			// stored: a GC after the checkpoints holding them were deleted
			// removes them. A missing one is read and stored again.
			ok := kept && ce.verified == cache.last.verified
			if !ok {
				var err error
				if ok, err = m.allStored(ctx, e.contentRefs(), stored); err != nil {
					return err
				}
			}
			if ok {
				slot.st, slot.verified = sts[i], start
				continue
			}
			e.Digest, e.Base, e.Delta = "", "", ""
		}
		if pf, ok := pre[e.Path]; ok && pf.st == sts[i] {
			*e = pf.e
			done = append(done, i)
			continue
		}
		jobs = append(jobs, i)
	}
	// The last stored version of each changed path: the base of a delta.
	prev := make(map[int]*cacheRefs, len(jobs))
	for _, i := range jobs {
		if refs := cache.prevRefs(man.Files[i].Path); refs != nil {
			prev[i] = refs
		}
	}
	m.cfg.log.Debug("checkpoint: storing", "id", man.ID, "files", len(idx), "read", len(jobs), "prefetched", len(done))
	for _, i := range done {
		cache.put(man.Files[i].Path, sts[i], &man.Files[i], start)
	}
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		next    = make(chan int)
		skipped []Skipped
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		mu.Unlock()
	}
	// A cas batch copies what it is put, so a worker reads every file into
	// one buffer (a first snapshot reads the whole tree); another store
	// may keep what it is given.
	_, reuse := batch.(*rotatingBatch)
	for range min(m.cfg.workers, len(jobs)) {
		wg.Go(func() {
			var buf []byte
			for i := range next {
				e := &man.Files[i]
				if sts[i].size > diffMax && (limit < 0 || sts[i].size <= limit) {
					// Streamed: a big file is never held whole.
					if err := m.putStream(ctx, batch, e); err != nil && !isAbsent(err) {
						fail(err)
					} else if err != nil {
						*e = Entry{Path: e.Path}
					}
					continue
				}
				data, err := m.ws.readFile(e.Path, limit, buf)
				if reuse && cap(data) <= 1<<20 {
					buf = data[:0]
				}
				switch {
				case isAbsent(err):
					*e = Entry{Path: e.Path}
					continue
				case errors.Is(err, errTooBig):
					mu.Lock()
					skipped = append(skipped, Skipped{Path: e.Path, Size: sts[i].size, Reason: "size"})
					mu.Unlock()
					*e = Entry{Path: e.Path}
					continue
				case err != nil:
					fail(err)
					continue
				}
				if err := m.putContent(ctx, batch, e, data, prev[i]); err != nil {
					fail(err)
				}
			}
		})
	}
feed:
	for _, i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		return first
	}
	man.Skipped = append(man.Skipped, skipped...)
	for _, i := range jobs {
		if e := &man.Files[i]; e.Exists {
			cache.put(e.Path, sts[i], e, start)
		}
	}
	return nil
}

// lastKept reports whether the last tree snapshot's manifest is still
// stored and names the tree it wrote: then GC keeps every blob it names
// (see statCache.last). Under m.mu.
func (m *Manager) lastKept(ctx context.Context) bool {
	return m.keptHeader(ctx) != nil
}

// keptHeader is the header of the last tree snapshot when lastKept, else
// nil.
func (m *Manager) keptHeader(ctx context.Context) *Manifest {
	last := m.loadCache(ctx).last
	if last.id == "" || ValidID(last.id) != nil {
		return nil
	}
	man, err := m.loadHeader(ctx, last.id)
	if err != nil || man.Version != ManifestVersion || man.Tree != last.tree {
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
// manifest is kept (GC keeps the trees it names only then), or one taken
// with other options.
func (m *Manager) newReuser(ctx context.Context, man *Manifest, t *tree) *reuser {
	if t.dirty == nil {
		return nil
	}
	last := m.keptHeader(ctx)
	if last == nil || last.MaxFileSize != man.MaxFileSize || !slices.Equal(last.DefaultIgnore, man.DefaultIgnore) || !slices.Equal(last.Ignore, man.Ignore) {
		return nil
	}
	r := &reuser{t: t, treeOf: m.cache.treeOf, changed: make(map[string]bool, len(t.rulesChanged))}
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

// writeManifest stores the tree objects of man through batch, flushes it
// (so the blobs it names are durable before it), and writes the manifest
// atomically and, with save, beside it the stat cache, which keeps the trees
// of a tree snapshot (keep).
//
// ru (tree snapshots, may be nil) reuses the trees of unchanged directories.
func (m *Manager) writeManifest(ctx context.Context, batch blobBatch, man *Manifest, keep, save bool, start int64, ru *reuser) error {
	t0 := time.Now()
	var kept map[string][]byte
	if keep {
		kept = map[string][]byte{}
	}
	cache := m.loadCache(ctx)
	// The cache's entries and listings are final: they are encoded while
	// the trees are built (which touches only its trees and last).
	var head chan cacheHead
	if save {
		head = make(chan cacheHead, 1)
		go func() { head <- cache.encodeHead(start) }()
	}
	var root string
	var trees []string
	var built int // tree objects built, not reused
	var err error
	treeOf := map[string]string{}
	if man.Kind == KindFiles && len(man.Files) <= inlineMax {
		// A few named files (a rewind's undo, an agent's checkpoint before
		// an edit) are listed in the manifest itself, version 1: a tree
		// object per directory on their paths would cost more bytes, and a
		// pack and its fsyncs even when their content is stored already.
		man.Version = manifestV1
	} else {
		sink := knownTrees{blobBatch: batch, m: m, known: cache.trees, older: cache.older, kept: m.lastKept(ctx)}
		hooks := treeHooks{built: func(dir, ref string) { treeOf[dir] = ref; built++ }}
		if ru != nil {
			hooks.reuse, hooks.reused = ru.reuse, ru.reused
		}
		root, trees, err = putTreesWith(ctx, sink, man.Files, kept, hooks)
	}
	if err != nil {
		if save {
			<-head
		}
		batch.discard()
		return fmt.Errorf("checkpoint %q: storing its trees: %w", man.ID, err)
	}
	// The pack is written (its fsyncs are most of what is left) while the
	// cache's trees are made ready.
	flushed := make(chan error, 1)
	go func() { flushed <- batch.flush(ctx) }()
	if man.Version != manifestV1 {
		if ru != nil && ru.took > 0 {
			// Below a reused tree, every directory has the last snapshot's.
			for d, ref := range ru.treeOf {
				if ru.reused(d) {
					treeOf[d] = ref
					trees = append(trees, ref)
					if b, ok := cache.trees[ref]; ok && kept != nil {
						kept[ref] = b
					}
				}
			}
		}
		if keep {
			cache.treeOf = treeOf
		}
	}
	man.Tree, man.trees = root, trees
	if keep {
		m.cache.trees = keepTrees(kept, m.cache.trees, m.cache.older)
		m.cache.last = lastSnapshot{id: man.ID, tree: root, verified: start}
	}
	// The cache is saved while the pack is written: should that fail, the
	// cache names a snapshot whose manifest is missing (see lastKept), so
	// its entries are checked against the store before they are trusted.
	var wg sync.WaitGroup
	if save {
		wg.Go(func() { m.writeCache(ctx, cache.encodeTail(<-head)) })
	}
	defer wg.Wait()
	if err := <-flushed; err != nil {
		batch.discard()
		return fmt.Errorf("checkpoint %q: storing its trees: %w", man.ID, err)
	}
	data := man.appendJSON(make([]byte, 0, 1024), man.Version == manifestV1)
	if err := m.store.WriteFile(ctx, m.manifestName(man.ID), data); err != nil {
		return fmt.Errorf("checkpoint %q: %w", man.ID, err)
	}
	m.cfg.log.Debug("checkpoint: manifest written", "id", man.ID, "bytes", len(data), "trees", len(trees), "built", built, "took", time.Since(t0))
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
		if time.Since(time.Unix(0, t.st.mtime)) < staleTemp {
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
func keepTrees(cur, old map[string][]byte, older map[string]bool) map[string][]byte {
	var size int
	for _, b := range cur {
		size += len(b)
	}
	budget := max(64<<10, size/4)
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

// isNotEmpty: a directory removal refused for what is still inside.
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// isAbsent: the path does not exist, or a parent is not a directory.
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// parentCheck walks the parents of workspace paths with lstat, caching what
// it found: paths under a symlink or a file are never followed.
type parentCheck struct {
	ws   Workspace
	seen map[string]parentState
}

type parentState int

const (
	parentsOK      parentState = iota // every parent is a real directory
	parentsMissing                    // a parent is missing: the path is absent
	parentFile                        // a parent is a file (or other non-directory)
	parentSymlink                     // a parent is a symlink
)

// check returns the state of p's parents and, unless parentsOK, the first
// parent that is not a directory.
func (pc *parentCheck) check(p string) (parentState, string, error) {
	if pc.seen == nil {
		pc.seen = make(map[string]parentState)
	}
	for _, dir := range backend.Parents(p) {
		s, ok := pc.seen[dir]
		if !ok {
			st, err := pc.ws.lstat(dir)
			switch {
			case isAbsent(err):
				s = parentsMissing
			case err != nil:
				return 0, "", err
			case st.isSymlink():
				s = parentSymlink
			case !st.isDir():
				s = parentFile
			default:
				s = parentsOK
			}
			pc.seen[dir] = s
		}
		if s != parentsOK {
			return s, dir, nil
		}
	}
	return parentsOK, "", nil
}

// tree is the result of a walk.
type tree struct {
	listings map[string]dirListing // every directory read, for the stat cache
	entries  []treeEntry           // dirs, files, symlinks, others; sorted by path (see walkOptions)
	ignored  []string              // ignored paths (not descended), sorted
	skipped  []Skipped             // names a manifest cannot hold
	temps    []treeEntry           // rewind's temporary files (see removeStaleTemps)
	// dirty, when the walk was asked for it, holds every directory that
	// may differ from the last tree snapshot (see statCache.byLast), and its
	// ancestors: a read directory not in it is, with all below it, as the
	// last snapshot stored it.
	dirty map[string]bool
	// rulesChanged (with dirty) lists the directories whose .gitignore may
	// not be the last snapshot's: the rules below them may differ.
	rulesChanged []string
}

// same reports whether the walk proved dir and everything below it
// identical to the last tree snapshot (walkTree with dirty set).
func (t *tree) same(dir string) bool {
	if t.dirty == nil {
		return false
	}
	_, read := t.listings[dir]
	return read && !t.dirty[dir]
}

type treeEntry struct {
	path string
	st   fileStat
}

// gitignoreFunc returns the content of dir's .gitignore, or nil; ents is
// dir's listing.
type gitignoreFunc func(ctx context.Context, dir string, ents []dirEntry) ([]byte, error)

// workspaceGitignore reads .gitignore files from the workspace.
func (m *Manager) workspaceGitignore(_ context.Context, dir string, ents []dirEntry) ([]byte, error) {
	for _, e := range ents {
		if e.name == ".gitignore" && e.st.isRegular() {
			data, err := m.ws.readFile(path.Join(dir, ".gitignore"), 1<<20, nil)
			if isAbsent(err) || errors.Is(err, errTooBig) {
				return nil, nil
			}
			return data, err
		}
	}
	return nil, nil
}

// baseIgnorer builds the root rules a manifest records.
func baseIgnorer(man *Manifest) *ignore.Matcher {
	return ignore.New(ignore.CompilePatterns("", man.DefaultIgnore), ignore.CompilePatterns("", man.Ignore))
}

// walkOptions asks a walk for more than the listing.
type walkOptions struct {
	// dirty: record which directories may differ from the last tree
	// snapshot (tree.same), so a plan or snapshot skips the rest.
	dirty bool
	// found, when set, is called with every entry kept but directories,
	// from the walk's goroutines, as soon as it is listed, and whether the
	// stat cache vouches for its content (see proves).
	found func(te treeEntry, cached bool)
	// unsorted leaves tree.entries in any order: the caller sorts what
	// it keeps.
	unsorted bool
}

func cmpTreeEntry(a, b treeEntry) int { return strings.Compare(a.path, b.path) }

// walkTree lists the workspace without following symlinks, skipping
// ignored paths (not descending into ignored directories) and rewind's
// temporary files. Directories are read by a few goroutines at once: on a
// large tree the walk is bound by the latency of its system calls.
func (m *Manager) walkTree(ctx context.Context, base *ignore.Matcher, gi gitignoreFunc, opt walkOptions) (tree, error) {
	dirty := opt.dirty
	type job struct {
		dir string
		st  fileStat // the directory's own lstat
		ig  *ignore.Matcher
	}
	rootSt, err := m.ws.lstat(".")
	if err != nil {
		return tree{}, err
	}
	cache := m.loadCache(ctx)
	useListings := m.ws.dirMtimes()
	// Proving a directory unchanged needs its listing from the cache and
	// every file in it vouched for by the last tree snapshot.
	dirty = dirty && useListings && cache.last.tree != ""
	var (
		dirtyDirs []string
		t         = tree{listings: make(map[string]dirListing, len(cache.dirs)), entries: make([]treeEntry, 0, cache.size())}
		mu        sync.Mutex
		cond      = sync.NewCond(&mu)
		queue     = []job{{".", rootSt, base}}
		byDir     = map[string][]treeEntry{} // each directory's entries, sorted by name
		pending   = 1                        // directories queued or being read
		first     error
	)
	// scratch is a walker's own, reused from one directory to the next:
	// nothing of it outlives a visit.
	type scratch struct {
		ents    []dirEntry
		entries []treeEntry
	}
	visit := func(j job, sc *scratch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var ents []dirEntry
		var err error
		rec, cached := cache.listing(j.dir, j.st, m.cfg.racy)
		if cached && useListings {
			ents, err = m.ws.statNames(j.dir, rec.names, sc.ents)
			sc.ents = ents
		} else {
			ents, err = m.ws.readDir(j.dir)
		}
		if err != nil {
			if j.dir != "." && isAbsent(err) {
				if dirty {
					mu.Lock()
					dirtyDirs = append(dirtyDirs, j.dir)
					mu.Unlock()
				}
				return nil // removed while we walked
			}
			return err
		}
		known := rec != nil && rec.listed && rec.verified == cache.last.verified
		isDirty := dirty && !(cached && known)
		// Whether the .gitignore here is the last snapshot's: the same
		// file, or none then and now (a listing the cache had tells).
		rulesSame := known && rec.find(".gitignore") < 0
		// Listings are kept sorted, so a cached one needs no sort.
		if !slices.IsSortedFunc(ents, cmpDirEntry) {
			slices.SortFunc(ents, cmpDirEntry)
		}
		var names []string
		if cached && useListings && len(rec.names) == len(ents) {
			names = rec.names
		} else {
			names = make([]string, len(ents))
			for i, e := range ents {
				names[i] = e.name
			}
		}
		ig := j.ig
		text, err := gi(ctx, j.dir, ents)
		if err != nil {
			return err
		}
		if text != nil {
			b := j.dir
			if b == "." {
				b = ""
			}
			ig = ig.With(ignore.Parse(b, text))
		}
		var (
			entries []treeEntry
			ignored []string
			sub     []job
			skipped []Skipped
		)
		if opt.unsorted {
			entries = sc.entries[:0] // copied into t.entries below
		} else {
			entries = make([]treeEntry, 0, len(ents))
		}
		var temps []treeEntry
		at := 0 // rec's names before it are before the entry's: both are sorted
		paths := relPaths(j.dir, ents)
		for i, e := range ents {
			rel := paths[i]
			// The entry the cache has for it, found by position.
			var ce cacheEntry
			if rec != nil {
				var ok bool
				if at, ok = rec.seek(at, e.name); ok {
					ce = rec.ents[at]
				}
			}
			hit := proves(ce, e.st, m.cfg.racy)
			if dirty && e.name == ".gitignore" {
				// Even when ignored: it decides the rules below.
				rulesSame = known && e.st.isRegular() && hit && cache.byLast(ce)
				isDirty = isDirty || !rulesSame
			}
			if strings.HasPrefix(e.name, tempPrefix) {
				if !e.st.isDir() {
					temps = append(temps, treeEntry{path: rel, st: e.st})
				}
				continue
			}
			isDir := e.st.isDir()
			if ig.Ignored(rel, isDir) {
				ignored = append(ignored, rel)
				continue
			}
			if err := validRel(rel); err != nil {
				isDirty = true
				skipped = append(skipped, Skipped{Path: strings.ToValidUTF8(rel, "\uFFFD"), Reason: "name"})
				ignored = append(ignored, rel)
				continue
			}
			entries = append(entries, treeEntry{path: rel, st: e.st})
			if !isDir && (dirty || opt.found != nil) {
				if opt.found != nil {
					opt.found(treeEntry{path: rel, st: e.st}, hit)
				}
				isDirty = isDirty || dirty && !(hit && cache.byLast(ce))
			}
			if isDir {
				sub = append(sub, job{rel, e.st, ig})
			}
		}
		mu.Lock()
		if opt.unsorted {
			t.entries = append(t.entries, entries...)
			sc.entries = entries
		} else {
			byDir[j.dir] = entries
		}
		t.ignored = append(t.ignored, ignored...)
		t.skipped = append(t.skipped, skipped...)
		t.temps = append(t.temps, temps...)
		t.listings[j.dir] = dirListing{st: j.st, names: names}
		if isDirty {
			dirtyDirs = append(dirtyDirs, j.dir)
		}
		if dirty && !rulesSame {
			t.rulesChanged = append(t.rulesChanged, j.dir)
		}
		queue = append(queue, sub...)
		pending += len(sub)
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	for range walkers {
		wg.Go(func() {
			var sc scratch
			mu.Lock()
			defer mu.Unlock()
			for {
				for len(queue) == 0 && pending > 0 && first == nil {
					cond.Wait()
				}
				if pending == 0 || first != nil {
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				err := visit(j, &sc)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				pending--
				cond.Broadcast()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return tree{}, first
	}
	if !opt.unsorted {
		t.entries = pathOrder(byDir, t.entries)
	}
	slices.Sort(t.ignored)
	if dirty {
		t.dirty = make(map[string]bool, 4*len(dirtyDirs))
		for _, d := range dirtyDirs {
			for d != "." && !t.dirty[d] {
				t.dirty[d] = true
				d = path.Dir(d)
			}
			t.dirty["."] = true
		}
	}
	return t, nil
}

func cmpDirEntry(a, b dirEntry) int { return strings.Compare(a.name, b.name) }

// relPaths returns the workspace paths of dir's entries, all in one
// allocation: a walk makes one per entry.
func relPaths(dir string, ents []dirEntry) []string {
	out := make([]string, len(ents))
	if dir == "." {
		for i, e := range ents {
			out[i] = e.name
		}
		return out
	}
	n := 0
	for _, e := range ents {
		n += len(dir) + 1 + len(e.name)
	}
	// Never written again once a path is taken from it, and never grown:
	// the strings share it.
	buf := make([]byte, 0, n)
	for i, e := range ents {
		at := len(buf)
		buf = append(append(append(buf, dir...), '/'), e.name...)
		out[i] = unsafe.String(&buf[at], len(buf)-at)
	}
	return out
}

// pathOrder appends the entries of every directory walked (each listing
// sorted by name) to out in path order, from the root down, without sorting
// them all again: a subdirectory's entries sort as its path plus "/", so
// after a sibling such as "name.txt" ('.' is before '/'), as in git's index.
func pathOrder(byDir map[string][]treeEntry, out []treeEntry) []treeEntry {
	var emit func(dir string)
	emit = func(dir string) {
		var pending []string // subdirectories to emit, as path+"/", sorted
		for _, e := range byDir[dir] {
			for len(pending) > 0 && pending[0] < e.path {
				emit(pending[0][:len(pending[0])-1])
				pending = pending[1:]
			}
			out = append(out, e)
			if e.st.isDir() {
				key := e.path + "/"
				i, _ := slices.BinarySearch(pending, key)
				pending = slices.Insert(pending, i, key)
			}
		}
		for _, d := range pending {
			emit(d[:len(d)-1])
		}
	}
	emit(".")
	return out
}

// walkers is how many directories a walk reads at once.
const walkers = 3

// putStream stores the file of e through a stream and records its digest
// and length.
func (m *Manager) putStream(ctx context.Context, batch blobBatch, e *Entry) error {
	rc, err := m.ws.open(e.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	ref, n, err := batch.putReader(ctx, rc)
	if err != nil {
		return err
	}
	e.Digest, e.Size = ref, n
	return nil
}
