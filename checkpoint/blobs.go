package checkpoint

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// casBlobs is the blobStore of any cas.Blobs. Manifests hold refs as
// their text, so refs cross here. A store that batches small blobs into
// packs (*cas.Store) is used through its batches; any other puts each blob.
type casBlobs struct{ s cas.Blobs }

// batcher is the fast path of a blob store with packs.
type batcher interface{ NewBatch() *cas.Batch }

func (c casBlobs) newBatch() blobBatch {
	if b, ok := c.s.(batcher); ok {
		return &rotatingBatch{s: b, cur: &slot{b: b.NewBatch()}}
	}
	return directBatch(c)
}

// algorithm is the store's algorithm when it says, else SHA-256.
func (c casBlobs) algorithm() cas.Algorithm {
	if a, ok := c.s.(interface{ Algorithm() cas.Algorithm }); ok {
		return a.Algorithm()
	}
	return cas.SHA256
}

// directBatch puts each blob as it comes: durable at once, nothing to flush.
type directBatch struct{ s cas.Blobs }

func (d directBatch) put(ctx context.Context, data []byte) (string, error) {
	r, err := d.s.Put(ctx, data)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func (d directBatch) putReader(ctx context.Context, r io.Reader) (string, int64, error) {
	cr := &countingReader{r: r}
	ref, err := d.s.PutReader(ctx, cr)
	if err != nil {
		return "", 0, err
	}
	return ref.String(), cr.n, nil
}

func (directBatch) flush(context.Context) error { return nil }
func (directBatch) discard()                    {}

func (c casBlobs) get(ctx context.Context, ref string) ([]byte, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return c.s.Get(ctx, r)
}

func (c casBlobs) has(ctx context.Context, ref string) (bool, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return false, err
	}
	return c.s.Has(ctx, r)
}

func (c casBlobs) open(ctx context.Context, ref string) (io.ReadCloser, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return c.s.Open(ctx, r)
}

func (c casBlobs) sumLikeReader(like string, rd io.Reader) (string, error) {
	algo := c.algorithm()
	if r, err := cas.ParseRef(like); err == nil {
		algo = r.Algorithm()
	}
	r, err := cas.SumReader(algo, rd)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return r.String(), nil
}

func (c casBlobs) sumLike(like string, data []byte) (string, error) {
	algo := c.algorithm()
	if like == "" {
		// The store's algorithm: no ref to parse (and no error to build).
	} else if a, _, ok := wire.FastRef(like); ok {
		algo = a
	} else if r, err := cas.ParseRef(like); err == nil {
		algo = r.Algorithm()
	}
	r, err := cas.Sum(algo, data)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return r.String(), nil
}

// rotatingBatch is a cas batch that hands each pack's worth of blobs to a
// background flush and goes on with a fresh batch. A cas.Batch writes a
// full pack (and fsyncs it) while holding its lock, which would stall every
// worker of a first snapshot for each pack.
type rotatingBatch struct {
	s batcher

	mu      sync.Mutex
	cur     *slot
	flushes sync.WaitGroup
	err     error // the first background flush's error
}

// slot is one batch and the puts into it still under way: its flush waits
// for them, or a blob put after the flush would stay pending for ever.
type slot struct {
	b      *cas.Batch
	size   int64 // bytes put into b
	active sync.WaitGroup
}

// rotateAt is the bytes put after which a batch is flushed in the
// background: under cas's default pack size (4 MiB), so a batch rarely
// fills a pack and flushes in the middle of a put.
const rotateAt = 3 << 20

// take returns the slot for a put of n more bytes, rotating the current
// one out when full; the caller calls s.active.Done after its put.
func (r *rotatingBatch) take(ctx context.Context, n int64) (*slot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	if r.cur.size > 0 && r.cur.size+n > rotateAt {
		full := r.cur
		r.cur = &slot{b: r.s.NewBatch()}
		// The put's context may end with the caller's phase (storeFiles
		// cancels its own); the pack is wanted by the final flush.
		fctx := context.WithoutCancel(ctx)
		r.flushes.Go(func() {
			full.active.Wait()
			if err := full.b.Flush(fctx); err != nil {
				r.mu.Lock()
				if r.err == nil {
					r.err = err
				}
				r.mu.Unlock()
			}
		})
	}
	r.cur.size += n
	r.cur.active.Add(1)
	return r.cur, nil
}

func (r *rotatingBatch) put(ctx context.Context, data []byte) (string, error) {
	s, err := r.take(ctx, int64(len(data)))
	if err != nil {
		return "", err
	}
	defer s.active.Done()
	ref, err := s.b.Put(ctx, data)
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}

func (r *rotatingBatch) putReader(ctx context.Context, rd io.Reader) (string, int64, error) {
	s, err := r.take(ctx, 0)
	if err != nil {
		return "", 0, err
	}
	defer s.active.Done()
	cr := &countingReader{r: rd}
	ref, err := s.b.PutReader(ctx, cr)
	if err != nil {
		return "", 0, err
	}
	return ref.String(), cr.n, nil
}

// flush waits for the background flushes and writes the current batch.
// No put may run meanwhile (a rotation then would not be waited for).
func (r *rotatingBatch) flush(ctx context.Context) error {
	r.flushes.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.cur.active.Wait()
	r.cur.size = 0
	return r.cur.b.Flush(ctx)
}

// discard drops what is not written yet; a background flush under way
// finishes (its blobs are orphans GC removes).
func (r *rotatingBatch) discard() {
	r.flushes.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.active.Wait()
	r.cur.b.Discard()
	r.cur.size = 0
}

// countingReader counts what it passes on.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
