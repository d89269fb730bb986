package cas

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// GC rewrites the packs batches wrote (hot packs) into cold packs, as git gc
// repacks loose objects and small packs: the small blobs of the packs it
// rewrites are sorted by content, so that versions of one tree object or
// file (which begin alike) sit side by side, and go into block records
// 4x a batch's size compressed at zstd's best level, where the repeats
// between versions cost next to nothing. A cold pack's index is version
// 3; GC leaves a cold pack alone until it turns sparse, except that small
// ones are merged.

const (
	// coldBlock is the original bytes at which a repack closes a block
	// record. Reading a blob decodes its block: ~0.15 ms at 256 KiB
	// against ~0.04 at a batch's 64 KiB, for 10% less stored.
	coldBlock = 256 << 10
	// repackChunk bounds the small blobs a repack holds in memory to sort.
	repackChunk = 64 << 20
	// similarPrefix is the leading bytes a blob that looks incompressible
	// alone (a tree object of many digests) must share with a neighbour
	// in sort order to join a block: the next version of itself.
	similarPrefix = 16
)

// repackSrc is a pack GC rewrites.
type repackSrc struct {
	x       indexObj
	keepAll bool // young: keep its unreferenced blobs too
	dead    bool // holds blobs to drop
}

// smallBlob is a verified blob waiting to be sorted into a block.
type smallBlob struct {
	ref  Ref
	data []byte
}

// repacker writes the blobs of the packs a GC rewrites into cold packs.
type repacker struct {
	s      *Store
	enc    *zstd.Encoder
	w      packWriter
	small  []smallBlob
	held   int // bytes in small
	copied map[Ref]bool
}

// repack copies the kept blobs of srcs into cold packs, verifying each on
// the way, and removes the old packs only once every new pack and its
// index are durable. A crash in between leaves blobs in both, which is
// harmless: the next GC rewrites the old packs again.
func (s *Store) repack(ctx context.Context, srcs []repackSrc, live map[Ref]struct{}, dryRun bool, rep *GCReport) error {
	for _, src := range srcs {
		rep.Repacked++
		rep.Removed = append(rep.Removed, s.packName(src.x.id))
	}
	if dryRun {
		return nil
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedBestCompression),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow),
		zstd.WithEncoderCRC(false))
	if err != nil {
		return err
	}
	defer enc.Close()
	r := &repacker{s: s, enc: enc, w: packWriter{cold: true}, copied: map[Ref]bool{}}
	damaged := map[string]bool{}
	for _, src := range srcs {
		keep := func(e entry) bool {
			_, ok := live[e.ref]
			return ok || src.keepAll
		}
		bad, err := r.copyPack(ctx, src.x, keep)
		if err != nil {
			return err
		}
		damaged[src.x.id] = bad
		if r.held >= repackChunk {
			if err := r.writeSmall(ctx); err != nil {
				return err
			}
		}
	}
	if err := r.writeSmall(ctx); err != nil {
		return err
	}
	if err := r.w.flush(ctx, s); err != nil {
		return err
	}
	for _, src := range srcs {
		if damaged[src.x.id] {
			// Copying a corrupt blob would spread the damage; the pack
			// stays for forensics and Verify names it.
			if src.dead {
				if err := s.dropDead(ctx, src.x.id, live); err != nil {
					return err
				}
			}
			continue
		}
		if err := s.removePack(ctx, src.x.id); err != nil {
			return err
		}
	}
	return nil
}

