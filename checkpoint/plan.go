package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
)

// plan compares the workspace with man and decides every operation;
// loaded waits for man's entries (see loadForPlan), which the walk of a
// tree checkpoint needs only for .gitignore files. Its steps: pair every
// path with what the workspace has there (pairFiles, pairTree), compare
// the files on both sides (compareFiles), then decide (decide).
func (m *Manager) plan(ctx context.Context, man *Manifest, loaded func() error, pre *prewriter) (*plan, error) {
	if man.Kind != KindTree {
		if err := loaded(); err != nil {
			return nil, err
		}
	}
	p := &plan{man: man, chmods: map[string]fs.FileMode{}, cache: m.loadCache(ctx), touched: map[string]bool{}, pre: pre}
	pr := &pairing{keep: make(map[string]bool), blockedBy: map[string]blocked{}}
	var err error
	switch man.Kind {
	case KindFiles:
		err = m.pairFiles(man, pr)
	case KindTree:
		err = m.pairTree(ctx, p, man, loaded, pr)
	}
	if err != nil {
		return nil, err
	}
	p.loader = &loader{m: m, cache: p.cache, like: pr.like, pre: pre}
	wants, done := p.compareFiles(ctx, pr.items)
	if err := p.decide(ctx, pr, wants, done); err != nil {
		return nil, err
	}
	sort.Slice(p.changes, func(i, j int) bool { return p.changes[i].path < p.changes[j].path })
	p.pre.settle()
	return p, nil
}

// pairing is the first step of a plan: every path paired with what the
// workspace has there and the checkpoint's entry.
type pairing struct {
	items []planItem
	keep  map[string]bool // paths rewind leaves alone: ignored, skipped
	// blockedBy records, for a files checkpoint, a non-directory parent.
	blockedBy map[string]blocked
	like      string // see likeRef
}

// planItem pairs a path with what the workspace has there (h, nil for
// nothing) and the checkpoint's entry (e, nil for none); a plan's items
// are sorted by path.
type planItem struct {
	path string
	h    *pstate
	e    *Entry
}

// blocked is a parent of a files checkpoint's path that is not a
// directory.
type blocked struct {
	state parentState
	dir   string
}

// pairFiles pairs the paths a files checkpoint names with their lstat,
// never following a parent that is not a directory.
func (m *Manager) pairFiles(man *Manifest, pr *pairing) error {
	pr.like = likeRef(man.Files)
	pc := parentCheck{ws: m.ws}
	for i := range man.Files {
		e := &man.Files[i]
		state, dir, err := pc.check(e.Path)
		if err != nil {
			return err
		}
		if state != parentsOK {
			pr.blockedBy[e.Path] = blocked{state, dir}
			pr.items = append(pr.items, planItem{e.Path, &pstate{ws: true}, e})
			continue
		}
		st, err := m.ws.lstat(e.Path)
		switch {
		case isAbsent(err):
			pr.items = append(pr.items, planItem{e.Path, &pstate{ws: true}, e})
		case err != nil:
			return err
		default:
			s := wsStateOf(st)
			pr.items = append(pr.items, planItem{e.Path, &s, e})
		}
	}
	return nil
}

