package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/trovekit/trove/checkpoint/manifest"
	"github.com/trovekit/trove/checkpoint/treeobj"
)

// A plan compares a tree checkpoint with the workspace. Most of a large
// workspace is usually as the last tree snapshot stored it (the walk proves
// that from the stat cache, tree.same), and most of a checkpoint's trees are
// that snapshot's (same ref): where both hold, nothing below can differ, so
// the plan neither reads those trees nor compares their paths. Git's
// cache-tree does the same for its index.

// changedEntries returns the entries of man's trees except those below
// directories where man has the last tree snapshot's tree and the walk t
// proved the workspace the same (skip reports those directories and
// below). ok is false when the stat cache cannot tell (no last snapshot,
// or its trees are gone): the caller loads every entry.
func (m *Manager) changedEntries(ctx context.Context, man *Manifest, t *tree, trees *treeFetch) (files []Entry, skip func(dir string) bool, ok bool, err error) {
	cache := m.loadCache(ctx)
	if last := cache.Last.Tree; last == "" || cache.TreeRef(".") != last || t.dirty == nil || man.Version != ManifestVersion {
		return nil, nil, false, nil
	}
	skipped := map[string]bool{}
	var visit func(dir, ref string, depth int) error
	visit = func(dir, ref string, depth int) error {
		if ref == cache.TreeRef(dir) && t.same(dir) {
			skipped[dir] = true
			return nil
		}
		if depth > treeMaxDepth {
			return fmt.Errorf("%w: trees nested deeper than %d", ErrCorrupt, treeMaxDepth)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := trees.get(ctx, ref)
		if err != nil {
			return fmt.Errorf("%w: tree %s of %q: %w", ErrCorrupt, ref, dir, err)
		}
		kids, err := trees.decode(ref, data)
		if err != nil {
			return fmt.Errorf("tree %s of %q: %w", ref, dir, err)
		}
		prefix := dir + "/"
		if dir == "." {
			prefix = ""
		}
		for i, k := range kids {
			// The checks loadTrees makes.
			if !validName(k.Name, depth == 0) {
				return fmt.Errorf("%w: tree %s of %q: bad name %q", ErrUnsafePath, ref, dir, manifest.Clip(k.Name))
			}
			if i > 0 && kids[i-1].Name >= k.Name {
				return fmt.Errorf("%w: tree %s of %q: names not sorted or repeated at %q", ErrCorrupt, ref, dir, manifest.Clip(k.Name))
			}
			p := prefix + k.Name
			if k.Entry != nil {
				e := *k.Entry
				e.Path = p
				files = append(files, e)
				if len(files) > treeMaxEntries {
					return fmt.Errorf("%w: more than %d entries", ErrCorrupt, treeMaxEntries)
				}
			}
			if k.Sub == "" {
				continue
			}
			if e := k.Entry; e != nil && e.Exists && e.EffectiveType() != TypeDir {
				return fmt.Errorf("%w: %q holds entries and is not a directory", ErrUnsafePath, p)
			}
			if err := visit(p, k.Sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(".", man.Tree, 0); err != nil {
		return nil, nil, false, err
	}
	if !slices.IsSortedFunc(files, cmpPath) {
		slices.SortFunc(files, cmpPath)
	}
	pm := Manifest{Version: man.Version, ID: man.ID, Kind: man.Kind, Files: files}
	pm.SetDecodedFromTrees()
	if err := pm.Validate(man.ID); err != nil {
		return nil, nil, false, fmt.Errorf("checkpoint %q: %w", man.ID, err)
	}
	// Asked for about every directory the walk read: each is looked up
	// with its parents, top down, among the few skipped (most are below a
	// skipped one near the top), with no memory kept for each.
	skip = func(dir string) bool {
		if skipped["."] || dir == "." {
			return skipped["."]
		}
		for i := range len(dir) + 1 {
			if (i == len(dir) || dir[i] == '/') && skipped[dir[:i]] {
				return true
			}
		}
		return false
	}
	return files, skip, true, nil
}

// treeFetch reads the tree objects of a checkpoint that the stat cache does
// not hold, each from cas once per plan: likely reads those that differ
// from the last snapshot's while the walk goes on, and changedEntries the
// same ones after it (waiting for a read likely has under way). Safe for
// concurrent use.
type treeFetch struct {
	blobs blobStore
	known treeSource // the stat cache's trees
	mu    sync.Mutex
	got   map[string]*fetched
	kids  map[string]decodedTree // see decode
}

// decodedTree is what treeobj.Decode made of a tree.
type decodedTree struct {
	kids []treeobj.Child
	err  error
}

// fetched is one read: done is closed once data or err is set.
type fetched struct {
	done chan struct{}
	data []byte
	err  error
}

func newTreeFetch(blobs blobStore, known treeSource) *treeFetch {
	return &treeFetch{blobs: blobs, known: known, got: map[string]*fetched{}, kids: map[string]decodedTree{}}
}

// decode is treeobj.Decode of data, tree ref's bytes (see get), once per
// plan: likely and changedEntries go through the same trees. The children
// are shared: neither changes them.
func (f *treeFetch) decode(ref string, data []byte) ([]treeobj.Child, error) {
	f.mu.Lock()
	d, ok := f.kids[ref]
	f.mu.Unlock()
	if !ok {
		d.kids, d.err = treeobj.Decode(data)
		f.mu.Lock()
		f.kids[ref] = d
		f.mu.Unlock()
	}
	return d.kids, d.err
}

func (f *treeFetch) get(ctx context.Context, ref string) ([]byte, error) {
	if data, ok := f.known.get(ref); ok {
		return data, nil
	}
	f.mu.Lock()
	r, ok := f.got[ref]
	if !ok {
		r = &fetched{done: make(chan struct{})}
		f.got[ref] = r
	}
	f.mu.Unlock()
	if ok {
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err == nil {
			return r.data, nil
		}
		// A failed read is tried again: the first reader's context may
		// have ended, or the error be the caller's to report.
		return f.blobs.get(ctx, ref)
	}
	r.data, r.err = f.blobs.get(ctx, ref)
	close(r.done)
	return r.data, r.err
}
