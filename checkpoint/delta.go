package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"

	"github.com/trovekit/trove/checkpoint/internal/wire"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// An edited file usually keeps most of its bytes. Storing it whole would
// cost its full (compressed) size at every checkpoint, so a changed file up
// to deltaMax is stored as a delta against a base: the last version of the
// same path that was stored whole. Chains are one link long (a delta's base
// is always a whole blob), and a manifest entry names both blobs, so GC and
// fsck see every blob a checkpoint needs (Manifest.Refs).
//
// Delta format: deltaMagic, uvarint length of the result, then operations
// until the end: opCopy uvarint offset, uvarint length (bytes of the base);
// opInsert uvarint length, bytes.

const (
	deltaMagic = "trvd1"
	opCopy     = 0
	opInsert   = 1

	// deltaMax bounds the files stored as deltas: base, delta and result are
	// held in memory while one is written or rewound.
	deltaMax = 1 << 20
	// deltaMin: smaller files are stored whole (a delta saves nothing).
	deltaMin = 256
	// deltaBlock is the length of the base blocks a match starts from.
	deltaBlock = 16
)

var errBadDelta = errors.New("bad delta")

// rolling hash of a deltaBlock window (Rabin-Karp, mod 2^64).
const rollMul = 0x100000001b3

var rollOut = func() uint64 { // rollMul^(deltaBlock-1)
	p := uint64(1)
	for range deltaBlock - 1 {
		p *= rollMul
	}
	return p
}()

// rollPow[i] is rollMul^(deltaBlock-1-i).
var rollPow = func() (p [deltaBlock]uint64) {
	m := uint64(1)
	for i := deltaBlock - 1; i >= 0; i-- {
		p[i] = m
		m *= rollMul
	}
	return p
}()

// hashBlock is the rolling hash of b's first deltaBlock bytes: the same
// sum as rolling it in byte by byte, with products that do not wait for
// each other (a chain of 16 multiplications was 40% of a delta's time).
func hashBlock(b []byte) uint64 {
	b = b[:deltaBlock]
	var h0, h1 uint64
	for i := 0; i < deltaBlock; i += 2 {
		h0 += uint64(b[i]) * rollPow[i]
		h1 += uint64(b[i+1]) * rollPow[i+1]
	}
	return h0 + h1
}

