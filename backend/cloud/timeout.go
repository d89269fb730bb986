package cloud

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
)

// DefaultTimeout bounds each bucket request that moves no data (attributes,
// listings, deletes), and how long an upload may go without progress: an
// endpoint that accepts connections and never answers fails in that time,
// not never.
const DefaultTimeout = 30 * time.Second

// ErrStalled is the cause of a request that made no progress within the
// timeout. It wraps context.DeadlineExceeded.
var ErrStalled = fmt.Errorf("bucket request made no progress: %w", context.DeadlineExceeded)

// WithTimeout sets the per-request timeout (DefaultTimeout when not given;
// 0 for none).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = max(d, 0) } }

// call bounds one request that moves no data.
func (s *Storage) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, s.opts.timeout, ErrStalled)
}

// watchdog cancels a request once it has gone d without progress; every
// kick restarts the wait.
type watchdog struct {
	mu    sync.Mutex
	timer *time.Timer
	d     time.Duration
}

func newWatchdog(d time.Duration, cancel context.CancelCauseFunc) *watchdog {
	if d <= 0 {
		return &watchdog{}
	}
	return &watchdog{d: d, timer: time.AfterFunc(d, func() { cancel(ErrStalled) })}
}

func (w *watchdog) kick() {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	w.timer.Reset(w.d)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// checkBucket fails when the bucket cannot be reached in time or does not
// exist, so a typo in a bucket name is an error at open, not an empty store.
func (s *Storage) checkBucket(ctx context.Context, name string) error {
	cctx, cancel := s.call(ctx)
	defer cancel()
	ok, err := s.b.IsAccessible(cctx)
	if err != nil {
		if cause := context.Cause(cctx); errors.Is(cause, ErrStalled) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return backend.PathErr("open", name, err)
	}
	if !ok {
		return backend.PathErr("open", name, fmt.Errorf("bucket or container does not exist: %w", fs.ErrNotExist))
	}
	return nil
}

// OpenChecked is Open that also checks the bucket exists and answers.
func OpenChecked(ctx context.Context, url string, opts ...Option) (*Storage, error) {
	st, err := Open(ctx, url, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.checkBucket(ctx, url); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// attributes is Bucket.Attributes within the timeout.
func (s *Storage) attributes(ctx context.Context, key string) (*blob.Attributes, error) {
	c, cancel := s.call(ctx)
	defer cancel()
	return s.b.Attributes(c, key)
}

// delete is Bucket.Delete within the timeout.
func (s *Storage) delete(ctx context.Context, key string) error {
	c, cancel := s.call(ctx)
	defer cancel()
	return s.b.Delete(c, key)
}

// watchedReader is a range reader whose request is cancelled once it goes
// the timeout without delivering a byte.
type watchedReader struct {
	*blob.Reader
	wd     *watchdog
	cancel context.CancelCauseFunc
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.Reader.Read(p)
	w.wd.kick()
	return n, err
}

func (w *watchedReader) Close() error {
	w.wd.stop()
	err := w.Reader.Close()
	w.cancel(nil)
	return err
}

// rangeReader opens a range read whose every wait, for the response and
// for each later chunk, is bounded by the timeout.
func (s *Storage) rangeReader(ctx context.Context, key string, offset, length int64) (*watchedReader, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	wd := newWatchdog(s.opts.timeout, cancel)
	rr, err := s.b.NewRangeReader(rctx, key, offset, length, nil)
	if err != nil {
		wd.stop()
		if cause := context.Cause(rctx); errors.Is(cause, ErrStalled) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		cancel(nil)
		return nil, err
	}
	wd.kick()
	return &watchedReader{Reader: rr, wd: wd, cancel: cancel}, nil
}
