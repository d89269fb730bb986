package cloud_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// Every bucket call ends within its deadline, whatever the network does:
// an S3 server whose requests are held (before the server saw them, or
// after it served them, the answer held back) fails each call with
// ErrTimeout. The caller's context has no deadline: the per-call one
// (WithTimeout) alone must end it.
func TestCallsEndWithinDeadline(t *testing.T) {
	ops := []struct {
		name string
		run  func(ctx context.Context, st backend.Storage) error
	}{
		{"WriteFile", func(ctx context.Context, st backend.Storage) error {
			return st.WriteFile(ctx, "d/new", []byte("8 bytes!"))
		}},
		{"ReadFile", func(ctx context.Context, st backend.Storage) error {
			_, err := st.ReadFile(ctx, "d/f")
			return err
		}},
		{"Stat", func(ctx context.Context, st backend.Storage) error {
			_, err := st.Stat(ctx, "d/f")
			return err
		}},
		{"List", func(ctx context.Context, st backend.Storage) error {
			for _, err := range st.List(ctx, "d") {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"Sync", func(ctx context.Context, st backend.Storage) error {
			w, err := st.OpenWriter(ctx, "d/f", backend.WriterOptions{})
			if err != nil {
				return err
			}
			defer w.Close()
			if _, err := w.Write([]byte("more\n")); err != nil {
				return err
			}
			return w.Sync()
		}},
		{"Remove", func(ctx context.Context, st backend.Storage) error {
			return st.Unlink(ctx, "d/f")
		}},
	}
	for _, mode := range []string{"held-before", "held-after", "body-held"} {
		for _, op := range ops {
			if mode == "body-held" && op.name != "ReadFile" && op.name != "List" {
				continue // only these answers have a body to cut
			}
			t.Run(mode+"/"+op.name, func(t *testing.T) {
				release := make(chan struct{})
				var stall atomic.Bool
				hold := func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if !stall.Load() {
							next.ServeHTTP(w, r)
							return
						}
						switch mode {
						case "held-after":
							next.ServeHTTP(httptest.NewRecorder(), r)
						case "body-held": // the head and half the body, then nothing
							rec := httptest.NewRecorder()
							next.ServeHTTP(rec, r)
							answer(w, rec, rec.Body.Bytes(), rec.Body.Len()/2)
						default:
							io.Copy(io.Discard, r.Body)
						}
						<-release // the answer never comes while the test runs
					})
				}
				st := heldS3(t, hold, release, cloud.WithTimeout(200*time.Millisecond))
				ctx := context.Background()
				stall.Store(true)
				done := make(chan error, 1)
				go func() { done <- op.run(ctx, st) }()
				select {
				case err := <-done:
					if !errors.Is(err, cloud.ErrTimeout) {
						t.Fatalf("%s on a server that never answers: %v, want ErrTimeout", op.name, err)
					}
				case <-time.After(30 * time.Second): // a hang detector, 150 deadlines long
					t.Fatalf("%s did not end within 150 times its 200ms deadline", op.name)
				}
			})
		}
	}
}

// A call that its deadline ended is tried again when it is safe to: the
// first GET (or PUT) of a file is held, the second answered, and ReadFile
// (WriteFile) succeeds with two attempts. Before, the guard's deadline
// cancelled streams' contexts by cause, so the driver's error said
// context.Canceled under ErrTimeout, and Transient took it for the
// caller's own cancel: a GC that met one stalled read failed whole.
func TestTimedOutCallIsRetried(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPut} {
		t.Run(method, func(t *testing.T) {
			release := make(chan struct{})
			var held atomic.Int64
			var armed atomic.Bool
			holdFirst := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					object := !r.URL.Query().Has("list-type") && strings.HasSuffix(r.URL.Path, "/d/f")
					if armed.Load() && r.Method == method && object && held.Add(1) == 1 {
						io.Copy(io.Discard, r.Body)
						<-release
						return
					}
					next.ServeHTTP(w, r)
				})
			}
			st := heldS3(t, holdFirst, release, cloud.WithTimeout(200*time.Millisecond), cloud.WithRetry(2, time.Millisecond))
			ctx := context.Background()
			armed.Store(true)
			if method == http.MethodGet {
				got, err := st.ReadFile(ctx, "d/f")
				if err != nil || string(got) != "line\n" {
					t.Fatalf("ReadFile after one held GET = %q, %v", got, err)
				}
			} else if err := st.WriteFile(ctx, "d/f", []byte("next\n")); err != nil {
				t.Fatalf("WriteFile after one held PUT: %v", err)
			}
			if held.Load() < 2 {
				t.Fatalf("%d %s requests: the held one was not tried again", held.Load(), method)
			}
		})
	}
}

// heldS3 is a store on an S3 server behind wrap, holding "d/f", whose
// held requests are let go when the test ends.
func heldS3(t *testing.T, wrap func(http.Handler) http.Handler, release chan struct{}, opts ...cloud.Option) *cloud.Storage {
	t.Helper()
	srv := cloudtest.StartS3(t, wrap)
	t.Cleanup(func() { close(release) })
	st, err := cloud.New(srv.Bucket(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.WriteFile(context.Background(), "d/f", []byte("line\n")); err != nil {
		t.Fatal(err)
	}
	return st
}
