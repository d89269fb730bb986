package cas

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"
	"sync"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/stage"
)

// Batch stores many blobs together: blobs smaller than the pack threshold go
// into pack objects of about the pack size, each followed by its index, so a
// tree of thousands of small files costs a handful of objects and syncs.
// Larger blobs are stored as with Put.
//
// Small compressible blobs are gathered into block records (codecSolid):
// zstd frames of blobs back to back (frames.go), which compress much
// better than each blob alone, as git's packs and restic's do.
//
// A Batch is safe for concurrent use. Packed blobs are durable and visible to
// readers only after the Flush that writes their pack (Put flushes by itself
// when a pack is full); until then only the Batch knows them. After an error,
// the refs returned since the last successful Flush may not be stored.
type Batch struct {
	s *Store

	mu      sync.Mutex
	indexed bool         // the index cache has been refreshed for dedup
	gen     uint64       // idx.begun when the batch was made
	pack    packWriter   // the pack being filled
	pending map[Ref]bool // in pack or block, not yet written
	err     error        // latched: a failed pack write fails the batch

	block    block     // small blobs waiting for their block record
	encoding int       // blocks being compressed outside mu
	encoded  sync.Cond // on mu: signalled when one is added to the pack
}

// block is small blobs gathered for one block record: their bytes back to
// back in buf.
type block struct {
	refs  []Ref
	sizes []int64
	buf   []byte
}

const (
	// solidBlock is the original bytes at which a block record is closed.
	// Reading one blob decodes its frame (blockFrameMin or more), or a
	// whole older block: 64 KiB keeps that near the cost of one small
	// blob, for a ratio 1% short of 128 KiB blocks on source files.
	solidBlock = 64 << 10
	// solidMax: bigger blobs compress well alone.
	solidMax = 64 << 10
)

// packWriter fills one pack in memory and writes it with its index.
type packWriter struct {
	buf     []byte // packMagic, then records
	entries []entry
	cold    bool // written by GC's repack: a version 3 index
}

func (w *packWriter) len() int64 { return int64(len(w.buf)) }

// next makes room for a record of n bytes and returns its offset: the
// pack's magic comes first.
func (w *packWriter) next(s *Store, n int) int64 {
	w.room(s, n)
	if len(w.buf) == 0 {
		w.buf = append(w.buf, packMagic[:]...)
	}
	return int64(len(w.buf))
}

func (w *packWriter) add(s *Store, ref Ref, rec []byte, codec Codec, size int64) {
	off := w.next(s, len(rec))
	w.entries = append(w.entries, entry{ref: ref, off: off, n: int64(len(rec)), codec: codec, size: size, stored: int64(len(rec))})
	w.buf = append(w.buf, rec...)
}

// addBlock adds the record rec of block bl.
func (w *packWriter) addBlock(s *Store, bl block, rec []byte) {
	off, inner := w.next(s, len(rec)), int64(0)
	for i, ref := range bl.refs {
		w.entries = append(w.entries, entry{ref: ref, off: off, n: int64(len(rec)), codec: codecSolid, size: bl.sizes[i], inner: inner})
		inner += bl.sizes[i]
	}
	setShares(w.entries[len(w.entries)-len(bl.refs):])
	w.buf = append(w.buf, rec...)
}

// flush writes the pack, and only once the pack is durable its index: an
// index never names bytes that are not there. A crash in between leaves a
// pack without an index, which no reader sees and GC removes. The index is
// written and synced under a temporary name while the pack is written
// (where the storage stages files, stage.Stager), and put at its name once
// the pack is durable.
func (w *packWriter) flush(ctx context.Context, s *Store) error {
	if len(w.entries) == 0 {
		return nil
	}
	id := s.packID()
	for i := range w.entries {
		w.entries[i].packID = id
	}
	idx := encodeIndex(int64(len(w.buf)), w.entries, w.cold)
	var perr error
	var wg sync.WaitGroup
	wg.Go(func() { perr = s.putPack(ctx, s.packName(id), w.buf) })
	index, err := stage.Stage(ctx, s.st, s.indexName(id), idx)
	wg.Wait()
	if err = cmp.Or(perr, err); err == nil {
		err = index.Commit(ctx)
	}
	if err != nil {
		if index != nil {
			index.Abort()
		}
		return err
	}
	s.cfg.log.Debug("cas: wrote pack", "id", id, "blobs", len(w.entries), "bytes", len(w.buf))
	s.idx.add(&packIdx{id: id, size: int64(len(w.buf)), idxSize: int64(len(idx)), entries: w.entries})
	// WriteFile is done with the bytes (the conformance suite checks it).
	w.release(s)
	return nil
}