// copyPack verifies the blobs of x that keep accepts and takes them: small
// ones to be sorted, others as their records. It reports whether one was
// corrupt.
func (r *repacker) copyPack(ctx context.Context, x indexObj, keep func(entry) bool) (damaged bool, err error) {
	s := r.s
	var blockOff int64 = -1
	var block []byte
	for _, e := range x.entries {
		if !keep(e) || r.copied[e.ref] {
			continue
		}
		var data, rec []byte
		var err error
		switch {
		case e.codec == codecSolid:
			if e.off != blockOff {
				// The blobs of a block come one after another: it is
				// decoded once.
				blockOff, block = -1, nil
				if rec, err = s.readRecord(ctx, e); err == nil {
					if block, err = s.decodeBlock(rec); err == nil {
						blockOff = e.off
					}
				}
			}
			if err == nil {
				var obj object
				if obj, err = blockObject(block, e); err == nil {
					data, err = s.readAll("gc", e.ref, obj)
				}
			}
		default:
			if rec, err = s.readRecord(ctx, e); err == nil {
				var obj object
				if obj, err = packedObject(io.NopCloser(bytes.NewReader(rec)), e); err == nil {
					if small(e) {
						data, err = s.readAll("gc", e.ref, obj)
					} else {
						err = s.drain("gc", e.ref, obj)
					}
				}
			}
		}
		if isBad(err) {
			s.cfg.log.Error("cas: gc: live blob is corrupt, pack kept", "ref", e.ref, "err", err)
			damaged = true
			continue
		}
		if err != nil {
			return damaged, err
		}
		r.copied[e.ref] = true
		if !small(e) {
			// Big enough to compress well alone: the record as it is.
			if err := r.room(ctx, len(rec)); err != nil {
				return damaged, err
			}
			r.w.add(e.ref, rec, e.codec, e.size)
			continue
		}
		r.small = append(r.small, smallBlob{e.ref, data})
		r.held += len(data)
	}
	return damaged, nil
}

// small reports whether a blob is sorted into a block by a repack.
func small(e entry) bool { return e.codec == codecSolid || e.size < solidMax }

// room writes the pack when a record of n bytes would overfill it.
func (r *repacker) room(ctx context.Context, n int) error {
	if len(r.w.entries) > 0 && r.w.len()+int64(n) > r.s.cfg.packSize {
		return r.w.flush(ctx, r.s)
	}
	return nil
}

// writeSmall sorts the small blobs held by content and writes them in
// blocks of about coldBlock.
func (r *repacker) writeSmall(ctx context.Context) error {
	blobs := r.small
	r.small, r.held = nil, 0
	slices.SortFunc(blobs, func(a, b smallBlob) int { return bytes.Compare(a.data, b.data) })
	var bl block
	for i, b := range blobs {
		if !blockable(blobs, i) {
			if err := r.addAlone(ctx, b.ref, b.data); err != nil {
				return err
			}
			continue
		}
		bl.refs = append(bl.refs, b.ref)
		bl.sizes = append(bl.sizes, int64(len(b.data)))
		bl.buf = append(bl.buf, b.data...)
		if len(bl.buf) >= coldBlock {
			if err := r.addBlock(ctx, bl); err != nil {
				return err
			}
			bl = block{}
		}
	}
	return r.addBlock(ctx, bl)
}

// blockable reports whether small[i] goes into a block: when it looks
// compressible or shares its start with a neighbour.
func blockable(small []smallBlob, i int) bool {
	if looksCompressible(small[i].data) {
		return true
	}
	similar := func(a, b []byte) bool {
		n := min(len(a), len(b), similarPrefix)
		return n == similarPrefix && bytes.Equal(a[:n], b[:n])
	}
	return i > 0 && similar(small[i-1].data, small[i].data) ||
		i+1 < len(small) && similar(small[i].data, small[i+1].data)
}

// addBlock compresses a block into one record of the pack, or stores its
// blobs each alone when that does not pay.
func (r *repacker) addBlock(ctx context.Context, bl block) error {
	if len(bl.refs) > 1 {
		rec := appendHeader(make([]byte, 0, headerSize+len(bl.buf)/2), CodecZstd, int64(len(bl.buf)))
		rec = r.enc.EncodeAll(bl.buf, rec)
		if saves(len(rec)-headerSize, len(bl.buf)) {
			if err := r.room(ctx, len(rec)); err != nil {
				return err
			}
			r.w.addBlock(bl, rec)
			return nil
		}
	}
	rest := bl.buf
	for i, ref := range bl.refs {
		if err := r.addAlone(ctx, ref, rest[:bl.sizes[i]]); err != nil {
			return err
		}
		rest = rest[bl.sizes[i]:]
	}
	return nil
}

// addAlone stores one blob as a record of its own.
func (r *repacker) addAlone(ctx context.Context, ref Ref, data []byte) error {
	rec, codec, err := r.s.encode(nil, data)
	if err != nil {
		return fmt.Errorf("%v: %w", ref, err)
	}
	if err := r.room(ctx, len(rec)); err != nil {
		return err
	}
	r.w.add(ref, rec, codec, int64(len(data)))
	return nil
}
