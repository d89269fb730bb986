package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"time"
)

// GCOption tunes one GC run.
type GCOption func(*gcConfig)

type gcConfig struct {
	grace  time.Duration
	dryRun bool
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
// with their live blobs only; packs without an index (a crash between pack
// and index) and staging objects are removed once older than the grace.
//
// The grace period is what keeps concurrent writers safe: a blob or pack
// written after now-grace is never removed, and a Put that finds its blob
// older than half the grace writes it again, so a ref Put returns survives
// at least half the grace (GCGrace overrides shorter than the store's
// grace shorten that). A loose blob is looked at again just before it is
// removed, so one rewritten since the listing stays.
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
	var sparse []indexObj
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
		if len(dead) == 0 {
			continue
		}
		for _, e := range dead {
			if _, ok := deleted[e.ref]; !ok {
				deleted[e.ref] = struct{}{}
				rep.Deleted = append(rep.Deleted, e.ref)
			}
			rep.DeletedBytes += e.stored
		}
		switch {
		case len(dead) == len(x.entries):
			rep.Removed = append(rep.Removed, s.packName(x.id))
			if !c.dryRun {
				if err := s.removePack(ctx, x.id); err != nil {
					return rep, fmt.Errorf("cas: gc: %w", err)
				}
			}
		case float64(liveBytes) < s.cfg.repackBelow*float64(pack.Size):
			sparse = append(sparse, x)
		case !c.dryRun:
			drop := func(e entry) bool { _, ok := live[e.ref]; return !ok }
			if _, err := s.dropFromPack(ctx, x.id, drop); err != nil {
				return rep, fmt.Errorf("cas: gc: %w", err)
			}
		}
	}
	if len(sparse) > 0 {
		if err := s.repack(ctx, sparse, live, c.dryRun, &rep); err != nil {
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
	if err := s.refresh(ctx); err != nil {
		return rep, fmt.Errorf("cas: gc: %w", err)
	}
	s.cfg.log.Info("cas: gc", "dry_run", c.dryRun, "live", rep.Live, "kept", rep.Kept,
		"deleted", len(rep.Deleted), "deleted_bytes", rep.DeletedBytes, "young", rep.Young,
		"repacked", rep.Repacked, "removed", len(rep.Removed))
	return rep, nil
}

// repack copies the live records of sparse packs into new packs, verifying
// each on the way, and removes the old packs only once every new pack and
// its index are durable. A crash in between leaves blobs in both, which is
// harmless: the next GC finds the old packs sparse again.
func (s *Store) repack(ctx context.Context, sparse []indexObj, live map[Ref]struct{}, dryRun bool, rep *GCReport) error {
	for _, x := range sparse {
		rep.Repacked++
		rep.Removed = append(rep.Removed, s.packName(x.id))
	}
	if dryRun {
		return nil
	}
	var w packWriter
	damaged := map[string]bool{}
	for _, x := range sparse {
		for _, e := range x.entries {
			if _, ok := live[e.ref]; !ok {
				continue
			}
			rec, err := s.readRecord(ctx, e)
			codec := e.codec
			if err == nil && e.codec == codecSolid {
				// Its block holds dead blobs too: the blob moves out
				// into a record of its own.
				var data []byte
				if data, err = s.solidMember(rec, e); err == nil {
					if got, _ := Sum(e.ref.algo, data); got != e.ref {
						err = fmt.Errorf("%w: content hashes to %v", ErrCorrupt, got)
					} else {
						rec, codec, err = s.encode(nil, data)
					}
				}
			} else if err == nil {
				var obj object
				if obj, err = packedObject(io.NopCloser(bytes.NewReader(rec)), e); err == nil {
					err = s.drain("gc", e.ref, obj)
				}
			}
			if isBad(err) {
				// Copying it would spread the damage; keep the old pack for
				// forensics and let Verify name it.
				s.cfg.log.Error("cas: gc: live blob is corrupt, pack kept", "ref", e.ref, "err", err)
				damaged[x.id] = true
				continue
			}
			if err != nil {
				return err
			}
			if len(w.entries) > 0 && w.len()+int64(len(rec)) > s.cfg.packSize {
				if err := w.flush(ctx, s); err != nil {
					return err
				}
			}
			w.add(e.ref, rec, codec, e.size)
		}
	}
	if err := w.flush(ctx, s); err != nil {
		return err
	}
	for _, x := range sparse {
		if damaged[x.id] {
			drop := func(e entry) bool { _, ok := live[e.ref]; return !ok }
			if _, err := s.dropFromPack(ctx, x.id, drop); err != nil {
				return err
			}
			continue
		}
		if err := s.removePack(ctx, x.id); err != nil {
			return err
		}
	}
	return nil
}