// putPack writes a pack durably. Where appends are native (a local disk),
// it is written in place, its bytes and its directory entry synced at
// once, with no temporary name and no rename whose directory must be
// synced again before the index: a pack no index names is read by no one,
// and GC removes it (a torn one a crash left with it) once past the grace.
// Elsewhere it is written whole, atomically.
func (s *Store) putPack(ctx context.Context, name string, data []byte) error {
	if !s.st.Capabilities().NativeAppend {
		return s.st.WriteFile(ctx, name, data)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := s.st.OpenWriter(ctx, name, backend.WriterOptions{Exclusive: true, Fresh: true})
	if err != nil {
		return err
	}
	if _, err = w.Write(data); err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if uerr := s.st.Unlink(ctx, name); uerr != nil && !errors.Is(uerr, fs.ErrNotExist) {
			s.cfg.log.Warn("cas: a pack not written is left for GC", "name", name, "err", uerr)
		}
	}
	return err
}

// packBufCap holds a pack of DefaultPackSize and the record that ends it.
const packBufCap = DefaultPackSize + DefaultPackThreshold + blockBufSize

// room readies w.buf for n more bytes (and the pack's magic): where it
// would grow, a buffer of packBufCap from the free list, or a new one once
// the pack is past packBufAt (release keeps it). A snapshot writes a pack
// per 3 MiB of files (see checkpoint's rotatingBatch), each of which grew
// its buffer from nothing, copying what it held at every doubling.
func (w *packWriter) room(s *Store, n int) {
	need := len(w.buf) + len(packMagic) + n
	if need <= cap(w.buf) || need > packBufCap {
		return // or append grows it
	}
	nb, ok := s.coders.packs.get()
	if !ok && need <= packBufAt {
		return
	}
	if !ok {
		nb = make([]byte, 0, packBufCap)
	}
	w.buf = append(nb, w.buf...)
}

// packBufAt is the size past which a pack takes a buffer of packBufCap
// even when none is free: most batches of a snapshot after a few edits
// stay below.
const packBufAt = 256 << 10

// release gives w's buffer to the free list and empties w.
func (w *packWriter) release(s *Store) {
	if cap(w.buf) == packBufCap {
		s.coders.packs.put(w.buf[:0])
	}
	w.buf, w.entries = nil, nil
}

// packDirFill is how many packs packID puts in one directory.
const packDirFill = 64

// packID names a new pack, in the directory of packs the index knows
// while it holds fewer than packDirFill: a new directory costs a mkdir and
// an fsync of its parent on the path a snapshot waits for. A directory
// removed since is made again.
func (s *Store) packID() string {
	id := newID()
	n := map[string]int{}
	for _, p := range s.idx.snapshot() {
		if validID(p.id) {
			n[p.id[:2]]++
		}
	}
	for dir, k := range n {
		if k < packDirFill {
			return dir + id[2:]
		}
	}
	// Every directory is full: a new one (a random name could be a full
	// one's, once in 256; with all 256 full, any is).
	for try := 0; n[id[:2]] > 0 && try < 64; try++ {
		id = newID()
	}
	return id
}

// NewBatch starts a batch. It does no I/O.
func (s *Store) NewBatch() *Batch {
	b := &Batch{s: s, pending: map[Ref]bool{}, gen: s.idx.begun.Load()}
	b.encoded.L = &b.mu
	return b
}

// Warm readies a zstd encoder in the background, once per Store: its first
// frame allocates its tables (a millisecond or more, mostly page faults),
// and a batch's last block is compressed in Flush, where its caller waits.
// A caller about to do other work before it puts small blobs (a snapshot's
// trees come after its walk) calls it first; a Store's first block does.
func (s *Store) Warm() { s.warmed.Do(func() { go s.warmEncoder() }) }

// warmEncoder readies an encoder of each kind for the free lists: blocks
// take fast ones, big blobs the others. A failure is left to the put that
// needs one. The fast one compresses text like a block's, which touches
// every page of its 256 KiB match table: a first block read each page
// before writing it, so each was faulted in twice, the second time with
// a TLB flush of every core the process ran on (an interrupt to each,
// slow under a hypervisor): 1-1.5 ms of the flush a snapshot waits for.
func (s *Store) warmEncoder() {
	for _, fast := range []bool{true, false} {
		enc, err := s.getEncoderFor(fast)
		if err != nil {
			return
		}
		if fast {
			enc.EncodeAll(warmText(), nil)
		} else {
			enc.EncodeAll([]byte("warm"), nil)
		}
		s.putEncoderFor(enc, fast)
	}
}

