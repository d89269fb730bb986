package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
)

// ErrTimeout is the error of a call that New's per-attempt deadline
// ended. It wraps context.DeadlineExceeded.
var ErrTimeout = fmt.Errorf("backend: call timed out: %w", context.DeadlineExceeded)

// Options tune New.
type Options struct {
	// Attempts is how often a call is tried in all (at least 1).
	Attempts int
	// Backoff is the wait before the second attempt; it doubles after each,
	// with full jitter, up to 5 s.
	Backoff time.Duration
	// Timeout bounds each attempt of a call that completes within the call
	// (0: no bound). Calls that return a stream (Open, OpenRange, OpenInfo,
	// OpenWriter, Lock) and the calls on streams are not bounded: their
	// context lives on in the stream.
	Timeout time.Duration
	// Transient says whether an error is worth another attempt (nil:
	// Transient with no status function).
	Transient func(error) bool
}

// New returns s with the calls that are safe to repeat tried again when
// they fail transiently, written on intercept.New: lookups and reads (a List
// only before it yielded an entry; a stream only at its opening), WriteFile,
// PutFile and EnsureDir (whole and idempotent), and WriteFrom from a
// source that can seek back. Never a write-once create, an append, a rename or an
// unlink, whose second attempt could report the first one's success as a
// failure.
func New(s backend.Storage, o Options) *intercept.Store {
	o.Attempts = max(o.Attempts, 1)
	if o.Transient == nil {
		o.Transient = func(err error) bool { return Transient(err, nil) }
	}
	return intercept.New(s, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		var rewind func() error
		switch c.Op {
		case "Stat", "List", "ReadFile", "ReadPrefix", "WriteFile", "PutFile", "EnsureDir":
		case "Open", "OpenRange", "OpenInfo":
			return retry(ctx, o, 0, next) // the stream keeps the context
		case "WriteFrom":
			sk, ok := c.Src.(io.Seeker)
			if !ok {
				return next(ctx)
			}
			start, err := sk.Seek(0, io.SeekCurrent)
			if err != nil {
				return next(ctx)
			}
			rewind = func() error { _, err := sk.Seek(start, io.SeekStart); return err }
		default:
			return next(ctx)
		}
		first := true
		return retry(ctx, o, o.Timeout, func(ctx context.Context) error {
			if !first && rewind != nil {
				if err := rewind(); err != nil {
					return err
				}
			}
			first = false
			err := next(ctx)
			if err != nil && c.Op == "List" && c.N > 0 {
				err = final{err} // entries went out: it cannot start over
			}
			return err
		})
	})
}

// final marks an error that no further attempt may follow.
type final struct{ error }

func (f final) Unwrap() error { return f.error }

func retry(ctx context.Context, o Options, timeout time.Duration, f func(context.Context) error) error {
	for try := 1; ; try++ {
		err := attempt(ctx, timeout, f)
		var fe final
		if errors.As(err, &fe) {
			return fe.error
		}
		if err == nil || try >= o.Attempts || ctx.Err() != nil || !o.Transient(err) {
			return err
		}
		if Backoff(ctx, try, o.Backoff) != nil {
			return err
		}
	}
}

func attempt(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	if timeout <= 0 {
		return f(ctx)
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrTimeout) && !errors.Is(err, ErrTimeout) {
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// Backoff waits before attempt try+1: base doubled try-1 times, capped at
// 5 s, with full jitter; ctx ending cuts it short with ctx's error.
func Backoff(ctx context.Context, try int, base time.Duration) error {
	d := min(base<<(try-1), 5*time.Second)
	if d <= 0 || base<<(try-1) < 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Transient reports an error worth another attempt: a timed-out call
// (ErrTimeout, a wrapped one too), a dropped or refused connection, a
// stream cut short, or an HTTP answer of 408, 429 or 5xx (but 501), read
// with status when given (0: none) or an HTTPStatusCode method.
func Transient(err error, status func(error) int) bool {
	if err == nil {
		return false
	}
	// ErrTimeout first: a deadline that ends a stream cancels its context
	// by cause, so the driver's error under it says context.Canceled too.
	// Only a per-call deadline adds ErrTimeout (never the caller's cancel).
	if errors.Is(err, ErrTimeout) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// Numbers, not net/http's names: this package links no HTTP.
	switch code := HTTPStatus(err, status); {
	case code == 429, code == 408: // too many requests, request timeout
		return true
	case code >= 500 && code != 501: // but not implemented
		return true
	}
	return false
}

// HTTPStatus is the HTTP status an error carries, 0 if none: status's
// answer when it has one, else an HTTPStatusCode method's (S3's errors).
func HTTPStatus(err error, status func(error) int) int {
	if status != nil {
		if code := status(err); code != 0 {
			return code
		}
	}
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		return hs.HTTPStatusCode()
	}
	return 0
}
