package checkpoint

import (
	"context"
	"errors"
	"iter"
	"path"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/trovekit/trove/checkpoint/ignore"
	"github.com/trovekit/trove/checkpoint/manifest"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// tree is the result of a walk.
type tree struct {
	listings map[string]statcache.Listing // every directory read, for the stat cache
	entries  []treeEntry                  // dirs, files, symlinks, others; sorted by path (see walkOptions)
	ignored  []string                     // ignored paths (not descended), sorted
	skipped  []Skipped                    // names a manifest cannot hold
	temps    []treeEntry                  // rewind's temporary files (see removeStaleTemps)
	// read holds every directory read instead of listings, when the
	// caller keeps none (walkOptions.noListings).
	read map[string]struct{}
	// dirty, when the walk was asked for it, holds every directory that
	// may differ from the last tree snapshot (see statcache.Cache.byLast), and its
	// ancestors: a read directory not in it is, with all below it, as the
	// last snapshot stored it.
	dirty map[string]bool
	// rulesChanged (with dirty) lists the directories whose .gitignore may
	// not be the last snapshot's: the rules below them may differ.
	rulesChanged []string
	// byDir holds the entries instead of entries, each directory's
	// sorted by name (walkOptions.byDir); n counts them.
	byDir map[string][]treeEntry
	n     int
	// clean holds the directories whose entries are not in entries
	// (walkOptions.lazy): see cleanDir.
	clean []cleanDir
}

// cleanDir is a directory a lazy walk proved as the last tree snapshot
// stored it, with no subdirectory to visit: its entries are those of its
// stat cache record (each file's stat equal to the cache's), at kept, or
// all of them when kept is nil. A plan skips nearly all such directories
// (their trees are the checkpoint's too); building and copying their
// entries only to drop them cost a dry run more than they were worth.
type cleanDir struct {
	dir  string
	rec  *statcache.Dir
	kept []int32
}

// appendEntries appends cd's entries to out, in name order, their paths'
// bytes appended to arena (see relPaths), and returns both.
func (cd *cleanDir) appendEntries(out []treeEntry, arena []byte) ([]treeEntry, []byte) {
	names, ents := cd.rec.Names, cd.rec.Ents
	each := func(yield func(int)) {
		if cd.kept == nil {
			for i := range names {
				yield(i)
			}
			return
		}
		for _, i := range cd.kept {
			yield(int(i))
		}
	}
	n := 0
	each(func(i int) { n += len(cd.dir) + 1 + len(names[i]) })
	if cap(arena)-len(arena) < n {
		arena = make([]byte, 0, max(n, pathArena))
	}
	each(func(i int) {
		at := len(arena)
		if cd.dir != "." {
			arena = append(append(arena, cd.dir...), '/')
		}
		arena = append(arena, names[i]...)
		out = append(out, treeEntry{path: unsafe.String(unsafe.SliceData(arena[at:]), len(arena)-at), st: ents[i].St})
	})
	return out, arena
}

// size is how many entries the walk kept.
func (t *tree) size() int {
	if t.byDir != nil {
		return t.n
	}
	return len(t.entries)
}

// ordered yields the walk's entries in path order (entries sorted, or
// byDir).
func (t *tree) ordered() iter.Seq[treeEntry] {
	if t.byDir == nil {
		return slices.Values(t.entries)
	}
	return func(yield func(treeEntry) bool) { eachInPathOrder(t.byDir, ".", yield) }
}

// same reports whether the walk proved dir and everything below it
// identical to the last tree snapshot (walkTree with dirty set).
func (t *tree) same(dir string) bool {
	if t.dirty == nil {
		return false
	}
	return t.wasRead(dir) && !t.dirty[dir]
}

// wasRead reports whether the walk read dir.
func (t *tree) wasRead(dir string) bool {
	if t.read != nil {
		_, ok := t.read[dir]
		return ok
	}
	_, ok := t.listings[dir]
	return ok
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
		if e.name == ".gitignore" && e.st.IsRegular() {
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
	// byDir leaves the entries by directory, for tree.ordered: a caller
	// that goes through them once in path order (a snapshot) needs them
	// in no array of their own, 0.4 MB of fresh memory for the cpbench
	// tree, filled after the walk where the snapshot waits.
	byDir bool
	// lazy (with dirty and unsorted, without found) leaves the entries of
	// directories proven unchanged with no subdirectory in tree.clean,
	// not in tree.entries.
	lazy bool
	// noListings keeps only which directories were read (tree.read), not
	// their listings: a plan needs no more, and the listings' map was
	// 180 KB of fresh memory on the cpbench tree, its values copied in.
	noListings bool
}

func cmpTreeEntry(a, b treeEntry) int { return strings.Compare(a.path, b.path) }

// walkTree lists the workspace without following symlinks, skipping
// ignored paths (not descending into ignored directories) and rewind's
// temporary files. Directories are read by a few goroutines at once: on a
// large tree the walk is bound by the latency of its system calls.
func (m *Manager) walkTree(ctx context.Context, base *ignore.Matcher, gi gitignoreFunc, opt walkOptions) (tree, error) {
	rootSt, err := m.ws.lstat(".")
	if err != nil {
		return tree{}, err
	}
	cache := m.loadCache(ctx)
	w := &walker{m: m, ctx: ctx, gi: gi, opt: opt, cache: cache, useListings: m.ws.dirMtimes()}
	// Proving a directory unchanged needs its listing from the cache and
	// every file in it vouched for by the last tree snapshot.
	w.dirty = opt.dirty && w.useListings && cache.Last.Tree != ""
	w.visited = make([]string, 0, cache.NumDirs())
	if !opt.noListings {
		w.listings = make([]statcache.Listing, 0, cache.NumDirs())
	}
	if !opt.unsorted {
		w.dirEntries = make([][]treeEntry, 0, cache.NumDirs())
	}
	if !opt.byDir || opt.unsorted {
		w.t.entries = make([]treeEntry, 0, cache.Size())
	}
	if opt.lazy {
		w.t.clean = make([]cleanDir, 0, cache.NumDirs())
	}
	w.cond = sync.NewCond(&w.mu)
	w.queue = []walkJob{{".", rootSt, base}}
	w.pending = 1
	var wg sync.WaitGroup
	for range walkers {
		wg.Go(w.work)
	}
	wg.Wait()
	if w.first != nil {
		return tree{}, w.first
	}
	return w.result(), nil
}

// walker is the state of one walkTree: a queue of directories a few
// goroutines (work) take from, each read (visit) and its entries sorted
// out (classify), then recorded under mu (record).
type walker struct {
	m           *Manager
	ctx         context.Context
	gi          gitignoreFunc
	opt         walkOptions
	cache       *statcache.Cache
	useListings bool
	dirty       bool // opt.dirty, when the cache can prove anything

	mu        sync.Mutex
	cond      *sync.Cond
	queue     []walkJob
	pending   int // directories queued or being read
	dirtyDirs []string
	// visited holds the directories read, for the tree's maps (listings
	// or read, byDir) filled after the walk: maps filled in record, under
	// mu, cost a dry run 1.8% of its CPU (their lines passed between the
	// walkers' CPUs, the other walkers waiting). listings (unless
	// noListings) and dirEntries (unless unsorted, each directory's
	// entries sorted by name) are theirs, in the same order: apart, a
	// plan's walk fills no more fresh memory than the paths take.
	visited    []string
	listings   []statcache.Listing
	dirEntries [][]treeEntry
	first      error
	t          tree
}

// walkJob is a directory to read.
type walkJob struct {
	dir string
	st  fileStat // the directory's own lstat
	ig  *ignore.Matcher
}

// walkScratch is a walker goroutine's own, reused from one directory to
// the next: nothing of it outlives a visit.
type walkScratch struct {
	ents    []dirEntry
	entries []treeEntry
	paths   []string // the entries' paths (the strings outlive the visit)
	sub     []walkJob
	ignored []string
	// arena holds the bytes of the paths (see relPaths): never written
	// again once a path is taken from it.
	arena []byte
	near  statcache.Near // where this goroutine found a record last
}

// work takes directories off the queue and visits them until none is
// left or one failed.
func (w *walker) work() {
	var sc walkScratch
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.queue) == 0 && w.pending > 0 && w.first == nil {
			w.cond.Wait()
		}
		if w.pending == 0 || w.first != nil {
			w.cond.Broadcast()
			return
		}
		j := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		w.mu.Unlock()
		err := w.visit(j, &sc)
		w.mu.Lock()
		if err != nil && w.first == nil {
			w.first = err
		}
		w.pending--
		w.cond.Broadcast()
	}
}