// commonPrefix returns how many bytes a and b start with alike, eight
// at a time.
func commonPrefix(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 && len(b)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// encodeDelta returns a delta that turns base into target.
func encodeDelta(base, target []byte) []byte { return new(slotPool).encodeDelta(base, target) }

// slotPool keeps the tables of finished block indexes (*[]blockSlot) for
// the next: a table takes 16 bytes per 8 bytes of base, and a trove
// process collects no garbage while its heap is small (cmd/trove), so each
// new one was fresh memory faulted in page by page, nearly half the page
// faults of a snapshot after ten edits. Clearing a reused one costs less.
type slotPool struct{ p sync.Pool }

// encodeDelta returns a delta that turns base into target.
func (sp *slotPool) encodeDelta(base, target []byte) []byte {
	out := append(make([]byte, 0, 64+len(target)/16), deltaMagic...)
	out = binary.AppendUvarint(out, uint64(len(target)))
	// Index the base by non-overlapping blocks; the first offset wins.
	idx := sp.index(len(base) / deltaBlock)
	defer sp.release(idx)
	for i := 0; i+deltaBlock <= len(base); i += deltaBlock {
		idx.add(hashBlock(base[i:]), int32(i))
	}
	pending := 0 // start of target bytes not yet emitted
	flush := func(end int) {
		if end > pending {
			out = append(out, opInsert)
			out = binary.AppendUvarint(out, uint64(end-pending))
			out = append(out, target[pending:end]...)
		}
	}
	j := 0
	var h uint64
	if len(target) >= deltaBlock {
		h = hashBlock(target)
	}
	for j+deltaBlock <= len(target) {
		if off, ok := idx.get(h); ok && string(base[off:int(off)+deltaBlock]) == string(target[j:j+deltaBlock]) {
			bs, ts := int(off), j
			// Extend backwards over bytes not yet emitted, then forwards.
			for bs > 0 && ts > pending && base[bs-1] == target[ts-1] {
				bs--
				ts--
			}
			n := j + deltaBlock - ts
			n += commonPrefix(base[bs+n:], target[ts+n:])
			flush(ts)
			out = append(out, opCopy)
			out = binary.AppendUvarint(out, uint64(bs))
			out = binary.AppendUvarint(out, uint64(n))
			j = ts + n
			pending = j
			if j+deltaBlock <= len(target) {
				h = hashBlock(target[j:])
			}
			continue
		}
		if j+deltaBlock < len(target) {
			h = (h-uint64(target[j])*rollOut)*rollMul + uint64(target[j+deltaBlock])
		}
		j++
	}
	flush(len(target))
	return out
}

// blockIndex maps block hashes to base offsets: open addressing in one
// slice, several times faster than a map for the lookup at every byte of
// the unmatched parts of a target.
type blockIndex struct {
	slots []blockSlot
	mask  uint64
	shift uint // slot = h*fib >> shift: the rolling hash's low bits mix poorly
}

const fib = 0x9e3779b97f4a7c15

type blockSlot struct {
	h   uint64
	off int32 // +1: 0 is an empty slot
}

// index returns an empty index for n blocks, its table from the pool when
// one there is large enough.
func (sp *slotPool) index(n int) blockIndex {
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	x := blockIndex{mask: 1<<bits - 1, shift: 64 - bits}
	if t, ok := sp.p.Get().(*[]blockSlot); ok && cap(*t) >= 1<<bits {
		x.slots = (*t)[:1<<bits]
		clear(x.slots)
	} else {
		// Fresh memory reads as zeros, but read first it is mapped to
		// the zero page and written after, faulted again with a TLB
		// flush of every core running the process (an interrupt to
		// each, slow under a hypervisor): add reads each slot before it
		// writes. Written first, each page faults once.
		x.slots = make([]blockSlot, 1<<bits)
		clear(x.slots)
	}
	return x
}

// release gives x's table back; x is not used after.
func (sp *slotPool) release(x blockIndex) {
	t := x.slots
	sp.p.Put(&t)
}

// add records off for h unless h has an offset already.
func (x blockIndex) add(h uint64, off int32) {
	for i := h * fib >> x.shift; ; i = (i + 1) & x.mask {
		switch s := &x.slots[i]; {
		case s.off == 0:
			*s = blockSlot{h: h, off: off + 1}
			return
		case s.h == h:
			return
		}
	}
}

func (x blockIndex) get(h uint64) (int32, bool) {
	for i := h * fib >> x.shift; ; i = (i + 1) & x.mask {
		switch s := x.slots[i]; {
		case s.off == 0:
			return 0, false
		case s.h == h:
			return s.off - 1, true
		}
	}
}

// applyDelta rebuilds a target from base and delta. It never reads outside
// base nor makes the result longer than declared, and at most limit bytes:
// a damaged or hostile delta is an error, not a large allocation. The
// caller verifies the result against its digest.
func applyDelta(base, delta []byte, limit int64) ([]byte, error) {
	if len(delta) < len(deltaMagic) || string(delta[:len(deltaMagic)]) != deltaMagic {
		return nil, fmt.Errorf("%w: no header", errBadDelta)
	}
	r := &wire.Reader{B: delta[len(deltaMagic):]}
	size := r.Uvarint()
	if r.Err != nil || size > uint64(limit) {
		return nil, fmt.Errorf("%w: declared length %d", errBadDelta, size)
	}
	out := make([]byte, 0, size)
	for len(r.B) > 0 {
		op := r.B[0]
		r.B = r.B[1:]
		switch op {
		case opCopy:
			off, n := r.Uvarint(), r.Uvarint()
			if r.Err != nil || off > uint64(len(base)) || n > uint64(len(base))-off || n > size-uint64(len(out)) {
				return nil, fmt.Errorf("%w: copy out of range", errBadDelta)
			}
			out = append(out, base[off:off+n]...)
		case opInsert:
			n := r.Uvarint()
			if r.Err != nil || n > uint64(len(r.B)) || n > size-uint64(len(out)) {
				return nil, fmt.Errorf("%w: insert out of range", errBadDelta)
			}
			out = append(out, r.B[:n]...)
			r.B = r.B[n:]
		default:
			return nil, fmt.Errorf("%w: unknown operation %d", errBadDelta, op)
		}
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("%w: %d bytes, declared %d", errBadDelta, len(out), size)
	}
	return out, nil
}

// content returns the bytes of a file entry's content (digest, stored
// whole or as delta against base), verified against digest.
func (m *Manager) content(ctx context.Context, digest, base, delta string) ([]byte, error) {
	if delta == "" {
		return m.blobs.get(ctx, digest)
	}
	b, err := m.blobs.get(ctx, base)
	if err != nil {
		return nil, err
	}
	d, err := m.blobs.get(ctx, delta)
	if err != nil {
		return nil, err
	}
	out, err := applyDelta(b, d, deltaMax)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, delta, err)
	}
	if got, err := m.blobs.sumLike(digest, out); err != nil || got != digest {
		return nil, fmt.Errorf("%w: delta %s of %s gives %s, want %s", ErrCorrupt, delta, base, got, digest)
	}
	return out, nil
}

