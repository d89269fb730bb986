package checkpoint

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/trovekit/trove/checkpoint/ignore"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// tree is the result of a walk.
type tree struct {
	listings map[string]statcache.Listing // every directory read, for the stat cache
	entries  []treeEntry                  // dirs, files, symlinks, others; sorted by path (see walkOptions)
	ignored  []string                     // ignored paths (not descended), sorted
	skipped  []Skipped                    // names a manifest cannot hold
	temps    []treeEntry                  // rewind's temporary files (see removeStaleTemps)
	// dirty, when the walk was asked for it, holds every directory that
	// may differ from the last tree snapshot (see statcache.Cache.byLast), and its
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
	dirty = dirty && useListings && cache.Last.Tree != ""
	var (
		dirtyDirs []string
		t         = tree{listings: make(map[string]statcache.Listing, len(cache.Dirs)), entries: make([]treeEntry, 0, cache.Size())}
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
		rec, cached := cache.Listing(j.dir, j.st, m.cfg.racy)
		if cached && useListings {
			ents, err = m.ws.statNames(j.dir, rec.Names, sc.ents)
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
		known := rec != nil && rec.Listed && rec.Verified == cache.Last.Verified
		isDirty := dirty && !(cached && known)
		// Whether the .gitignore here is the last snapshot's: the same
		// file, or none then and now (a listing the cache had tells).
		rulesSame := known && rec.Find(".gitignore") < 0
		// Listings are kept sorted, so a cached one needs no sort.
		if !slices.IsSortedFunc(ents, cmpDirEntry) {
			slices.SortFunc(ents, cmpDirEntry)
		}
		var names []string
		if cached && useListings && len(rec.Names) == len(ents) {
			names = rec.Names
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
			var ce statcache.Entry
			if rec != nil {
				var ok bool
				if at, ok = rec.Seek(at, e.name); ok {
					ce = rec.Ents[at]
				}
			}
			hit := statcache.Proves(ce, e.st, m.cfg.racy)
			if dirty && e.name == ".gitignore" {
				// Even when ignored: it decides the rules below.
				rulesSame = known && e.st.IsRegular() && hit && cache.ByLast(ce)
				isDirty = isDirty || !rulesSame
			}
			if strings.HasPrefix(e.name, tempPrefix) {
				if !e.st.IsDir() {
					temps = append(temps, treeEntry{path: rel, st: e.st})
				}
				continue
			}
			isDir := e.st.IsDir()
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
				isDirty = isDirty || dirty && !(hit && cache.ByLast(ce))
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
		t.listings[j.dir] = statcache.Listing{St: j.st, Names: names}
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
			if e.st.IsDir() {
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
