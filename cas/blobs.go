package cas

import (
	"context"
	"io"
)

// Blobs is what the layers above keep their blobs in: session images and
// tool outputs, run log outputs, checkpoint file content. *Store implements
// it; the root's one Store is shared by every layer, so content is stored
// once. Refs are Refs, never strings, on this side of the format.
type Blobs interface {
	// Put stores data and returns its ref; the same content gives the
	// same ref, stored once.
	Put(ctx context.Context, data []byte) (Ref, error)
	// PutReader stores a stream of any length.
	PutReader(ctx context.Context, r io.Reader) (Ref, error)
	// Get returns the content of ref, verified against it.
	Get(ctx context.Context, ref Ref) ([]byte, error)
	// Open streams the content of ref; its final Read reports whether
	// the bytes matched the ref.
	Open(ctx context.Context, ref Ref) (io.ReadCloser, error)
	// Has reports whether ref is stored.
	Has(ctx context.Context, ref Ref) (bool, error)
}

var _ Blobs = (*Store)(nil)
