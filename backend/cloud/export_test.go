package cloud

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
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

// WithFoldLag sets how many intervals of WithCompactEvery a Sync runs
// ahead of a background fold before it waits for it.
func WithFoldLag(n int) Option { return func(o *options) { o.foldLag = n } }

// NewShared is New on a bucket that a second Storage also uses: its Close
// leaves b open.
func NewShared(b *blob.Bucket, opts ...Option) *Storage {
	return newStorage(shared{plain{b}}, opts...)
}

type shared struct{ bucket }

func (shared) Close() error { return nil }

// NewTorn is NewShared on a bucket whose listings are no snapshots, as a
// directory read in hash order on fileblob is not: each listing is taken
// twice, between() running in between, and a key that differs between the
// two is kept or left out as a hash of it and the listing's number says.
// So a listing misses some of the objects made while it ran, and still
// holds some of those deleted meanwhile.
func NewTorn(b *blob.Bucket, between func(), opts ...Option) *Storage {
	return newStorage(torn{bucket: shared{plain{b}}, between: between, n: new(atomic.Int64)}, opts...)
}

type torn struct {
	bucket
	between func()
	n       *atomic.Int64
}

func (t torn) ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) ([]*blob.ListObject, []byte, error) {
	first, _, err := t.bucket.ListPage(ctx, token, size, opts)
	if err != nil {
		return nil, nil, err
	}
	t.between()
	second, next, err := t.bucket.ListPage(ctx, token, size, opts)
	if err != nil {
		return nil, nil, err
	}
	seed := t.n.Add(1)
	in := map[string]*blob.ListObject{}
	for _, lo := range first {
		in[lo.Key] = lo
	}
	var out []*blob.ListObject
	keep := func(key string) bool {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s %d", key, seed)
		return h.Sum64()%2 == 0
	}
	for _, lo := range second {
		if _, both := in[lo.Key]; both || keep(lo.Key) {
			out = append(out, lo)
		}
		delete(in, lo.Key)
	}
	for key, lo := range in { // deleted between the two
		if keep(key) {
			out = append(out, lo)
		}
	}
	slices.SortFunc(out, func(a, b *blob.ListObject) int { return strings.Compare(a.Key, b.Key) })
	return out, next, nil
}
