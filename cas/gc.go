package cas

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"time"

	"github.com/trovekit/trove/backend"
)

// GCOption tunes one GC run.
type GCOption func(*gcConfig)

type gcConfig struct {
	grace   time.Duration
	dryRun  bool
	compact bool
}

// GCGrace overrides the store's grace period (WithGrace) for one run; 0
// sweeps every unreferenced blob, however new.
func GCGrace(d time.Duration) GCOption {
	return func(c *gcConfig) { c.grace = max(d, 0) }
}

// GCDryRun makes GC report what it would do and change nothing.
func GCDryRun() GCOption {
	return func(c *gcConfig) { c.dryRun = true }
}

// GCCompact makes GC also rewrite every pack a batch wrote, and merge small
// packs it wrote before, into cold packs (repack.go): versions of one file
// or tree side by side, compressed at zstd's best level, as git gc repacks
// a repository. Young packs are rewritten too, with every blob they hold.
func GCCompact() GCOption {
	return func(c *gcConfig) { c.compact = true }
}

// GCReport says what a GC run did, or would do in a dry run.
type GCReport struct {
	DryRun       bool
	Live         int      // distinct refs among the roots
	Kept         int      // stored blobs that are live
	Deleted      []Ref    // unreferenced blobs removed
	DeletedBytes int64    // their stored bytes
	Young        int      // unreferenced blobs kept for the grace period
	Repacked     int      // packs rewritten with only their live blobs
	Removed      []string // other objects removed: empty, orphaned or repacked packs, stale staging objects
}

// GC removes every blob that roots does not yield and that is older than the
// grace period. roots is the caller's full set of live refs (sessions,
// checkpoints, run logs); an error from it aborts GC before anything is
// removed. Packs whose live share falls below WithRepackBelow are rewritten
// with their live blobs only, into a cold pack (repack.go), as GCCompact
// rewrites all packs batches wrote; packs without an index (a crash between
// pack and index) and staging objects are removed once older than the grace.
//
// The grace period is what keeps concurrent writers safe: a blob or pack
// written after now-grace is never removed, and a Put that finds its blob
// older than half the grace writes it again, so a ref Put returns survives
// at least half the grace (GCGrace overrides shorter than the store's
// grace shorten that). A loose blob is looked at again just before it is
// removed, so one rewritten since the listing stays. A young pack GCCompact
// rewrites keeps every blob, and a pack goes only once its blobs are in a
// durable new pack: a reader that finds it gone rereads the indexes.
func (s *Store) GC(ctx context.Context, roots iter.Seq2[Ref, error], opts ...GCOption) (GCReport, error) {
	g := &gcRun{s: s, c: gcConfig{grace: s.cfg.grace}, kept: map[Ref]struct{}{}, deleted: map[Ref]struct{}{}}
	for _, o := range opts {
		o(&g.c)
	}
	g.rep.DryRun = g.c.dryRun
	g.cutoff = s.cfg.now().Add(-g.c.grace)
	if err := g.run(ctx, roots); err != nil {
		return g.rep, fmt.Errorf("cas: gc: %w", err)
	}
	s.cfg.log.Info("cas: gc", "dry_run", g.c.dryRun, "live", g.rep.Live, "kept", g.rep.Kept,
		"deleted", len(g.rep.Deleted), "deleted_bytes", g.rep.DeletedBytes, "young", g.rep.Young,
		"repacked", g.rep.Repacked, "removed", len(g.rep.Removed))
	return g.rep, nil
}

// gcRun is one GC run: its options, what it found live and what it did.
type gcRun struct {
	s       *Store
	c       gcConfig
	cutoff  time.Time
	rep     GCReport
	live    map[Ref]struct{}
	kept    map[Ref]struct{} // stored blobs found live
	deleted map[Ref]struct{} // refs counted in rep.Deleted
}

