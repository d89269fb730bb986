package checkpoint

import (
	"context"
	"fmt"
	"io"

	"github.com/trovekit/trove/cas"
)

// validRef reports whether s is a well-formed blob ref.
func validRef(s string) bool {
	_, err := cas.ParseRef(s)
	return err == nil
}

// casBlobs is the blobStore of a real cas store.
type casBlobs struct{ s *cas.Store }

func (c casBlobs) newBatch() blobBatch { return casBatch{c.s.NewBatch()} }

func (c casBlobs) get(ctx context.Context, ref string) ([]byte, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return c.s.Get(ctx, r)
}

func (c casBlobs) open(ctx context.Context, ref string) (io.ReadCloser, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return c.s.Open(ctx, r)
}

func (c casBlobs) sumLikeReader(like string, rd io.Reader) (string, error) {
	algo := c.s.Algorithm()
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
	algo := c.s.Algorithm()
	if r, err := cas.ParseRef(like); err == nil {
		algo = r.Algorithm()
	}
	r, err := cas.Sum(algo, data)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return r.String(), nil
}

type casBatch struct{ b *cas.Batch }

func (c casBatch) put(ctx context.Context, data []byte) (string, error) {
	r, err := c.b.Put(ctx, data)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func (c casBatch) putReader(ctx context.Context, r io.Reader) (string, int64, error) {
	cr := &countingReader{r: r}
	ref, err := c.b.PutReader(ctx, cr)
	if err != nil {
		return "", 0, err
	}
	return ref.String(), cr.n, nil
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

func (c casBatch) flush(ctx context.Context) error { return c.b.Flush(ctx) }
func (c casBatch) discard()                        { c.b.Discard() }
