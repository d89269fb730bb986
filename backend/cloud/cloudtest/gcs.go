package cloudtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open/gcs"
)

// GCS is an in-process GCS server (fake-gcs-server) on 127.0.0.1 with its
// own buckets.
type GCS struct {
	fake *fakestorage.Server
	srv  *httptest.Server
	next atomic.Int64
}

// StartGCS starts a GCS server that stops when tb ends. Wrappers, if any,
// see every request first (to count or fail them).
func StartGCS(tb testing.TB, wrappers ...func(http.Handler) http.Handler) *GCS {
	// The port must be known before the fake is built: gcsblob's object
	// reads go to the XML API on the client's endpoint host, and the fake
	// serves those only for requests whose Host is its PublicHost.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gcs listen: %v", err)
	}
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true,
		Scheme:     "http",
		PublicHost: l.Addr().String(),
	})
	if err != nil {
		l.Close()
		tb.Fatalf("gcs server: %v", err)
	}
	h := fake.HTTPHandler()
	for _, w := range wrappers {
		h = w(h)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	tb.Cleanup(func() {
		srv.Close()
		fake.Stop()
	})
	return &GCS{fake: fake, srv: srv}
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (g *GCS) URL() string { return g.srv.URL }

// Bucket creates a fresh bucket and opens it with backend/open/gcs's
// driver on an explicitly configured client that can dial this server
// only: no process environment, so tests stay independent.
func (g *GCS) Bucket(tb testing.TB) *blob.Bucket {
	return g.Open(tb, g.CreateBucket(tb))
}

// CreateBucket creates a fresh, empty bucket and returns its name.
func (g *GCS) CreateBucket(tb testing.TB) string {
	name := fmt.Sprintf("trove-%d", g.next.Add(1))
	g.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return name
}

// Open opens the bucket name, which need not exist, as Bucket does.
func (g *GCS) Open(tb testing.TB, name string) *blob.Bucket {
	b, err := gcs.OpenBucket(name, &gcs.Options{Client: localClient(g.srv.Listener.Addr().String()), Endpoint: g.srv.URL})
	if err != nil {
		tb.Fatalf("open bucket %s: %v", name, err)
	}
	return b
}

// OpenGCSBlob opens the bucket name with gocloud's gcsblob (on
// cloud.google.com/go/storage) instead, on the same kind of client: to
// check that the two drivers read each other's objects.
func (g *GCS) OpenGCSBlob(tb testing.TB, name string) *blob.Bucket {
	ctx := context.Background()
	client, err := storage.NewClient(ctx,
		option.WithEndpoint(g.srv.URL+"/storage/v1/"),
		option.WithoutAuthentication(),
		option.WithHTTPClient(localClient(g.srv.Listener.Addr().String())),
	)
	if err != nil {
		tb.Fatalf("gcs client: %v", err)
	}
	tb.Cleanup(func() { client.Close() })
	b, err := gcsblob.OpenBucket(ctx, nil, name, &gcsblob.Options{Client: client})
	if err != nil {
		tb.Fatalf("open bucket %s: %v", name, err)
	}
	return b
}

// New returns a fresh Storage on a new bucket of this server.
func (g *GCS) New(tb testing.TB) backend.Storage {
	return wrap(tb, g.Bucket(tb), cloud.WithHTTPStatus(gcs.Status))
}

// localClient is an HTTP client that dials addr and nothing else.
func localClient(addr string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	var d net.Dialer
	t.DialContext = func(ctx context.Context, network, to string) (net.Conn, error) {
		if to != addr {
			return nil, fmt.Errorf("cloudtest: refusing to dial %s (only %s)", to, addr)
		}
		return d.DialContext(ctx, network, to)
	}
	t.DialTLSContext = func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("cloudtest: no TLS to a local server")
	}
	return &http.Client{Transport: t}
}