// run takes the steps of a GC in order: roots, loose blobs, packs, staging
// objects, then the index cache.
func (g *gcRun) run(ctx context.Context, roots iter.Seq2[Ref, error]) error {
	if err := g.readRoots(roots); err != nil {
		return fmt.Errorf("roots: %w", err)
	}
	if err := g.sweepLoose(ctx); err != nil {
		return err
	}
	if err := g.sweepPacks(ctx); err != nil {
		return err
	}
	if err := g.sweepStaging(ctx); err != nil {
		return err
	}
	g.rep.Kept = len(g.kept)
	if !g.c.dryRun {
		// The index cache names packs that may be gone: the next reader
		// with indexes enough writes it again, smaller.
		if err := g.s.st.Unlink(ctx, g.s.idxCacheName()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return g.s.refresh(ctx)
}

func (g *gcRun) young(t time.Time) bool { return t.After(g.cutoff) }

// unlink removes name unless the run is dry; a name already gone is fine.
func (g *gcRun) unlink(ctx context.Context, name string) error {
	if g.c.dryRun {
		return nil
	}
	if err := g.s.st.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removePack removes a pack and its index unless the run is dry.
func (g *gcRun) removePack(ctx context.Context, id string) error {
	if g.c.dryRun {
		return nil
	}
	return g.s.removePack(ctx, id)
}

// dropDead removes a pack's dead entries from its index unless the run is
// dry.
func (g *gcRun) dropDead(ctx context.Context, id string) error {
	if g.c.dryRun {
		return nil
	}
	return g.s.dropDead(ctx, id, g.live)
}

// delete counts ref, of stored bytes n, as deleted.
func (g *gcRun) delete(ref Ref, n int64) {
	if _, ok := g.deleted[ref]; !ok {
		g.deleted[ref] = struct{}{}
		g.rep.Deleted = append(g.rep.Deleted, ref)
	}
	g.rep.DeletedBytes += n
}

func (g *gcRun) readRoots(roots iter.Seq2[Ref, error]) error {
	g.live = map[Ref]struct{}{}
	for ref, err := range roots {
		if err != nil {
			return err
		}
		if !ref.valid() {
			return fmt.Errorf("%w: zero ref", ErrInvalidRef)
		}
		g.live[ref] = struct{}{}
	}
	g.rep.Live = len(g.live)
	return nil
}

// sweepLoose removes the loose blobs that are neither live nor young.
func (g *gcRun) sweepLoose(ctx context.Context) error {
	var doomed []looseObj
	for o, err := range g.s.listLoose(ctx) {
		if err != nil {
			return err
		}
		switch _, isLive := g.live[o.ref]; {
		case o.ref.IsZero():
			// Not ours to judge; Verify reports it.
		case isLive:
			g.kept[o.ref] = struct{}{}
		case g.young(o.info.ModTime):
			g.rep.Young++
		default:
			doomed = append(doomed, o)
		}
	}
	for _, o := range doomed {
		if !g.c.dryRun {
			if fi, err := g.s.st.Stat(ctx, o.info.Name); err == nil && g.young(fi.ModTime) {
				g.rep.Young++ // a Put made it young again since the listing
				continue
			}
			if err := g.s.st.Unlink(ctx, o.info.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		g.delete(o.ref, o.info.Size)
	}
	return nil
}

// packPlan is where sweepPacks puts each pack it keeps some of.
type packPlan struct {
	rewrite, smallCold, keptCold []repackSrc
}

// sweepPacks drops dead blobs from packs, removes the packs left with
// none and those without an index, and repacks the sparse ones. Listing
// packs after indexes means every pack with an index written before the
// index listing is seen with it.
func (g *gcRun) sweepPacks(ctx context.Context) error {
	indexes, err := g.s.listIndexes(ctx)
	if err != nil {
		return err
	}
	packs, err := g.s.listPacks(ctx)
	if err != nil {
		return err
	}
	indexed := map[string]bool{}
	var plan packPlan
	for _, x := range indexes {
		indexed[x.id] = true
		if err := g.sweepPack(ctx, x, packs, &plan); err != nil {
			return err
		}
	}
	if err := g.repack(ctx, plan); err != nil {
		return err
	}
	for id, fi := range packs {
		if !indexed[id] && !g.young(fi.ModTime) {
			g.rep.Removed = append(g.rep.Removed, fi.Name)
			if err := g.unlink(ctx, fi.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepPack judges one indexed pack: removed, dropped from, or planned for
// a repack.
func (g *gcRun) sweepPack(ctx context.Context, x indexObj, packs map[string]backend.Info, plan *packPlan) error {
	if x.err != nil {
		g.s.cfg.log.Warn("cas: gc: skipping unreadable pack index", "id", x.id, "err", x.err)
		return nil
	}
	pack, ok := packs[x.id]
	if len(x.entries) == 0 {
		// Left by an interrupted removal; it names nothing.
		g.rep.Removed = append(g.rep.Removed, g.s.indexName(x.id))
		return g.removePack(ctx, x.id)
	}
	if !ok {
		// Only a lost race with Delete leaves an index without its
		// pack (packs are written first); it names nothing readable.
		if err := g.unlink(ctx, g.s.indexName(x.id)); err != nil {
			return err
		}
		g.rep.Removed = append(g.rep.Removed, g.s.indexName(x.id))
		return nil
	}
	isYoung := g.young(x.info.ModTime) || g.young(pack.ModTime)
	liveBytes := int64(len(packMagic))
	var dead []entry
	for _, e := range x.entries {
		if _, ok := g.live[e.ref]; ok {
			g.kept[e.ref] = struct{}{}
			liveBytes += e.stored
		} else if isYoung {
			g.rep.Young++
		} else {
			dead = append(dead, e)
		}
	}
	for _, e := range dead {
		g.delete(e.ref, e.stored)
	}
	// A young pack is copied whole: its unreferenced blobs may be
	// a writer's, about to be referenced.
	src := repackSrc{x: x, keepAll: isYoung, dead: len(dead) > 0}
	cfg := g.s.cfg
	switch {
	case len(dead) == len(x.entries):
		g.rep.Removed = append(g.rep.Removed, g.s.packName(x.id))
		return g.removePack(ctx, x.id)
	case g.c.compact && !x.cold, len(dead) > 0 && float64(liveBytes) < cfg.repackBelow*float64(pack.Size):
		plan.rewrite = append(plan.rewrite, src)
	case g.c.compact && pack.Size < cfg.packSize/2:
		plan.smallCold = append(plan.smallCold, src)
	default:
		if len(dead) > 0 {
			if err := g.dropDead(ctx, x.id); err != nil {
				return err
			}
		}
		if x.cold {
			plan.keptCold = append(plan.keptCold, src)
		}
	}
	return nil
}

// repack rewrites the packs planned for it. Small cold packs (the last of
// a repack is seldom full) join a repack, or are merged once there are two
// of them.
func (g *gcRun) repack(ctx context.Context, plan packPlan) error {
	if len(plan.rewrite) > 0 || len(plan.smallCold) > 1 {
		plan.rewrite = append(plan.rewrite, plan.smallCold...)
	} else {
		for _, src := range plan.smallCold {
			if src.dead {
				if err := g.dropDead(ctx, src.x.id); err != nil {
					return err
				}
			}
		}
		plan.keptCold = append(plan.keptCold, plan.smallCold...)
	}
	if len(plan.rewrite) == 0 {
		return nil
	}
	return g.s.repack(ctx, plan.rewrite, plan.keptCold, g.live, g.c.dryRun, &g.rep)
}

// sweepStaging removes the staging objects of puts that never finished.
func (g *gcRun) sweepStaging(ctx context.Context) error {
	for fi, err := range g.s.st.List(ctx, g.s.tmpDir()) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		if !fi.IsDir && !g.young(fi.ModTime) {
			g.rep.Removed = append(g.rep.Removed, fi.Name)
			if err := g.unlink(ctx, fi.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropDead removes the entries of a pack that live does not hold from its
// index.
func (s *Store) dropDead(ctx context.Context, id string, live map[Ref]struct{}) error {
	_, err := s.dropFromPack(ctx, id, func(e entry) bool { _, ok := live[e.ref]; return !ok })
	return err
}