// dirVisit is what visiting one directory found.
type dirVisit struct {
	entries, temps []treeEntry
	ignored        []string
	skipped        []Skipped
	sub            []walkJob
	names          []string // the listing, for the stat cache
	isDirty        bool     // may differ from the last tree snapshot
	rulesSame      bool     // its .gitignore is the last snapshot's
	clean          cleanDir // its entries, when left in the cache (rec set; walkOptions.lazy)
}

// visit reads one directory, from the stat cache's listing when its stat
// proves that current, and records what it holds.
func (w *walker) visit(j walkJob, sc *walkScratch) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	var ents []dirEntry
	var err error
	rec, cached := w.cache.ListingNear(&sc.near, j.dir, j.st, w.m.cfg.racy)
	if cached && w.useListings {
		ents, err = w.m.ws.statNames(j.dir, rec.Names, sc.ents)
		sc.ents = ents
	} else {
		ents, err = w.m.ws.readDir(j.dir)
	}
	if err != nil {
		if j.dir != "." && isAbsent(err) {
			if w.dirty {
				w.mu.Lock()
				w.dirtyDirs = append(w.dirtyDirs, j.dir)
				w.mu.Unlock()
			}
			return nil // removed while we walked
		}
		return err
	}
	known := rec != nil && rec.Listed && w.cache.ByLastAt(rec.Verified)
	var v dirVisit
	v.isDirty = w.dirty && !(cached && known)
	// Whether the .gitignore here is the last snapshot's: the same
	// file, or none then and now (a listing the cache had tells).
	v.rulesSame = known && rec.Find(".gitignore") < 0
	// Listings are kept sorted, so a cached one needs no sort.
	if !slices.IsSortedFunc(ents, cmpDirEntry) {
		slices.SortFunc(ents, cmpDirEntry)
	}
	if cached && w.useListings && len(rec.Names) == len(ents) {
		v.names = rec.Names
	} else {
		v.names = make([]string, len(ents))
		for i, e := range ents {
			v.names[i] = e.name
		}
	}
	ig := j.ig
	text, err := w.gi(w.ctx, j.dir, ents)
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
	if w.opt.unsorted {
		v.entries = sc.entries[:0] // copied into t.entries by record
	} else {
		v.entries = make([]treeEntry, 0, len(ents))
	}
	arena, mark := unsafe.SliceData(sc.arena), len(sc.arena)
	sc.paths, sc.arena = relPaths(sc.paths[:0], sc.arena, j.dir, ents)
	// Copied into the walk's queue and tree by record.
	v.sub, v.ignored = sc.sub[:0], sc.ignored[:0]
	w.classify(&v, j.dir, ents, sc.paths, rec, known, ig)
	if w.opt.lazy && w.dirty && !v.isDirty && len(v.sub) == 0 && cached && w.useListings && len(rec.Names) == len(ents) {
		v.clean = cleanDir{dir: j.dir, rec: rec, kept: keptIndexes(v.entries, sc.paths)}
		if len(v.ignored) == 0 && len(v.temps) == 0 && len(v.skipped) == 0 {
			// No path of this directory outlives the visit (a plan puts
			// those it needs back from the record): their bytes are free.
			if unsafe.SliceData(sc.arena) != arena {
				mark = 0
			}
			sc.arena = sc.arena[:mark]
		}
	}
	w.record(j, &v, sc)
	return nil
}