// openContent streams a file entry's content: a whole blob from the store,
// verified as it is read; a delta's result (at most deltaMax) from memory,
// verified before.
func (m *Manager) openContent(ctx context.Context, digest, base, delta string) (io.ReadCloser, error) {
	if delta == "" {
		return m.blobs.open(ctx, digest)
	}
	data, err := m.content(ctx, digest, base, delta)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// putContent stores a changed file's bytes through batch and fills in e's
// digest: as a delta against the last version stored whole when prev (the
// stat cache's entry for the path) has one and the delta is small, else
// whole. A base that cannot be read only costs the saving.
func (m *Manager) putContent(ctx context.Context, batch blobBatch, e *Entry, data []byte, prev *statcache.Refs) error {
	e.Size, e.Base, e.Delta = int64(len(data)), "", ""
	if prev != nil && len(data) >= deltaMin && len(data) <= deltaMax {
		digest, err := m.blobs.sumLike("", data)
		if err != nil {
			return err
		}
		if digest == prev.Ref {
			// Unchanged content (a touch): stored already, if its blobs
			// still are.
			refs := (&Entry{Exists: true, Digest: prev.Ref, Base: prev.Base, Delta: prev.Delta}).ContentRefs()
			if ok, err := m.allStored(ctx, refs, map[string]bool{}); err != nil || ok {
				e.Digest, e.Base, e.Delta = prev.Ref, prev.Base, prev.Delta
				return err
			}
		}
		base := prev.Ref
		if prev.Delta != "" {
			base = prev.Base
		}
		if digest == base {
			// Back to the whole version (a rewind): stored whole as it
			// was, so the entry, and its tree, are the same as before.
			ref, err := batch.put(ctx, data)
			e.Digest = ref
			return err
		}
		if sameAlgo(base, digest) {
			if b, err := m.blobs.get(ctx, base); err == nil && len(b) <= deltaMax {
				if d := m.slots.encodeDelta(b, data); len(d) < len(data)/2 {
					ref, err := batch.put(ctx, d)
					if err != nil {
						return err
					}
					e.Digest, e.Base, e.Delta = digest, base, ref
					return nil
				}
			}
		}
	}
	ref, err := batch.put(ctx, data)
	if err != nil {
		return err
	}
	e.Digest = ref
	return nil
}
