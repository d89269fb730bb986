package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/walk"
	"github.com/trovekit/trove/cas"
)

// Manifests lists the store path of every checkpoint manifest in st: those
// of workspaces under checkpoints/ and those in session sidecars
// (sessions/.../<session>/checkpoints/), sorted within each directory.
func Manifests(ctx context.Context, st backend.Storage) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, top := range []string{"checkpoints", "sessions"} {
			for fi, err := range walk.Ahead(ctx, st, top, cas.ScanAhead) {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					yield("", err)
					return
				}
				if fi.IsDir || !isManifestPath(fi.Name) {
					continue
				}
				if !yield(fi.Name, nil) {
					return
				}
			}
		}
	}
}

// isManifestPath reports whether name is <...>/checkpoints/<...>/<id>.json
// with a valid id.
func isManifestPath(name string) bool {
	dir, base := backend.Dir(name), backend.Base(name)
	id, ok := strings.CutSuffix(base, ".json")
	if !ok || ValidID(id) != nil {
		return false
	}
	return dir == "checkpoints" || strings.HasPrefix(dir, "checkpoints/") ||
		strings.HasSuffix(dir, "/checkpoints") || strings.Contains(dir, "/checkpoints/")
}

// LoadManifest reads and validates the manifest at the store path name
// (one Manifests lists), without a workspace.
func LoadManifest(ctx context.Context, st backend.Storage, blobs cas.Blobs, name string) (*Manifest, error) {
	id, m := readerOf(st, blobs, name)
	return m.Load(ctx, id)
}

// LoadManifestHeader reads the manifest at the store path name without
// the entries its trees hold (see Manager.LoadHeader).
func LoadManifestHeader(ctx context.Context, st backend.Storage, blobs cas.Blobs, name string) (*Manifest, error) {
	id, m := readerOf(st, blobs, name)
	return m.LoadHeader(ctx, id)
}

// readerOf is a Manager without a workspace, to read the manifest name.
func readerOf(st backend.Storage, blobs cas.Blobs, name string) (string, *Manager) {
	id := strings.TrimSuffix(backend.Base(name), ".json")
	return id, &Manager{store: st, blobs: casBlobs{blobs}, cfg: config{dir: backend.Dir(name), log: slog.New(slog.DiscardHandler)}}
}

// Roots lists the blob refs of every checkpoint in st (see Manifests), for
// GC and fsck: tree objects and file content, a delta's base included. A
// tree many checkpoints share is read and listed once, under the first. A
// manifest or tree that does not load ends the listing with its error, so
// GC never sweeps the blobs of a checkpoint it could not read. Manifests and
// their root trees are read cas.ScanAhead at a time, ahead of the listing
// (walk.Files).
func Roots(ctx context.Context, st backend.Storage, blobs cas.Blobs) iter.Seq2[cas.Root, error] {
	return func(yield func(cas.Root, error) bool) {
		seen := map[string]bool{}
		load := func(ctx context.Context, fi backend.Info) *loaded {
			if !isManifestPath(fi.Name) {
				return nil
			}
			return loadAhead(ctx, st, blobs, fi.Name)
		}
		for _, top := range []string{"checkpoints", "sessions"} {
			for l, err := range walk.Files(ctx, st, top, cas.ScanAhead, load) {
				if err != nil {
					yield(cas.Root{}, err)
					return
				}
				if l != nil && !l.roots(ctx, seen, yield) {
					return
				}
			}
		}
	}
}

// loaded is a manifest read ahead of Roots, with its root tree.
type loaded struct {
	name string
	m    *Manager
	man  *Manifest
	err  error
	tree heldTree
}

// heldTree is a blob store that answers get of one ref (a root tree read
// ahead) from memory.
type heldTree struct {
	blobStore
	ref  string
	data []byte
	err  error
}

func (p *heldTree) get(ctx context.Context, ref string) ([]byte, error) {
	if ref == p.ref && p.ref != "" {
		return p.data, p.err
	}
	return p.blobStore.get(ctx, ref)
}

func loadAhead(ctx context.Context, st backend.Storage, blobs cas.Blobs, name string) *loaded {
	id, m := readerOf(st, blobs, name)
	l := &loaded{name: name, m: m, tree: heldTree{blobStore: m.blobs}}
	l.man, l.err = m.loadHeader(ctx, id)
	if l.err == nil && l.man.Version == ManifestVersion {
		l.tree.ref = l.man.Tree
		l.tree.data, l.tree.err = m.blobs.get(ctx, l.man.Tree)
	} else if l.err == nil {
		l.err = l.man.Validate(id)
	}
	return l
}

// roots yields l's refs not in seen; it returns false once yield has, or
// after an error.
func (l *loaded) roots(ctx context.Context, seen map[string]bool, yield func(cas.Root, error) bool) bool {
	stopped := false
	emit := func(s string) bool {
		ref, err := cas.ParseRef(s)
		if err != nil {
			stopped = true
			yield(cas.Root{File: l.name}, fmt.Errorf("%w: %v", ErrCorrupt, err))
			return false
		}
		if !yield(cas.Root{Ref: ref, File: l.name}, nil) {
			stopped = true
			return false
		}
		return true
	}
	var refs []string
	err := l.err
	if err == nil && l.man.Version == ManifestVersion {
		_, err = treeRefs(ctx, &l.tree, l.man.Tree, seen, emit)
	} else if err == nil {
		refs = l.man.Refs()
	}
	if stopped {
		return false
	}
	if err != nil {
		yield(cas.Root{File: l.name}, err)
		return false
	}
	for _, s := range refs {
		if !emit(s) {
			return false
		}
	}
	return true
}
