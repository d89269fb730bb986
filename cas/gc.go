package cas

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"time"
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
	c := gcConfig{grace: s.cfg.grace}
	for _, o := range opts {
		o(&c)
	}
	rep := GCReport{DryRun: c.dryRun}
	cutoff := s.cfg.now().Add(-c.grace)
	young := func(t time.Time) bool { return t.After(cutoff) }

	live := map[Ref]struct{}{}
	for ref, err := range roots {
		if err != nil {
			return rep, fmt.Errorf("cas: gc: roots: %w", err)
		}
		if !ref.valid() {
			return rep, fmt.Errorf("cas: gc: roots: %w: zero ref", ErrInvalidRef)
		}
		live[ref] = struct{}{}
	}
	rep.Live = len(live)

	// Loose blobs.
	deleted := map[Ref]struct{}{}
	kept := map[Ref]struct{}{}
	var doomed []looseObj
	for o, err := range s.listLoose(ctx) {
		if err != nil {
			return rep, fmt.Errorf("cas: gc: %w", err)
		}
		switch _, isLive := live[o.ref]; {
		case o.ref.IsZero():
			// Not ours to judge; Verify reports it.
		case isLive:
			kept[o.ref] = struct{}{}
		case young(o.info.ModTime):
			rep.Young++
		default:
			doomed = append(doomed, o)
		}
	}
	for _, o := range doomed {
		if !c.dryRun {
			if fi, err := s.st.Stat(ctx, o.info.Name); err == nil && young(fi.ModTime) {
				rep.Young++ // a Put made it young again since the listing
				continue
			}
			if err := s.st.Unlink(ctx, o.info.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return rep, fmt.Errorf("cas: gc: %w", err)
			}
		}
		if _, ok := deleted[o.ref]; !ok {
			deleted[o.ref] = struct{}{}
			rep.Deleted = append(rep.Deleted, o.ref)
		}
		rep.DeletedBytes += o.info.Size
	}

	// Packs. Listing packs after indexes means every pack with an index
	// written before the index listing is seen with it.
	indexes, err := s.listIndexes(ctx)
	if err != nil {
		return rep, fmt.Errorf("cas: gc: %w", err)
	}
	packs, err := s.listPacks(ctx)
	if err != nil {
		return rep, fmt.Errorf("cas: gc: %w", err)
	}
	indexed := map[string]bool{}
	var rewrite, smallCold, keptCold []repackSrc
	for _, x := range indexes {
		indexed[x.id] = true
		if x.err != nil {
			s.cfg.log.Warn("cas: gc: skipping unreadable pack index", "id", x.id, "err", x.err)
			continue
		}
		pack, ok := packs[x.id]
		if len(x.entries) == 0 {
			// Left by an interrupted removal; it names nothing.
			rep.Removed = append(rep.Removed, s.indexName(x.id))
			if !c.dryRun {
				if err := s.removePack(ctx, x.id); err != nil {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
			continue
		}
		if !ok {
			// Only a lost race with Delete leaves an index without its
			// pack (packs are written first); it names nothing readable.
			if !c.dryRun {
				if err := s.st.Unlink(ctx, s.indexName(x.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
			rep.Removed = append(rep.Removed, s.indexName(x.id))
			continue
		}
		isYoung := young(x.info.ModTime) || young(pack.ModTime)
		liveBytes := int64(len(packMagic))
		var dead []entry
		for _, e := range x.entries {
			if _, ok := live[e.ref]; ok {
				kept[e.ref] = struct{}{}
				liveBytes += e.stored
			} else if isYoung {
				rep.Young++
			} else {
				dead = append(dead, e)
			}
		}
		for _, e := range dead {
			if _, ok := deleted[e.ref]; !ok {
				deleted[e.ref] = struct{}{}
				rep.Deleted = append(rep.Deleted, e.ref)
			}
			rep.DeletedBytes += e.stored
		}
		// A young pack is copied whole: its unreferenced blobs may be
		// a writer's, about to be referenced.
		src := repackSrc{x: x, keepAll: isYoung, dead: len(dead) > 0}
		switch {
		case len(dead) == len(x.entries):
			rep.Removed = append(rep.Removed, s.packName(x.id))
			if !c.dryRun {
				if err := s.removePack(ctx, x.id); err != nil {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
		case c.compact && !x.cold, len(dead) > 0 && float64(liveBytes) < s.cfg.repackBelow*float64(pack.Size):
			rewrite = append(rewrite, src)
		case c.compact && pack.Size < s.cfg.packSize/2:
			smallCold = append(smallCold, src)
		default:
			if len(dead) > 0 && !c.dryRun {
				if err := s.dropDead(ctx, x.id, live); err != nil {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
			if x.cold {
				keptCold = append(keptCold, src)
			}
		}
	}
	// Small cold packs (the last of a repack is seldom full) join a
	// repack, or are merged once there are two of them.
	if len(rewrite) > 0 || len(smallCold) > 1 {
		rewrite = append(rewrite, smallCold...)
	} else {
		for _, src := range smallCold {
			if src.dead && !c.dryRun {
				if err := s.dropDead(ctx, src.x.id, live); err != nil {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
		}
		keptCold = append(keptCold, smallCold...)
	}
	if len(rewrite) > 0 {
		if err := s.repack(ctx, rewrite, keptCold, live, c.dryRun, &rep); err != nil {
			return rep, fmt.Errorf("cas: gc: %w", err)
		}
	}
	for id, fi := range packs {
		if !indexed[id] && !young(fi.ModTime) {
			rep.Removed = append(rep.Removed, fi.Name)
			if !c.dryRun {
				if err := s.st.Unlink(ctx, fi.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
		}
	}

	// Staging objects of puts that never finished.
	for fi, err := range s.st.List(ctx, s.tmpDir()) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("cas: gc: %w", err)
		}
		if !fi.IsDir && !young(fi.ModTime) {
			rep.Removed = append(rep.Removed, fi.Name)
			if !c.dryRun {
				if err := s.st.Unlink(ctx, fi.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
		}
	}
	rep.Kept = len(kept)
	if !c.dryRun {
		// The index cache names packs that may be gone: the next reader
		// with indexes enough writes it again, smaller.
		if err := s.st.Unlink(ctx, s.idxCacheName()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("cas: gc: %w", err)
		}
	}
	if err := s.refresh(ctx); err != nil {
		return rep, fmt.Errorf("cas: gc: %w", err)
	}
	s.cfg.log.Info("cas: gc", "dry_run", c.dryRun, "live", rep.Live, "kept", rep.Kept,
		"deleted", len(rep.Deleted), "deleted_bytes", rep.DeletedBytes, "young", rep.Young,
		"repacked", rep.Repacked, "removed", len(rep.Removed))
	return rep, nil
}

// dropDead removes the entries of a pack that live does not hold from its
// index.
func (s *Store) dropDead(ctx context.Context, id string, live map[Ref]struct{}) error {
	_, err := s.dropFromPack(ctx, id, func(e entry) bool { _, ok := live[e.ref]; return !ok })
	return err
}