// keptIndexes returns the indexes in paths (a directory's listing) of
// the entries kept, both in the listing's order; nil when all are.
func keptIndexes(kept []treeEntry, paths []string) []int32 {
	if len(kept) == len(paths) {
		return nil
	}
	out := make([]int32, 0, len(kept))
	k := 0
	for i, p := range paths {
		if k < len(kept) && kept[k].path == p {
			out = append(out, int32(i))
			k++
		}
	}
	return out
}

// classify sorts dir's entries into v: kept (and directories to visit),
// ignored, skipped, rewind's temporaries; and, for a dirty walk, whether
// the stat cache proves the directory and its rules unchanged.
func (w *walker) classify(v *dirVisit, dir string, ents []dirEntry, paths []string, rec *statcache.Dir, known bool, ig *ignore.Matcher) {
	dirty, found := w.dirty, w.opt.found
	at := 0 // rec's names before it are before the entry's: both are sorted
	for i, e := range ents {
		rel := paths[i]
		// The entry the cache has for it, found by position.
		var ce statcache.Entry
		if rec != nil {
			var ok bool
			if at, ok = rec.Seek(at, e.name); ok {
				ce = rec.Ents[at]
			}
		}
		hit := statcache.Proves(ce, e.st, w.m.cfg.racy)
		if dirty && e.name == ".gitignore" {
			// Even when ignored: it decides the rules below.
			v.rulesSame = known && e.st.IsRegular() && hit && w.cache.ByLast(ce)
			v.isDirty = v.isDirty || !v.rulesSame
		}
		if strings.HasPrefix(e.name, tempPrefix) {
			if !e.st.IsDir() {
				v.temps = append(v.temps, treeEntry{path: rel, st: e.st})
			}
			continue
		}
		isDir := e.st.IsDir()
		if ig.Ignored(rel, isDir) {
			v.ignored = append(v.ignored, rel)
			continue
		}
		// dir is valid (its parent's walk checked it): its names are left.
		if err := validIn(dir, rel, e.name); err != nil {
			v.isDirty = true
			v.skipped = append(v.skipped, Skipped{Path: strings.ToValidUTF8(rel, "\uFFFD"), Reason: "name"})
			v.ignored = append(v.ignored, rel)
			continue
		}
		v.entries = append(v.entries, treeEntry{path: rel, st: e.st})
		if !isDir && (dirty || found != nil) {
			if found != nil {
				found(treeEntry{path: rel, st: e.st}, hit)
			}
			v.isDirty = v.isDirty || dirty && !(hit && w.cache.ByLast(ce))
		}
		if isDir {
			v.sub = append(v.sub, walkJob{rel, e.st, ig})
		}
	}
}

