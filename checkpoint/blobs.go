package checkpoint

import (
	"context"
	"fmt"

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

func (c casBatch) flush(ctx context.Context) error { return c.b.Flush(ctx) }
func (c casBatch) discard()                        { c.b.Discard() }