// warmText returns 16 KiB of text with the repeats and the variety of
// source code: its matches write the fast encoder's table all over.
func warmText() []byte {
	b := make([]byte, 0, 17<<10)
	for i := uint64(1); len(b) < 16<<10; i++ {
		b = append(b, "func f"...)
		b = strconv.AppendUint(b, i, 10)
		b = append(b, "(x int) int { return x*"...)
		b = strconv.AppendUint(b, i*2654435761>>16&0xffff, 10)
		b = append(b, " + "...)
		b = strconv.AppendUint(b, i%97, 10)
		b = append(b, " }\n"...)
	}
	return b
}

// Put adds data to the batch and returns its ref under the store's algorithm.
func (b *Batch) Put(ctx context.Context, data []byte) (Ref, error) {
	s := b.s
	if int64(len(data)) >= s.cfg.packThreshold {
		return s.putBytes(ctx, "put", s.cfg.algo, Ref{}, data)
	}
	ref := Ref{algo: s.cfg.algo, digest: s.cfg.algo.sum(data)}
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

// PutRef adds r's bytes as want, whatever the store's algorithm (a mirror
// copying blobs by ref): when want is present, r is not read; when the bytes
// do not hash to want, nothing is added and the error wraps ErrCorrupt.
func (b *Batch) PutRef(ctx context.Context, want Ref, r io.Reader) error {
	s := b.s
	if err := s.checkRef("put", want); err != nil {
		return err
	}
	if err := want.algo.usable(); err != nil {
		return refErr("put", want, err)
	}
	b.mu.Lock()
	dup := b.pending[want]
	b.mu.Unlock()
	if dup {
		return nil
	}
	if ok, err := s.present(ctx, want); err != nil || ok {
		return refErr("put", want, err)
	}
	head, err := io.ReadAll(io.LimitReader(r, s.cfg.packThreshold))
	if err != nil {
		return refErr("put", want, err)
	}
	if int64(len(head)) >= s.cfg.packThreshold {
		_, err := s.putReader(ctx, "put", want.algo, want, io.MultiReader(bytes.NewReader(head), r))
		return err
	}
	got, err := Sum(want.algo, head)
	if err != nil {
		return refErr("put", want, err)
	}
	if got != want {
		return refErr("put", want, fmt.Errorf("%w: content hashes to %v", ErrCorrupt, got))
	}
	return b.add(ctx, want, head)
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
		// One refresh per batch, or none when one begun since the batch
		// was made has loaded the index; after it, dedup asks the cache
		// and the loose object only, not the index directory for every
		// blob.
		if err := s.refreshSince(ctx, b.gen); err != nil {
			return refErr("put", ref, err)
		}
		b.mu.Lock()
		b.indexed = true
		b.mu.Unlock()
	}
	if ok, err := s.present(ctx, ref); err != nil || ok {
		return refErr("put", ref, err)
	}
	if len(data) < solidMax && looksCompressible(data) {
		return refErr("put", ref, b.addSmall(ctx, ref, data))
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
	if err := b.roomFor(ctx, len(rec)); err != nil {
		return refErr("put", ref, err)
	}
	b.pack.add(b.s, ref, rec, codec, int64(len(data)))
	b.pending[ref] = true
	return nil
}

// addSmall adds a small blob to the block being gathered, and when that is
// full compresses it (outside the lock: puts of other workers go on) into
// a record of the pack.
func (b *Batch) addSmall(ctx context.Context, ref Ref, data []byte) error {
	b.mu.Lock()
	if b.err != nil || b.pending[ref] {
		err := b.err
		b.mu.Unlock()
		return err
	}
	b.pending[ref] = true
	b.s.Warm()
	if b.block.buf == nil {
		b.block.buf = b.s.getBlockBuf()
	}
	b.block.refs = append(b.block.refs, ref)
	b.block.sizes = append(b.block.sizes, int64(len(data)))
	b.block.buf = append(b.block.buf, data...)
	if len(b.block.buf) < solidBlock {
		b.mu.Unlock()
		return nil
	}
	full := b.takeBlock()
	b.mu.Unlock()
	return b.encodeAndAdd(ctx, full, true)
}

// encodeAndAdd compresses a full block and adds it to the pack (mu held
// with locked, else taken for the add), then gives its buffers back: the
// pack holds a copy of the record.
func (b *Batch) encodeAndAdd(ctx context.Context, full block, lock bool) error {
	recBuf := b.s.getBlockBuf()
	rec, codec, err := b.s.encodeBlock(full, recBuf)
	if lock {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	err = b.addEncoded(ctx, full, rec, codec, err)
	b.s.putBlockBuf(full.buf)
	b.s.putBlockBuf(recBuf)
	return err
}

// takeBlock hands the gathered blobs to an encoder; mu is held.
func (b *Batch) takeBlock() block {
	full := b.block
	b.block = block{}
	b.encoding++
	return full
}

// encodeBlock compresses a block into one record of a few zstd frames
// (appendFrames); CodecRaw when that does not pay (each blob is then
// stored raw). A block of one blob is that blob's own record. The record
// is appended to dst[:0].
func (s *Store) encodeBlock(bl block, dst []byte) ([]byte, Codec, error) {
	// GC compresses small blobs again when it repacks them.
	const fast = true
	if len(bl.refs) == 1 {
		return s.encodeFor(dst[:0], bl.buf, fast)
	}
	n := len(bl.buf)
	rec := appendHeader(dst[:0], CodecZstd, int64(n))
	rec, err := s.appendFrames(rec, bl.buf, bl.sizes, fast)
	if err != nil || !saves(len(rec)-headerSize, n) {
		return nil, CodecRaw, err
	}
	return rec, CodecZstd, nil
}

// addEncoded adds an encoded block (or its blobs raw) to the pack; mu is
// held.
func (b *Batch) addEncoded(ctx context.Context, bl block, rec []byte, codec Codec, err error) error {
	b.encoding--
	b.encoded.Broadcast()
	if err != nil {
		b.err = err
		return err
	}
	if b.err != nil {
		return b.err
	}
	if len(bl.refs) == 1 {
		if err := b.roomFor(ctx, len(rec)); err != nil {
			return err
		}
		b.pack.add(b.s, bl.refs[0], rec, codec, bl.sizes[0])
		return nil
	}
	if codec != CodecZstd {
		rest := bl.buf
		for i, ref := range bl.refs {
			raw := appendRaw(nil, rest[:bl.sizes[i]])
			rest = rest[bl.sizes[i]:]
			if err := b.roomFor(ctx, len(raw)); err != nil {
				return err
			}
			b.pack.add(b.s, ref, raw, CodecRaw, bl.sizes[i])
		}
		return nil
	}
	if err := b.roomFor(ctx, len(rec)); err != nil {
		return err
	}
	b.pack.addBlock(b.s, bl, rec)
	return nil
}

// roomFor writes the pack when a record of n bytes would overfill it; mu is
// held.
func (b *Batch) roomFor(ctx context.Context, n int) error {
	if len(b.pack.entries) > 0 && b.pack.len()+int64(n) > b.s.cfg.packSize {
		return b.flushLocked(ctx)
	}
	return nil
}

// Flush writes the pack being filled, then its index. When it returns nil,
// every blob put so far is durable and visible to all readers.
func (b *Batch) Flush(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.encoding > 0 {
		b.encoded.Wait()
	}
	if b.err != nil {
		return b.err
	}
	if len(b.block.refs) > 0 {
		if err := b.encodeAndAdd(ctx, b.takeBlock(), false); err != nil {
			return err
		}
	}
	return b.flushLocked(ctx)
}

// flushLocked writes the pack; blobs still gathered for a block stay
// pending.
func (b *Batch) flushLocked(ctx context.Context) error {
	written := b.pack.entries
	if err := b.pack.flush(ctx, b.s); err != nil {
		b.err = err
		return err
	}
	for _, e := range written {
		delete(b.pending, e.ref)
	}
	return nil
}

// Discard drops the blobs not yet flushed; nothing of them was written.
func (b *Batch) Discard() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.encoding > 0 {
		b.encoded.Wait()
	}
	b.pack.release(b.s)
	b.s.putBlockBuf(b.block.buf)
	b.block = block{}
	clear(b.pending)
}

// looksCompressible tells text and the like from random or compressed
// bytes by the byte entropy of a sample, without compressing: only the
// former go into blocks.
func looksCompressible(data []byte) bool {
	sample := data[:min(len(data), 4096)]
	if len(sample) < 64 {
		return true
	}
	var hist [256]int
	for _, c := range sample {
		hist[c]++
	}
	// Entropy in bits per byte, scaled: over 7 is noise to zstd.
	n := float64(len(sample))
	var h float64
	for _, k := range hist {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h < 7
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
