package cas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/trovekit/trove/backend"
)

// Every batch writes a pack and its index, and every command lists the
// indexes and looks at each: a hook that checkpoints before every tool
// call would grow that list without end, as nothing runs GC by itself.
// AutoPack merges the small packs into one once there are more than the
// limit (WithAutoPack), as git gc --auto repacks past gc.autoPackLimit. It
// is not GC: every blob the merged packs hold is kept, with no roots and
// no grace; its records are copied as they are (each blob verified), so a
// merge costs reading and writing the small packs, not compressing them
// (GC's repack does that, at the best level, into cold packs), nor
// verifying them (see copyPack).

// DefaultAutoPack is the number of small packs past which AutoPack merges
// them: the index listing every command makes stays under about 35 files
// for checkpoint stores (docs/checkpoint.md has the figures).
const DefaultAutoPack = 32

// autoPackLock is the lock name (in the store's directory) that keeps two
// processes from merging the same packs twice; where the storage has no
// locks, a merge is safe without it (see AutoPack).
const autoPackLock = "autopack.lock"

// AutoPackReport says what AutoPack did.
type AutoPackReport struct {
	Merged  int   // small packs merged (and removed)
	Written int   // packs written
	Blobs   int   // blobs copied
	Bytes   int64 // stored bytes copied
}

// smallPack reports whether a pack of size bytes is one AutoPack merges.
func (s *Store) smallPack(size int64) bool { return size < s.cfg.packSize/4 }

// AutoPack merges the store's small packs (under a quarter of the pack
// size) into as few packs as they fill when there are more of them than the
// AutoPack limit; otherwise it does nothing, and no I/O once the indexes
// are loaded. Call it after writes (a checkpoint does), not on the path a
// caller waits on for durability.
//
// Readers and writers in other processes stay safe: the merged packs and
// their indexes are durable before any merged pack is removed (as GC's
// repack does), and a reader that finds a pack gone rereads the indexes and
// finds the blob in the merged pack. Two merges at once take a lock where
// the storage has one; without it, each copies what it reads and removes
// only packs whose blobs its own merged pack holds, so the worst case is a
// blob stored twice, never one lost. A pack holding a corrupt blob is left
// as it is.
func (s *Store) AutoPack(ctx context.Context) (AutoPackReport, error) {
	var rep AutoPackReport
	if s.cfg.autoPack <= 0 {
		return rep, nil
	}
	if err := s.ensureIndex(ctx); err != nil {
		return rep, fmt.Errorf("cas: autopack: %w", err)
	}
	if s.countSmall() <= s.cfg.autoPack {
		return rep, nil
	}
	u, err := s.st.Lock(ctx, s.cfg.dir+"/"+autoPackLock, false)
	switch {
	case errors.Is(err, backend.ErrLocked):
		return rep, nil // another process is merging them
	case errors.Is(err, backend.ErrNotSupported):
	case err != nil:
		return rep, fmt.Errorf("cas: autopack: %w", err)
	default:
		defer u.Unlock()
	}
	if err := s.autoPack(ctx, &rep); err != nil {
		return rep, fmt.Errorf("cas: autopack: %w", err)
	}
	s.cfg.log.Debug("cas: autopack", "merged", rep.Merged, "written", rep.Written, "blobs", rep.Blobs, "bytes", rep.Bytes)
	return rep, nil
}

// countSmall counts the small packs the index knows.
func (s *Store) countSmall() int {
	n := 0
	for _, p := range s.idx.snapshot() {
		if s.smallPack(p.size) {
			n++
		}
	}
	return n
}

