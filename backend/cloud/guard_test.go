package cloud

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
)

// httpErr is a driver error carrying an HTTP status the way S3's do.
type httpErr int

func (e httpErr) Error() string       { return "HTTP " + strconv.Itoa(int(e)) }
func (e httpErr) HTTPStatusCode() int { return int(e) }

// flaky is a memblob bucket whose calls fail as fail says, counting them.
type flaky struct {
	bucket
	mu    sync.Mutex
	calls map[string]int
	fail  func(op string, call int, opts *blob.WriterOptions) error
}

func newFlaky(fail func(op string, call int, opts *blob.WriterOptions) error) *flaky {
	return &flaky{bucket: plain{memblob.OpenBucket(nil)}, calls: map[string]int{}, fail: fail}
}

func (f *flaky) hit(op string, opts *blob.WriterOptions) error {
	f.mu.Lock()
	f.calls[op]++
	n := f.calls[op]
	f.mu.Unlock()
	if f.fail == nil {
		return nil
	}
	return f.fail(op, n, opts)
}

func (f *flaky) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *flaky) Attributes(ctx context.Context, key string) (*blob.Attributes, error) {
	if err := f.hit("attributes", nil); err != nil {
		return nil, err
	}
	return f.bucket.Attributes(ctx, key)
}

func (f *flaky) ListPage(ctx context.Context, token []byte, size int, opts *blob.ListOptions) ([]*blob.ListObject, []byte, error) {
	if err := f.hit("list", nil); err != nil {
		return nil, nil, err
	}
	return f.bucket.ListPage(ctx, token, size, opts)
}

func (f *flaky) NewRangeReader(ctx context.Context, key string, off, n int64, opts *blob.ReaderOptions) (objReader, error) {
	if err := f.hit("read", nil); err != nil {
		return nil, err
	}
	return f.bucket.NewRangeReader(ctx, key, off, n, opts)
}

func (f *flaky) Upload(ctx context.Context, key string, r io.Reader, opts *blob.WriterOptions) error {
	if err := f.hit("upload", opts); err != nil {
		// A failure mid-upload: the source is partly read.
		io.CopyN(io.Discard, r, 3)
		return err
	}
	return f.bucket.Upload(ctx, key, r, opts)
}

// failFirst fails the first n calls of op with err.
func failFirst(op string, n int, err error) func(string, int, *blob.WriterOptions) error {
	return func(o string, call int, _ *blob.WriterOptions) error {
		if o == op && call <= n {
			return err
		}
		return nil
	}
}

func retrying(b bucket, opts ...Option) *Storage {
	return newStorage(b, append([]Option{WithRetry(4, time.Millisecond)}, opts...)...)
}

// A call that fails twice with a 5xx and then succeeds succeeds, in three
// calls.
func TestRetryTransient(t *testing.T) {
	ctx := t.Context()
	for _, op := range []string{"list", "read", "upload"} {
		for _, err := range []error{httpErr(503), httpErr(429), io.ErrUnexpectedEOF} {
			t.Run(op+"/"+err.Error(), func(t *testing.T) {
				f := newFlaky(nil)
				st := retrying(f)
				defer st.Close()
				if err := st.WriteFile(ctx, "a/b", []byte("hello")); err != nil {
					t.Fatal(err)
				}
				before := f.count(op)
				f.fail = failFirst(op, before+2, err)
				var got []byte
				var rerr error
				switch op {
				case "upload":
					rerr = st.WriteFile(ctx, "a/b", []byte("world!"))
					if rerr == nil {
						got, rerr = st.ReadFile(ctx, "a/b")
					}
				default:
					got, rerr = st.ReadFile(ctx, "a/b")
				}
				want := map[bool]string{true: "world!", false: "hello"}[op == "upload"]
				if rerr != nil || string(got) != want {
					t.Fatalf("got %q, %v; want %q", got, rerr, want)
				}
				if n := f.count(op) - before; n < 3 {
					t.Fatalf("%d %s calls, want the 2 failures and a success", n, op)
				}
			})
		}
	}
}

