package retry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"syscall"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/retry"
)

// flaky fails the first fails calls of op with err.
type flaky struct {
	backend.Storage
	op    string
	fails int
	err   error
	calls int
	// midway fails a List after its first entry
	midway error
}

func (f *flaky) hit(op string) error {
	if op != f.op {
		return nil
	}
	f.calls++
	if f.calls <= f.fails {
		return f.err
	}
	return nil
}

func (f *flaky) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := f.hit("ReadFile"); err != nil {
		return nil, err
	}
	return f.Storage.ReadFile(ctx, name)
}

func (f *flaky) Rename(ctx context.Context, from, to string) error {
	if err := f.hit("Rename"); err != nil {
		return err
	}
	return f.Storage.Rename(ctx, from, to)
}

func (f *flaky) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	if err := f.hit("WriteFrom"); err != nil {
		io.CopyN(io.Discard, r, 2) // fails mid-stream
		return 0, err
	}
	return f.Storage.WriteFrom(ctx, name, r)
}

// List fails before its first entry, or with midway after it.
func (f *flaky) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		if err := f.hit("List"); err != nil {
			yield(backend.Info{}, err)
			return
		}
		for info, err := range f.Storage.List(ctx, dir) {
			if !yield(info, err) {
				return
			}
			if f.midway != nil {
				f.calls++
				yield(backend.Info{}, f.midway)
				return
			}
		}
	}
}

func (f *flaky) Stat(ctx context.Context, name string) (backend.Info, error) {
	if f.op == "Stat" {
		f.calls++
		<-ctx.Done() // never answers
		return backend.Info{}, ctx.Err()
	}
	return f.Storage.Stat(ctx, name)
}

// New repeats a call that is safe to repeat when it failed transiently,
// rewinds a seekable source, never repeats a rename, and bounds each
// attempt with its own deadline.
func TestRetry(t *testing.T) {
	ctx := t.Context()
	opts := retry.Options{Attempts: 3, Backoff: time.Microsecond, Timeout: 20 * time.Millisecond}
	newFlaky := func(op string, fails int, err error) (*flaky, backend.Storage) {
		f := &flaky{Storage: mem.New(), op: op, fails: fails, err: err}
		f.Storage.WriteFile(ctx, "f", []byte("data"))
		return f, retry.New(f, opts)
	}
	f, s := newFlaky("ReadFile", 2, syscall.ECONNRESET)
	if data, err := s.ReadFile(ctx, "f"); err != nil || string(data) != "data" || f.calls != 3 {
		t.Fatalf("ReadFile after two resets = %q, %v after %d calls", data, err, f.calls)
	}
	f, s = newFlaky("ReadFile", 5, syscall.ECONNRESET)
	if _, err := s.ReadFile(ctx, "f"); !errors.Is(err, syscall.ECONNRESET) || f.calls != 3 {
		t.Fatalf("ReadFile that keeps failing = %v after %d calls, want 3", err, f.calls)
	}
	f, s = newFlaky("ReadFile", 5, fs.ErrPermission)
	if _, err := s.ReadFile(ctx, "f"); !errors.Is(err, fs.ErrPermission) || f.calls != 1 {
		t.Fatalf("a lasting failure was tried %d times (%v)", f.calls, err)
	}
	f, s = newFlaky("Rename", 1, syscall.ECONNRESET)
	if err := s.Rename(ctx, "f", "g"); !errors.Is(err, syscall.ECONNRESET) || f.calls != 1 {
		t.Fatalf("Rename was tried %d times (%v)", f.calls, err)
	}
	f, s = newFlaky("WriteFrom", 1, syscall.ECONNRESET)
	if _, err := s.WriteFrom(ctx, "g", bytes.NewReader([]byte("whole"))); err != nil || f.calls != 2 {
		t.Fatalf("WriteFrom = %v after %d calls", err, f.calls)
	}
	if data, _ := f.Storage.ReadFile(ctx, "g"); string(data) != "whole" {
		t.Fatalf("a retried WriteFrom wrote %q", data)
	}
	list := func(s backend.Storage) (n int, err error) {
		for _, err := range s.List(ctx, ".") {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	f, s = newFlaky("List", 1, syscall.ECONNRESET)
	if n, err := list(s); n != 1 || err != nil || f.calls != 2 {
		t.Fatalf("List after a reset = %d entries, %v after %d calls", n, err, f.calls)
	}
	f, s = newFlaky("List", 0, nil)
	f.midway = syscall.ECONNRESET
	if n, err := list(s); n != 1 || !errors.Is(err, syscall.ECONNRESET) || f.calls != 2 { // one List, one midway failure
		t.Fatalf("List failing midway = %d entries, %v after %d calls; want no second try", n, err, f.calls)
	}
	f, s = newFlaky("Stat", 0, nil)
	if _, err := s.Stat(ctx, "f"); !errors.Is(err, retry.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || f.calls != 3 {
		t.Fatalf("Stat that never answers = %v after %d calls", err, f.calls)
	}
}