func (s *Store) autoPack(ctx context.Context, rep *AutoPackReport) error {
	// Another process may have merged them since this one loaded the
	// indexes: the listing is taken again, under the lock.
	if err := s.refresh(ctx); err != nil {
		return err
	}
	if s.countSmall() <= s.cfg.autoPack {
		return nil
	}
	var ids []string
	for _, p := range s.idx.snapshot() {
		if s.smallPack(p.size) {
			ids = append(ids, p.id)
		}
	}
	slices.Sort(ids)
	m := merger{s: s, copied: map[Ref]bool{}}
	var merged []string
	for _, id := range ids {
		ok, err := m.copyPack(ctx, id)
		if err != nil {
			return err
		}
		if ok {
			merged = append(merged, id)
		}
		if m.w.len() >= s.cfg.packSize {
			if err := m.flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := m.flush(ctx); err != nil {
		return err
	}
	rep.Written, rep.Blobs, rep.Bytes = m.written, len(m.copied), m.bytes
	// Only now, with every merged pack durable, do the old ones go: every
	// index, then every pack, so that a process killed in between leaves
	// packs without an index (GC removes them), never an index without
	// its pack. Not GC's durable emptying of each index first (removePack):
	// two syncs a pack (a merge of 33 packs on ext4: 43 ms with them, 17
	// without), for an order a power loss could break only on a file
	// system that reorders unlinks, and then only costs a read a second
	// look (withBlob).
	for _, id := range merged {
		if err := s.st.Unlink(ctx, s.indexName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, id := range merged {
		if err := s.st.Unlink(ctx, s.packName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		rep.Merged++
	}
	return s.refresh(ctx)
}

// merger copies the records of small packs into new packs.
type merger struct {
	s       *Store
	w       packWriter
	copied  map[Ref]bool // in a pack this merge wrote
	written int
	bytes   int64
}

func (m *merger) flush(ctx context.Context) error {
	if len(m.w.entries) == 0 {
		return nil
	}
	m.bytes += m.w.len()
	m.written++
	return m.w.flush(ctx, m.s)
}

// copyPack copies the records of pack id that hold a blob its index names
// and no pack of this merge holds yet. It reports false, copying nothing,
// when the pack is gone (another merge or GC took it) or its index names
// bytes it does not hold.
//
// Records are copied as they are, not verified: a damaged one is as
// damaged in the merged pack, where reads and Verify find it as they would
// have in the old one (its ref is the digest of its content). Verifying
// (decoding and hashing every blob) was two thirds of a merge.
func (m *merger) copyPack(ctx context.Context, id string) (bool, error) {
	s := m.s
	// The index as stored now, not as cached: a Delete may have dropped
	// entries since.
	data, err := s.st.ReadFile(ctx, s.indexName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, entries, err := decodeIndex(id, data)
	if err != nil {
		s.cfg.log.Warn("cas: autopack: skipping unreadable pack index", "id", id, "err", err)
		return false, nil
	}
	if len(entries) == 0 {
		return false, nil // being removed
	}
	pack, err := s.st.ReadFile(ctx, s.packName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	recs, err := groupRecords(pack, entries)
	if err != nil {
		s.cfg.log.Error("cas: autopack: damaged pack left as it is", "pack", id, "err", err)
		return false, nil
	}
	for _, r := range recs {
		var keep []entry
		for _, e := range r.entries {
			if !m.copied[e.ref] {
				m.copied[e.ref] = true
				keep = append(keep, e)
			}
		}
		if len(keep) > 0 {
			m.w.addRecord(s, pack[r.off:r.off+r.n], keep)
		}
	}
	return true, nil
}

// packRecord is one record of a pack and the entries that name it.
type packRecord struct {
	off, n  int64
	entries []entry
}

// groupRecords groups entries by record, in pack order. A record outside
// the pack, or overlapping another, is ErrCorrupt.
func groupRecords(pack []byte, entries []entry) ([]packRecord, error) {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(a.off, b.off) })
	var recs []packRecord
	for _, e := range entries {
		if e.off+e.n > int64(len(pack)) {
			return nil, refErr("autopack", e.ref, fmt.Errorf("%w: pack %s is truncated", ErrCorrupt, e.packID))
		}
		if k := len(recs) - 1; k >= 0 && recs[k].off == e.off && recs[k].n == e.n {
			recs[k].entries = append(recs[k].entries, e)
			continue
		}
		if k := len(recs) - 1; k >= 0 && e.off < recs[k].off+recs[k].n {
			return nil, refErr("autopack", e.ref, fmt.Errorf("%w: pack %s has overlapping records", ErrCorrupt, e.packID))
		}
		recs = append(recs, packRecord{off: e.off, n: e.n, entries: []entry{e}})
	}
	return recs, nil
}

// addRecord adds a record copied from another pack with the entries (of
// that pack) that name it.
func (w *packWriter) addRecord(s *Store, rec []byte, es []entry) {
	off := w.next(s, len(rec))
	for _, e := range es {
		e.off, e.packID = off, ""
		w.entries = append(w.entries, e)
	}
	w.buf = append(w.buf, rec...)
}