// pairTree walks the workspace under a tree checkpoint's rules and pairs
// what it found with the checkpoint's entries: only those of trees that
// may differ from the workspace, when the stat cache can tell.
func (m *Manager) pairTree(ctx context.Context, p *plan, man *Manifest, loaded func() error, pr *pairing) error {
	// The walk takes the workspace's .gitignore files; it is redone
	// with the checkpoint's own when one differs (the rules a
	// snapshot used decide what counts as created since).
	trees := newTreeFetch(m.blobs, p.cache.Tree)
	p.pre.likely(man, p.cache, trees)
	seen := &seenGitignores{files: map[string][]byte{}}
	t, err := m.walkTree(ctx, baseIgnorer(man), seen.record(m.workspaceGitignore), walkOptions{dirty: true, unsorted: true, lazy: true, noListings: true})
	if err != nil {
		return err
	}
	// Only the entries of trees that may differ from the workspace,
	// when the stat cache can tell; else all of them.
	files, skip, partial, err := m.changedEntries(ctx, man, &t, trees)
	if err != nil {
		return err
	}
	full := func() error {
		if err := loaded(); err != nil {
			return err
		}
		files, skip = man.Files, func(string) bool { return false }
		return nil
	}
	if !partial {
		if err := full(); err != nil {
			return err
		}
	}
	same, err := m.sameGitignores(files, skip, t, seen.files)
	if err != nil {
		return err
	}
	if !same {
		if partial {
			if err := full(); err != nil {
				return err
			}
		}
		if t, err = m.walkTree(ctx, baseIgnorer(man), m.manifestGitignore(man), walkOptions{noListings: true}); err != nil {
			return err
		}
	}
	pr.like = likeRef(files)
	m.cfg.log.Debug("checkpoint: trees compared", "id", man.ID, "partial", partial && same, "entries", len(files))
	p.temps = t.temps
	for _, ig := range t.ignored {
		pr.keep[ig] = true
	}
	// What is proven the same on both sides goes; the rest is sorted
	// (the walk left it in any order) and merged with the entries.
	// The walk leaves each directory's entries together: skip is asked
	// once per directory, not per entry.
	var lastDir string
	var lastSkip bool
	ents := slices.DeleteFunc(t.entries, func(te treeEntry) bool {
		dir := "." // path.Dir of the walk's clean paths
		if i := strings.LastIndexByte(te.path, '/'); i >= 0 {
			dir = te.path[:i]
		}
		if dir != lastDir || lastDir == "" {
			lastDir, lastSkip = dir, skip(dir)
		}
		return lastSkip
	})
	var arena []byte
	for i := range t.clean {
		if cd := &t.clean[i]; !skip(cd.dir) {
			ents, arena = cd.appendEntries(ents, arena)
		}
	}
	if !slices.IsSortedFunc(ents, cmpTreeEntry) {
		slices.SortFunc(ents, cmpTreeEntry)
	}
	pr.mergeTree(man, ents, files)
	return nil
}

// mergeTree pairs the walk's entries (sorted) with the checkpoint's
// (files, sorted), keeping what a snapshot would skip.
func (pr *pairing) mergeTree(man *Manifest, ents []treeEntry, files []Entry) {
	skipped := make(map[string]bool, len(man.Skipped))
	for _, s := range man.Skipped {
		skipped[s.Path] = true
	}
	hs := make([]pstate, len(ents))
	pr.items = make([]planItem, 0, len(files)+16)
	for i, te := range ents {
		for len(files) > 0 && files[0].Path < te.path {
			pr.items = append(pr.items, planItem{files[0].Path, nil, &files[0]})
			files = files[1:]
		}
		var e *Entry
		if len(files) > 0 && files[0].Path == te.path {
			e = &files[0]
			files = files[1:]
		}
		hs[i] = wsStateOf(te.st)
		s := &hs[i]
		switch {
		case e == nil && skipped[te.path]:
			pr.keep[te.path] = true // never restored, never deleted
			continue
		case e == nil && s.kind == "other":
			pr.keep[te.path] = true // a snapshot would skip it too
			continue
		case e == nil && s.kind == TypeFile && man.MaxFileSize > 0 && te.st.Size > man.MaxFileSize:
			pr.keep[te.path] = true
			continue
		}
		pr.items = append(pr.items, planItem{te.path, s, e})
	}
	for i := range files {
		pr.items = append(pr.items, planItem{files[i].Path, nil, &files[i]})
	}
}

// compared is a change found ahead by compareFiles.
type compared struct {
	c   *change
	err error
}

