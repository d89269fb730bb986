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
	"github.com/trovekit/trove/cas"
)

// Manifests lists the store path of every checkpoint manifest in st: those
// of workspaces under checkpoints/ and those in session sidecars
// (sessions/.../<session>/checkpoints/), sorted within each directory.
func Manifests(ctx context.Context, st backend.Storage) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, top := range []string{"checkpoints", "sessions"} {
			for fi, err := range backend.Walk(ctx, st, top) {
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

// readerOf is a Manager without a workspace, to read the manifest name.
func readerOf(st backend.Storage, blobs cas.Blobs, name string) (string, *Manager) {
	id := strings.TrimSuffix(backend.Base(name), ".json")
	return id, &Manager{store: st, blobs: casBlobs{blobs}, cfg: config{dir: backend.Dir(name), log: slog.New(slog.DiscardHandler)}}
}

// Roots lists the blob refs of every checkpoint in st (see Manifests), for
// GC and fsck: tree objects and file content, a delta's base included. A
// tree many checkpoints share is read and listed once, under the first. A
// manifest or tree that does not load ends the listing with its error, so
// GC never sweeps the blobs of a checkpoint it could not read.
func Roots(ctx context.Context, st backend.Storage, blobs cas.Blobs) iter.Seq2[cas.Root, error] {
	return func(yield func(cas.Root, error) bool) {
		seen := map[string]bool{}
		for name, err := range Manifests(ctx, st) {
			if err != nil {
				yield(cas.Root{}, err)
				return
			}
			var refs []string
			stopped := false
			emit := func(s string) bool {
				ref, err := cas.ParseRef(s)
				if err != nil {
					stopped = true
					yield(cas.Root{File: name}, fmt.Errorf("%w: %v", ErrCorrupt, err))
					return false
				}
				if !yield(cas.Root{Ref: ref, File: name}, nil) {
					stopped = true
					return false
				}
				return true
			}
			id, m := readerOf(st, blobs, name)
			man, err := m.loadHeader(ctx, id)
			if err == nil && man.Version == ManifestVersion {
				_, err = treeRefs(ctx, m.blobs, man.Tree, seen, emit)
			} else if err == nil {
				if err = man.Validate(id); err == nil {
					refs = man.Refs()
				}
			}
			if stopped {
				return
			}
			if err != nil {
				yield(cas.Root{File: name}, err)
				return
			}
			for _, s := range refs {
				if !emit(s) {
					return
				}
			}
		}
	}
}