// What must not be retried: a write-once create (a late failure may have
// created it), a source that cannot be read again, errors that are not
// transient, and everything when no retries are asked for.
func TestNoRetry(t *testing.T) {
	ctx := t.Context()
	t.Run("create", func(t *testing.T) {
		f := newFlaky(func(op string, _ int, o *blob.WriterOptions) error {
			if op == "upload" && o != nil && o.IfNotExist {
				return httpErr(503)
			}
			return nil
		})
		st := retrying(f)
		defer st.Close()
		before := f.count("upload")
		lost, err := st.d.create(ctx, "k", bytes.NewReader([]byte("x")))
		if err == nil || lost || f.count("upload")-before != 1 {
			t.Fatalf("create: lost %v, %v after %d uploads; want a failure after 1", lost, err, f.count("upload")-before)
		}
	})
	t.Run("stream", func(t *testing.T) {
		f := newFlaky(failFirst("upload", 1, httpErr(503)))
		st := retrying(f)
		defer st.Close()
		_, err := st.WriteFrom(ctx, "k", io.MultiReader(strings.NewReader("not seekable")))
		if err == nil || f.count("upload") != 1 {
			t.Fatalf("WriteFrom of a stream: %v after %d uploads; want the failure after 1", err, f.count("upload"))
		}
	})
	t.Run("not found", func(t *testing.T) {
		f := newFlaky(nil)
		st := retrying(f)
		defer st.Close()
		before := f.count("attributes") + f.count("list")
		if _, err := st.Stat(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat: %v", err)
		}
		after := f.count("attributes") + f.count("list")
		f2 := newFlaky(nil)
		st2 := newStorage(f2)
		defer st2.Close()
		st2.Stat(ctx, "missing")
		if want := f2.count("attributes") + f2.count("list"); after-before != want {
			t.Fatalf("Stat of a missing file made %d calls with retries, %d without", after-before, want)
		}
	})
	t.Run("off", func(t *testing.T) {
		f := newFlaky(failFirst("list", 1, httpErr(503)))
		st := newStorage(f) // no WithRetry
		defer st.Close()
		if _, err := st.ReadFile(ctx, "x"); err == nil || f.count("list") != 1 {
			t.Fatalf("ReadFile: %v after %d listings; want the 503 after 1", err, f.count("list"))
		}
	})
}

// stall is a bucket whose calls and reads wait for their context to end.
type stall struct {
	bucket
	calls int
	mu    sync.Mutex
}

func (s *stall) ListPage(ctx context.Context, _ []byte, _ int, _ *blob.ListOptions) ([]*blob.ListObject, []byte, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

type stallReader struct{ ctx context.Context }

func (r stallReader) Read([]byte) (int, error) { <-r.ctx.Done(); return 0, r.ctx.Err() }
func (r stallReader) Close() error             { return nil }
func (r stallReader) Size() int64              { return 10 }
func (r stallReader) ModTime() time.Time       { return time.Time{} }
func (r stallReader) ContentType() string      { return octets }

func (s *stall) NewRangeReader(ctx context.Context, _ string, _, _ int64, _ *blob.ReaderOptions) (objReader, error) {
	return stallReader{ctx}, nil
}

func (s *stall) Upload(ctx context.Context, _ string, r io.Reader, _ *blob.WriterOptions) error {
	io.ReadAll(r) // takes the bytes, then never answers
	<-ctx.Done()
	return ctx.Err()
}

// A bucket that never answers fails each call within its timeout, with an
// error saying so, and the retries stop.
func TestTimeout(t *testing.T) {
	ctx := t.Context()
	s := &stall{bucket: plain{memblob.OpenBucket(nil)}}
	st := newStorage(s, WithTimeout(20*time.Millisecond), WithRetry(3, time.Millisecond))
	defer st.Close()
	_, err := st.ReadFile(ctx, "x")
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadFile: %v, want ErrTimeout", err)
	}
	if s.calls != 3 {
		t.Fatalf("%d listings, want 3 attempts", s.calls)
	}
	if err := st.d.b.Upload(ctx, "k", strings.NewReader("data"), nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("upload: %v, want ErrTimeout", err)
	}
	r, err := st.d.b.NewRangeReader(ctx, "k", 0, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, 4)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("read: %v, want ErrTimeout", err)
	}
	// The caller's own deadline is the caller's error, not a retry.
	s.calls = 0
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := st.d.b.ListPage(cctx, nil, 1, nil); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || s.calls != 1 {
		t.Fatalf("cancelled ListPage: %v after %d calls", err, s.calls)
	}
}