// record adds what a visit of j found to the walk's tree and queues its
// subdirectories.
func (w *walker) record(j walkJob, v *dirVisit, sc *walkScratch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &w.t
	if w.opt.unsorted {
		if v.clean.rec != nil {
			t.clean = append(t.clean, v.clean)
		} else {
			t.entries = append(t.entries, v.entries...)
		}
		sc.entries = v.entries
	}
	w.visited = append(w.visited, j.dir)
	if !w.opt.unsorted {
		w.dirEntries = append(w.dirEntries, v.entries)
	}
	if !w.opt.noListings {
		w.listings = append(w.listings, statcache.Listing{St: j.st, Names: v.names})
	}
	t.ignored = append(t.ignored, v.ignored...)
	t.skipped = append(t.skipped, v.skipped...)
	t.temps = append(t.temps, v.temps...)
	if v.isDirty {
		w.dirtyDirs = append(w.dirtyDirs, j.dir)
	}
	if w.dirty && !v.rulesSame {
		t.rulesChanged = append(t.rulesChanged, j.dir)
	}
	w.queue = append(w.queue, v.sub...)
	w.pending += len(v.sub)
	sc.sub, sc.ignored = v.sub, v.ignored
}

// result is the walk's tree, once every directory is recorded: entries
// in path order (unless unsorted), and the dirty directories with their
// ancestors.
func (w *walker) result() tree {
	t := w.t
	if w.opt.noListings {
		t.read = make(map[string]struct{}, len(w.visited))
	} else {
		t.listings = make(map[string]statcache.Listing, len(w.visited))
	}
	var byDir map[string][]treeEntry
	if !w.opt.unsorted {
		byDir = make(map[string][]treeEntry, len(w.visited))
	}
	n := 0
	for i, dir := range w.visited {
		if t.read != nil {
			t.read[dir] = struct{}{}
		} else {
			t.listings[dir] = w.listings[i]
		}
		if byDir != nil {
			byDir[dir] = w.dirEntries[i]
			n += len(w.dirEntries[i])
		}
	}
	switch {
	case w.opt.unsorted:
	case w.opt.byDir:
		t.byDir, t.n = byDir, n
	default:
		t.entries = pathOrder(byDir, t.entries)
	}
	slices.Sort(t.ignored)
	if w.dirty {
		t.dirty = make(map[string]bool, 4*len(w.dirtyDirs))
		for _, d := range w.dirtyDirs {
			for d != "." && !t.dirty[d] {
				t.dirty[d] = true
				d = path.Dir(d)
			}
			t.dirty["."] = true
		}
	}
	return t
}

