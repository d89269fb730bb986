package cloud

import (
	"context"
	"io"
	"sync/atomic"

	"gocloud.dev/blob"
)

// Traffic counts what a Storage made by NewCounted sends to and reads from
// its bucket, for benchmarks in package cloud_test.
type Traffic struct{ Up, Down, Calls atomic.Int64 }

// NewCounted is New with every bucket call counted in t.
func NewCounted(b *blob.Bucket, t *Traffic, opts ...Option) *Storage {
	return newStorage(counted{bucket: plain{b}, t: t}, opts...)
}

type counted struct {
	bucket
	t *Traffic
}

func (c counted) Attributes(ctx context.Context, key string) (*blob.Attributes, error) {
	c.t.Calls.Add(1)
	return c.bucket.Attributes(ctx, key)
}

func (c counted) Delete(ctx context.Context, key string) error {
	c.t.Calls.Add(1)
	return c.bucket.Delete(ctx, key)
}

func (c counted) Remove(ctx context.Context, key string) error {
	c.t.Calls.Add(1)
	return c.bucket.Remove(ctx, key)
}

func (c counted) ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) ([]*blob.ListObject, []byte, error) {
	c.t.Calls.Add(1)
	return c.bucket.ListPage(ctx, token, size, opts)
}

func (c counted) NewRangeReader(ctx context.Context, key string, off, n int64, opts *blob.ReaderOptions) (objReader, error) {
	c.t.Calls.Add(1)
	r, err := c.bucket.NewRangeReader(ctx, key, off, n, opts)
	if err != nil {
		return nil, err
	}
	return countedReader{r, c.t}, nil
}

func (c counted) Upload(ctx context.Context, key string, r io.Reader, opts *blob.WriterOptions) error {
	c.t.Calls.Add(1)
	return c.bucket.Upload(ctx, key, countingSource{r, c.t}, opts)
}

type countedReader struct {
	objReader
	t *Traffic
}

func (r countedReader) Read(p []byte) (int, error) {
	n, err := r.objReader.Read(p)
	r.t.Down.Add(int64(n))
	return n, err
}

type countingSource struct {
	io.Reader
	t *Traffic
}

func (s countingSource) Read(p []byte) (int, error) {
	n, err := s.Reader.Read(p)
	s.t.Up.Add(int64(n))
	return n, err
}

// WithLocalDir marks the bucket as fileblob's in dir, as OpenFileblob does.
func WithLocalDir(dir string) Option { return func(o *options) { o.localDir = dir } }