// compareFiles returns what each item must become, and compares the
// items with a file on both sides two at a time first: reading and
// diffing those that changed is most of a plan's work after the walk.
func (p *plan) compareFiles(ctx context.Context, items []planItem) ([]pstate, map[int]compared) {
	wants := make([]pstate, len(items))
	var files []int // items with a file on both sides
	for i := range items {
		if items[i].h == nil {
			items[i].h = &pstate{ws: true} // nothing there
		}
		wants[i] = stateOf(items[i].e)
		if items[i].h.kind == TypeFile && wants[i].kind == TypeFile {
			files = append(files, i)
		}
	}
	done := make(map[int]compared, len(files))
	var doneMu sync.Mutex
	_ = parallel(ctx, files, 2, func(i int) error {
		c, err := p.loader.compare(ctx, items[i].path, items[i].h, &wants[i])
		doneMu.Lock()
		done[i] = compared{c, err}
		doneMu.Unlock()
		return nil
	})
	return wants, done
}

// setConflict records the first reason the rewind cannot run.
func (p *plan) setConflict(err error) {
	if p.conflict == nil {
		p.conflict = err
	}
}

// decide records each item's change and the operations from what is
// there to what must be (wants), with the conflicts that stop a rewind.
func (p *plan) decide(ctx context.Context, pr *pairing, wants []pstate, done map[int]compared) error {
	man, keep := p.man, pr.keep
	// keptBelow: directories holding something rewind leaves alone.
	keptBelow := make(map[string]bool)
	for k := range keep {
		for _, d := range parentsOf(k) {
			keptBelow[d] = true
		}
	}
	replaced := map[string]bool{}
	for i, it := range pr.items {
		path, e, h := it.path, it.e, it.h
		want := &wants[i]
		if b, ok := pr.blockedBy[path]; ok && want.exists() {
			switch b.state {
			case parentSymlink:
				// The symlink is never followed: it goes, a directory comes.
				if !replaced[b.dir] {
					replaced[b.dir] = true
					p.unlinks = append(p.unlinks, b.dir)
					p.changes = append(p.changes, &change{path: b.dir, a: &pstate{kind: TypeSymlink}, b: &pstate{kind: TypeDir}})
				}
			case parentFile:
				p.setConflict(fmt.Errorf("%w: %q must be a directory to restore %q, and is a file the checkpoint does not cover", ErrConflict, b.dir, path))
			}
		}
		if len(keep) > 0 && want.exists() {
			for i := range len(path) {
				if path[i] == '/' && keep[path[:i]] {
					p.setConflict(fmt.Errorf("%w: %q is ignored but must be a directory to restore %q", ErrConflict, path[:i], path))
				}
			}
		}
		r, ok := done[i]
		if !ok {
			r.c, r.err = p.loader.compare(ctx, path, h, want)
		}
		c, err := r.c, r.err
		if err != nil {
			return err
		}
		if c != nil {
			p.changes = append(p.changes, c)
		}
		// Operations, from what is there to what must be.
		switch {
		case h.kind != want.kind:
			if h.exists() {
				if h.kind == TypeDir && (keptBelow[path] || man.Kind == KindFiles) {
					if want.exists() {
						p.setConflict(fmt.Errorf("%w: %q is a directory with content rewind must not remove", ErrConflict, path))
					} else if man.Kind == KindFiles {
						// Named absent (a directory a rewind made, in its
						// undo): it goes if nothing else is left in it.
						p.rmdirs = append(p.rmdirs, path)
					}
					continue // an extra directory that holds kept files stays
				}
				p.deletes = append(p.deletes, path)
			}
			switch want.kind {
			case TypeDir:
				p.mkdirs = append(p.mkdirs, e)
			case TypeFile, TypeSymlink:
				p.writes = append(p.writes, c)
				if p.conflict == nil && !h.exists() {
					p.pre.start(c)
				}
			}
		case want.kind == TypeFile && h.digest != want.digest, want.kind == TypeSymlink && h.target != want.target:
			p.writes = append(p.writes, c)
			if p.conflict == nil {
				p.pre.start(c)
			}
		case want.exists() && h.mode != want.mode && want.kind != TypeSymlink:
			p.chmods[path] = want.mode
		}
	}
	return nil
}
