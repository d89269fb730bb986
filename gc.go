package trove

import (
	"context"
	"iter"
	"time"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// GCOption tunes one GC run.
type GCOption func(*gcConfig)

type gcConfig struct {
	cas      []cas.GCOption
	progress func(refs int)
}

// GCProgress hears how many root refs GC has marked so far, as it goes
// (for a progress display).
func GCProgress(f func(refs int)) GCOption { return func(c *gcConfig) { c.progress = f } }

// GCDryRun makes GC report what it would free and change nothing.
func GCDryRun() GCOption { return func(c *gcConfig) { c.cas = append(c.cas, cas.GCDryRun()) } }

// GCGrace sets how old an unreferenced blob must be to go (default: the
// blob store's grace, one hour). It is what keeps a blob a live writer has
// put but not yet recorded: 0 is only safe when nothing writes the store.
func GCGrace(d time.Duration) GCOption {
	return func(c *gcConfig) { c.cas = append(c.cas, cas.GCGrace(d)) }
}

// GCReport says what GC kept and freed.
type GCReport struct {
	cas.GCReport
	// Distinct refs each layer holds.
	SessionRefs, CheckpointRefs, RunRefs int
}

// Layer names, as Root sources and Problems give them.
const (
	LayerSessions    = "sessions"
	LayerCheckpoints = "checkpoints"
	LayerRuns        = "runs"
	LayerBlobs       = "blobs"
)

// layerRoots is one layer's roots.
type layerRoots struct {
	layer string
	roots iter.Seq2[cas.Root, error]
}

func (s *Store) layers(ctx context.Context) []layerRoots {
	return []layerRoots{
		{LayerSessions, s.sessions.Roots(ctx)},
		{LayerCheckpoints, checkpoint.Roots(ctx, s.st, s.blobs)},
		{LayerRuns, s.runs.Roots(ctx)},
	}
}

// Roots lists every blob ref the store holds: every line of every session
// file and transcript (all branches), every checkpoint manifest, every run
// log and state snapshot. An error ends the listing: GC must not sweep on
// a partial list.
func (s *Store) Roots(ctx context.Context) iter.Seq2[cas.Root, error] {
	return func(yield func(cas.Root, error) bool) {
		for _, l := range s.layers(ctx) {
			for r, err := range l.roots {
				if !yield(r, err) || err != nil {
					return
				}
			}
		}
	}
}

// GC removes the blobs nothing in the store refers to (see Roots) once
// they are older than the grace period, and repacks sparse packs and the
// packs written since the last GC (cas.GCCompact). Deleting
// a session, checkpoint or run and then collecting gives back the space of
// the blobs only it held; blobs another still holds stay.
func (s *Store) GC(ctx context.Context, opts ...GCOption) (GCReport, error) {
	var c gcConfig
	for _, o := range opts {
		o(&c)
	}
	var rep GCReport
	counts := map[string]map[cas.Ref]struct{}{}
	marked := 0
	roots := func(yield func(cas.Ref, error) bool) {
		for _, l := range s.layers(ctx) {
			seen := map[cas.Ref]struct{}{}
			counts[l.layer] = seen
			for r, err := range l.roots {
				if err != nil {
					yield(cas.Ref{}, err)
					return
				}
				seen[r.Ref] = struct{}{}
				if marked++; c.progress != nil {
					c.progress(marked)
				}
				if !yield(r.Ref, nil) {
					return
				}
			}
		}
	}
	// Compacting makes the store after gc comparable to git's after git gc.
	casRep, err := s.blobs.GC(ctx, roots, append([]cas.GCOption{cas.GCCompact()}, c.cas...)...)
	rep.GCReport = casRep
	rep.SessionRefs = len(counts[LayerSessions])
	rep.CheckpointRefs = len(counts[LayerCheckpoints])
	rep.RunRefs = len(counts[LayerRuns])
	return rep, err
}
