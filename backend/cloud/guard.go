package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/trovekit/trove/backend/retry"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ErrTimeout is the error of a bucket call that got no answer within the
// per-call timeout (WithTimeout): retry.ErrTimeout, which wraps
// context.DeadlineExceeded.
var ErrTimeout = retry.ErrTimeout

// DefaultTimeout bounds each bucket call, and each chunk of a streaming
// read or upload, unless WithTimeout says otherwise.
const DefaultTimeout = 30 * time.Second

// bucket is what Storage asks of a blob.Bucket: few enough methods that
// one decorator (guard) puts a deadline and retries on all of them.
type bucket interface {
	Attributes(ctx context.Context, key string) (*blob.Attributes, error)
	NewRangeReader(ctx context.Context, key string, off, n int64, opts *blob.ReaderOptions) (objReader, error)
	Upload(ctx context.Context, key string, r io.Reader, opts *blob.WriterOptions) error
	Delete(ctx context.Context, key string) error
	// Remove is Delete where it need not say that key was missing: through
	// WithDelete's function when there is one.
	Remove(ctx context.Context, key string) error
	ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) ([]*blob.ListObject, []byte, error)
	Close() error
}

// objReader is an open range read.
type objReader interface {
	io.ReadCloser
	Size() int64
	ModTime() time.Time
	ContentType() string
}

// plain adapts a *blob.Bucket to bucket.
type plain struct{ *blob.Bucket }

func (p plain) NewRangeReader(ctx context.Context, key string, off, n int64, opts *blob.ReaderOptions) (objReader, error) {
	r, err := p.Bucket.NewRangeReader(ctx, key, off, n, opts)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return r, nil
}

func (p plain) Remove(ctx context.Context, key string) error { return p.Delete(ctx, key) }

// blindDelete removes through a delete of the provider's that makes one
// request (see WithDelete).
type blindDelete struct {
	bucket
	del func(ctx context.Context, key string) error
}

func (b blindDelete) Remove(ctx context.Context, key string) error { return b.del(ctx, key) }

// guard gives every call of b a deadline (per chunk for streams) and
// retries calls that failed transiently, when they are safe to repeat.
type guard struct {
	b       bucket
	timeout time.Duration // 0: none
	tries   int           // attempts per call, at least 1
	backoff time.Duration // first wait between attempts; it doubles
	status  func(error) int
}

// call runs f with a per-attempt deadline, retrying transient failures.
func (g *guard) call(ctx context.Context, retry bool, f func(ctx context.Context) error) error {
	return g.attempts(ctx, retry, func(ctx context.Context) error { return g.once(ctx, f) })
}

// attempts runs f until it succeeds, fails for good or runs out of tries.
func (g *guard) attempts(ctx context.Context, retry bool, f func(ctx context.Context) error) error {
	for try := 1; ; try++ {
		err := f(ctx)
		if err == nil || !retry || try >= g.tries || ctx.Err() != nil || !transient(err, g.status) {
			return err
		}
		if werr := g.wait(ctx, try); werr != nil {
			return err
		}
	}
}

func (g *guard) once(ctx context.Context, f func(ctx context.Context) error) error {
	if g.timeout <= 0 {
		return f(ctx)
	}
	cctx, cancel := context.WithTimeoutCause(ctx, g.timeout, ErrTimeout)
	defer cancel()
	return timedOut(ctx, cctx, f(cctx))
}

