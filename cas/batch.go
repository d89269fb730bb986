package cas

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
)

// Batch stores many blobs together: blobs smaller than the pack threshold go
// into pack objects of about the pack size, each followed by its index, so a
// tree of thousands of small files costs a handful of objects and syncs.
// Larger blobs are stored as with Put.
//
// A Batch is safe for concurrent use. Packed blobs are durable and visible to
// readers only after the Flush that writes their pack (Put flushes by itself
// when a pack is full); until then only the Batch knows them. After an error,
// the refs returned since the last successful Flush may not be stored.
type Batch struct {
	s *Store

	mu      sync.Mutex
	indexed bool         // the index cache has been refreshed for dedup
	pack    packWriter   // the pack being filled
	pending map[Ref]bool // in pack, not yet written
	err     error        // latched: a failed pack write fails the batch
}

// packWriter fills one pack in memory and writes it with its index.
type packWriter struct {
	buf     []byte // packMagic, then records
	entries []entry
}

func (w *packWriter) len() int64 { return int64(len(w.buf)) }

func (w *packWriter) add(ref Ref, rec []byte, codec Codec, size int64) {
	if len(w.buf) == 0 {
		w.buf = append(w.buf, packMagic[:]...)
	}
	w.entries = append(w.entries, entry{ref: ref, off: int64(len(w.buf)), n: int64(len(rec)), codec: codec, size: size})
	w.buf = append(w.buf, rec...)
}

// flush writes the pack, and only once the pack is durable its index: an
// index never names bytes that are not there. A crash in between leaves a
// pack without an index, which no reader sees and GC removes.
func (w *packWriter) flush(ctx context.Context, s *Store) error {
	if len(w.entries) == 0 {
		return nil
	}
	id := newID()
	for i := range w.entries {
		w.entries[i].packID = id
	}
	if err := s.st.WriteFile(ctx, s.packName(id), w.buf); err != nil {
		return err
	}
	idx := encodeIndex(int64(len(w.buf)), w.entries)
	if err := s.st.WriteFile(ctx, s.indexName(id), idx); err != nil {
		return err
	}
	s.cfg.log.Debug("cas: wrote pack", "id", id, "blobs", len(w.entries), "bytes", len(w.buf))
	s.idx.add(&packIdx{id: id, size: int64(len(w.buf)), idxSize: int64(len(idx)), entries: w.entries})
	w.reset()
	return nil
}

func (w *packWriter) reset() {
	w.buf = w.buf[:0]
	w.entries = nil
}

// NewBatch starts a batch. It does no I/O.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, pending: map[Ref]bool{}}
}

// Put adds data to the batch and returns its ref under the store's algorithm.
func (b *Batch) Put(ctx context.Context, data []byte) (Ref, error) {
	s := b.s
	ref := Ref{algo: s.cfg.algo, digest: s.cfg.algo.sum(data)}
	if int64(len(data)) >= s.cfg.packThreshold {
		return ref, s.putBytes(ctx, "put", ref, data)
	}
	return ref, b.add(ctx, ref, data)
}

// PutReader adds everything r yields to the batch; a stream longer than the
// pack threshold is stored as with Store.PutReader.
func (b *Batch) PutReader(ctx context.Context, r io.Reader) (Ref, error) {
	s := b.s
	head, err := io.ReadAll(io.LimitReader(r, s.cfg.packThreshold))
	if err != nil {
		return Ref{}, refErr("put", Ref{}, err)
	}
	if int64(len(head)) < s.cfg.packThreshold {
		return b.Put(ctx, head)
	}
	return s.PutReader(ctx, io.MultiReader(bytes.NewReader(head), r))
}

func (b *Batch) add(ctx context.Context, ref Ref, data []byte) error {
	s := b.s
	b.mu.Lock()
	dup := b.pending[ref]
	indexed := b.indexed
	err := b.err
	b.mu.Unlock()
	if err != nil {
		return refErr("put", ref, err)
	}
	if dup {
		return nil
	}
	if !indexed {
		// One refresh per batch; after it, dedup asks the cache and the
		// loose object only, not the index directory for every blob.
		if err := s.refresh(ctx); err != nil {
			return refErr("put", ref, err)
		}
		b.mu.Lock()
		b.indexed = true
		b.mu.Unlock()
	}
	if _, ok := s.idx.lookup(ref); ok {
		return nil
	}
	if _, err := s.st.Stat(ctx, s.looseName(ref)); err == nil {
		return nil
	} else if !isNotExist(err) {
		return refErr("put", ref, err)
	}

	bp := s.getBuf()
	defer s.putBuf(bp)
	rec, codec, err := s.encode((*bp)[:0], data)
	*bp = rec
	if err != nil {
		return refErr("put", ref, err)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return refErr("put", ref, b.err)
	}
	if b.pending[ref] {
		return nil
	}
	if len(b.pack.entries) > 0 && b.pack.len()+int64(len(rec)) > s.cfg.packSize {
		if err := b.flushLocked(ctx); err != nil {
			return refErr("put", ref, err)
		}
	}
	b.pack.add(ref, rec, codec, int64(len(data)))
	b.pending[ref] = true
	return nil
}

// Flush writes the pack being filled, then its index. When it returns nil,
// every blob put so far is durable and visible to all readers.
func (b *Batch) Flush(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	return b.flushLocked(ctx)
}

func (b *Batch) flushLocked(ctx context.Context) error {
	if err := b.pack.flush(ctx, b.s); err != nil {
		b.err = err
		return err
	}
	clear(b.pending)
	return nil
}

// Discard drops the blobs not yet flushed; nothing of them was written.
func (b *Batch) Discard() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pack.reset()
	clear(b.pending)
}

// PutMany stores blobs as one batch and returns their refs in order. When it
// returns nil, every blob is durable.
func (s *Store) PutMany(ctx context.Context, blobs [][]byte) ([]Ref, error) {
	b := s.NewBatch()
	refs := make([]Ref, len(blobs))
	for i, data := range blobs {
		ref, err := b.Put(ctx, data)
		if err != nil {
			b.Discard()
			return nil, err
		}
		refs[i] = ref
	}
	if err := b.Flush(ctx); err != nil {
		return nil, err
	}
	return refs, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