func cmpDirEntry(a, b dirEntry) int { return strings.Compare(a.name, b.name) }

// validIn is manifest.ValidPath(rel) for rel, name's path in dir, a
// directory whose own path is valid.
func validIn(dir, rel, name string) error {
	if dir == "." {
		return manifest.ValidPath(rel)
	}
	return manifest.ValidName(name)
}

// relPaths appends the workspace paths of dir's entries to out, their bytes
// appended to arena, and returns both: a walk makes a path per entry, and
// an allocation per directory was half of a walk's. The arena is never
// grown in place: a full one is left to the paths it holds.
func relPaths(out []string, arena []byte, dir string, ents []dirEntry) ([]string, []byte) {
	if dir == "." {
		for _, e := range ents {
			out = append(out, e.name)
		}
		return out, arena
	}
	n := 0
	for _, e := range ents {
		n += len(dir) + 1 + len(e.name)
	}
	if cap(arena)-len(arena) < n {
		arena = make([]byte, 0, max(n, pathArena))
	}
	for _, e := range ents {
		at := len(arena)
		arena = append(append(append(arena, dir...), '/'), e.name...)
		out = append(out, unsafe.String(&arena[at], len(arena)-at))
	}
	return out, arena
}

// pathArena is the size of a walker's path arenas.
const pathArena = 32 << 10

// pathOrder appends the entries of every directory walked (each listing
// sorted by name) to out in path order, from the root down, without sorting
// them all again (see eachInPathOrder).
func pathOrder(byDir map[string][]treeEntry, out []treeEntry) []treeEntry {
	eachInPathOrder(byDir, ".", func(e treeEntry) bool {
		out = append(out, e)
		return true
	})
	return out
}

// eachInPathOrder yields the entries of dir and below in path order: a
// subdirectory's entries sort as its path plus "/", so after a sibling
// such as "name.txt" ('.' is before '/'), as in git's index. It reports
// whether yield asked for all.
func eachInPathOrder(byDir map[string][]treeEntry, dir string, yield func(treeEntry) bool) bool {
	var pending []string // subdirectories to emit, as path+"/", sorted
	for _, e := range byDir[dir] {
		for len(pending) > 0 && pending[0] < e.path {
			if !eachInPathOrder(byDir, pending[0][:len(pending[0])-1], yield) {
				return false
			}
			pending = pending[1:]
		}
		if !yield(e) {
			return false
		}
		if e.st.IsDir() {
			key := e.path + "/"
			i, _ := slices.BinarySearch(pending, key)
			pending = slices.Insert(pending, i, key)
		}
	}
	for _, d := range pending {
		if !eachInPathOrder(byDir, d[:len(d)-1], yield) {
			return false
		}
	}
	return true
}

// walkers is how many directories a walk reads at once.
const walkers = 3
