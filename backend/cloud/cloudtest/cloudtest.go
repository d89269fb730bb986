package cloudtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	s3open "github.com/trovekit/trove/backend/open/s3"
)

// NewMemblob returns a fresh Storage on a memblob bucket.
func NewMemblob(tb testing.TB) backend.Storage {
	return wrap(tb, memblob.OpenBucket(nil))
}

// NewFileblob returns a fresh Storage on a fileblob bucket in tb.TempDir(),
// opened as cloud.OpenFileblob opens one.
func NewFileblob(tb testing.TB) backend.Storage {
	st, err := cloud.OpenFileblob(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// FileblobBucket opens a fileblob bucket in tb.TempDir(); the caller closes it.
func FileblobBucket(tb testing.TB) *blob.Bucket {
	b, err := fileblob.OpenBucket(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// S3 is an in-process S3 server on 127.0.0.1 with its own buckets.
type S3 struct {
	mem  *s3mem.Backend
	srv  *httptest.Server
	next atomic.Int64
}

// StartS3 starts an S3 server that stops when tb ends. Wrappers, if any,
// see every request first (to count or fail them).
func StartS3(tb testing.TB, wrappers ...func(http.Handler) http.Handler) *S3 {
	return startS3(tb, s3mem.New(), nil, wrappers)
}

// StartSlowClockS3 is StartS3 on a server whose clock moves on by step at
// every reading, as a server's does while an upload's body arrives: it
// stamps an object's Last-Modified header when a PUT begins and its
// listed time when the object is stored, so the two disagree whenever a
// reading crosses a second.
func StartSlowClockS3(tb testing.TB, step time.Duration, wrappers ...func(http.Handler) http.Handler) *S3 {
	clock := &tickingClock{now: time.Now(), step: step}
	return startS3(tb, s3mem.New(s3mem.WithTimeSource(clock)),
		[]gofakes3.Option{gofakes3.WithTimeSource(clock), gofakes3.WithTimeSkewLimit(0)}, wrappers)
}

// tickingClock is a gofakes3.TimeSource that moves on by step at each Now.
type tickingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func startS3(tb testing.TB, mem *s3mem.Backend, opts []gofakes3.Option, wrappers []func(http.Handler) http.Handler) *S3 {
	var h http.Handler = gofakes3.New(mem, opts...).Server()
	for _, w := range wrappers {
		h = w(h)
	}
	srv := httptest.NewServer(h) // binds 127.0.0.1
	tb.Cleanup(srv.Close)
	return &S3{mem: mem, srv: srv}
}

// Bucket creates a fresh bucket and opens it with an explicitly configured
// client: no process environment, so tests stay independent.
func (s *S3) Bucket(tb testing.TB) *blob.Bucket {
	name := fmt.Sprintf("trove-%d", s.next.Add(1))
	if err := s.mem.CreateBucket(name); err != nil {
		tb.Fatalf("create bucket %s: %v", name, err)
	}
	return s.Open(tb, name)
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (s *S3) URL() string { return s.srv.URL }

// CreateBucket creates a fresh bucket and returns its name.
func (s *S3) CreateBucket(tb testing.TB) string {
	name := fmt.Sprintf("trove-%d", s.next.Add(1))
	if err := s.mem.CreateBucket(name); err != nil {
		tb.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Open opens the bucket name, which need not exist, as Bucket does.
func (s *S3) Open(tb testing.TB, name string) *blob.Bucket {
	b, _ := s.open(tb, name)
	return b
}

func (s *S3) open(tb testing.TB, name string) (*blob.Bucket, *s3.Client) {
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("trove", "trove", ""),
	})
	return openS3Bucket(tb, client, name), client
}

// openS3Bucket opens the bucket name through client.
func openS3Bucket(tb testing.TB, client *s3.Client, name string) *blob.Bucket {
	b, err := s3blob.OpenBucket(context.Background(), client, name, nil)
	if err != nil {
		tb.Fatalf("open bucket %s: %v", name, err)
	}
	return b
}

// s3Storage is a Storage on the bucket name through client, with the
// one-request delete backend/open gives S3 stores.
func s3Storage(tb testing.TB, client *s3.Client, name string, opts ...cloud.Option) backend.Storage {
	b := openS3Bucket(tb, client, name)
	return wrap(tb, b, append(opts, cloud.WithDelete(s3open.Delete(b, client, name)))...)
}

// Storage returns a Storage on the bucket name, as New does: a second
// one on a bucket is another machine's view of it.
func (s *S3) Storage(tb testing.TB, name string) backend.Storage {
	_, client := s.open(tb, name)
	return s3Storage(tb, client, name)
}

// New returns a fresh Storage on a new bucket of this server, with the
// one-request delete backend/open gives S3 stores.
func (s *S3) New(tb testing.TB) backend.Storage {
	name := s.CreateBucket(tb)
	_, client := s.open(tb, name)
	return s3Storage(tb, client, name)
}

func wrap(tb testing.TB, b *blob.Bucket, opts ...cloud.Option) backend.Storage {
	st, err := cloud.New(b, opts...)
	if err != nil {
		b.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