// timedOut makes err say ErrTimeout when the per-call deadline (and not
// the caller's context) ended the call.
func timedOut(parent, cctx context.Context, err error) error {
	if err != nil && parent.Err() == nil && errors.Is(context.Cause(cctx), ErrTimeout) && !errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// wait sleeps before attempt try+1 (retry.Backoff).
func (g *guard) wait(ctx context.Context, try int) error { return retry.Backoff(ctx, try, g.backoff) }

// transient reports an error worth another attempt: retry.Transient's,
// and the driver codes for throttling and server errors.
func transient(err error, status func(error) int) bool {
	if retry.Transient(err, status) {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.Internal:
		return !errors.Is(err, context.Canceled)
	}
	return false
}

// httpStatus is the HTTP status a driver error carries, 0 if none.
func httpStatus(err error, status func(error) int) int { return retry.HTTPStatus(err, status) }

func (g *guard) Attributes(ctx context.Context, key string) (a *blob.Attributes, err error) {
	err = g.call(ctx, true, func(ctx context.Context) error {
		a, err = g.b.Attributes(ctx, key)
		return err
	})
	return a, err
}

func (g *guard) Delete(ctx context.Context, key string) error {
	return g.call(ctx, true, func(ctx context.Context) error { return g.b.Delete(ctx, key) })
}

func (g *guard) Remove(ctx context.Context, key string) error {
	return g.call(ctx, true, func(ctx context.Context) error { return g.b.Remove(ctx, key) })
}

func (g *guard) ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) (page []*blob.ListObject, next []byte, err error) {
	err = g.call(ctx, true, func(ctx context.Context) error {
		page, next, err = g.b.ListPage(ctx, token, size, opts)
		return err
	})
	return page, next, err
}

func (g *guard) Close() error { return g.b.Close() }

// NewRangeReader retries the opening; the stream then has a deadline per
// Read (none between Reads, so a slow consumer is not cut off).
func (g *guard) NewRangeReader(ctx context.Context, key string, off, n int64, opts *blob.ReaderOptions) (objReader, error) {
	var out objReader
	err := g.attempts(ctx, true, func(ctx context.Context) error {
		if g.timeout <= 0 {
			r, err := g.b.NewRangeReader(ctx, key, off, n, opts)
			out = r
			return err
		}
		// The reader outlives this attempt, so its context is its own.
		sctx, cancel := context.WithCancelCause(ctx)
		t := time.AfterFunc(g.timeout, func() { cancel(ErrTimeout) })
		r, err := g.b.NewRangeReader(sctx, key, off, n, opts)
		t.Stop()
		if err != nil {
			cancel(nil)
			return timedOut(ctx, sctx, err)
		}
		out = &timedReader{r: r, parent: ctx, ctx: sctx, cancel: cancel, t: t, d: g.timeout}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type timedReader struct {
	r      objReader
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	t      *time.Timer
	d      time.Duration
}

func (t *timedReader) Read(p []byte) (int, error) {
	t.t.Reset(t.d)
	n, err := t.r.Read(p)
	t.t.Stop()
	if err != nil && err != io.EOF {
		err = timedOut(t.parent, t.ctx, err)
	}
	return n, err
}

func (t *timedReader) Size() int64         { return t.r.Size() }
func (t *timedReader) ModTime() time.Time  { return t.r.ModTime() }
func (t *timedReader) ContentType() string { return t.r.ContentType() }

func (t *timedReader) Close() error {
	t.t.Stop()
	err := t.r.Close()
	t.cancel(nil)
	return err
}

// rewinder is a source an upload can start again from its beginning.
type rewinder interface {
	rewindable() bool
	rewind() error
}

// Upload has a deadline per chunk: the driver must take the next bytes (or
// finish) within the timeout of taking the last ones. A write-once create
// (IfNotExist) is never repeated: a first attempt that failed late may have
// created the object, and a second would then report a lost race.
func (g *guard) Upload(ctx context.Context, key string, r io.Reader, opts *blob.WriterOptions) error {
	rw, canRewind := r.(rewinder)
	retry := canRewind && rw.rewindable() && (opts == nil || !opts.IfNotExist)
	first := true
	return g.attempts(ctx, retry, func(ctx context.Context) error {
		if !first {
			if err := rw.rewind(); err != nil {
				return err
			}
		}
		first = false
		if g.timeout <= 0 {
			return g.b.Upload(ctx, key, r, opts)
		}
		uctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		t := time.AfterFunc(g.timeout, func() { cancel(ErrTimeout) })
		defer t.Stop()
		err := g.b.Upload(uctx, key, &progressReader{r: r, t: t, d: g.timeout}, opts)
		return timedOut(ctx, uctx, err)
	})
}

// progressReader restarts the upload's deadline each time the driver takes
// bytes; the source's own time is not counted.
type progressReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	p.t.Stop()
	n, err := p.r.Read(b)
	p.t.Reset(p.d)
	return n, err
}
