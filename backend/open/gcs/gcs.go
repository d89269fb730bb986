package gcs

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/backend/open/localblob"
)

// Scheme is the URL scheme this package registers with backend/open.
const Scheme = "gs"

func init() {
	open.Register(Scheme, func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		b, err := OpenBucketURL(ctx, u)
		if err != nil {
			return nil, err
		}
		return cloud.Connect(ctx, b, append(localblob.Options(cfg), cloud.WithHTTPStatus(Status))...)
	})
}

// mux gives gs:// URLs gocloud's prefix= and key=. It is not gocloud's
// default mux: gcsblob registers gs there, and a program may link both.
var mux = func() *blob.URLMux {
	m := new(blob.URLMux)
	m.RegisterBucket(Scheme, opener{})
	return m
}()

// OpenBucketURL opens a gs://bucket URL (see the package doc for its
// options) through this package's driver.
func OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	return mux.OpenBucketURL(ctx, u)
}

type opener struct{}

func (opener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	opts, err := urlOptions(ctx, u.Query(), os.Getenv("STORAGE_EMULATOR_HOST"))
	if err != nil {
		return nil, fmt.Errorf("open bucket %v: %w", u, err)
	}
	return OpenBucket(u.Host, opts)
}

// urlOptions are the Options a URL's query asks for: gcsblob's where
// they mean something without gRPC or signed URLs, an error otherwise.
func urlOptions(ctx context.Context, q url.Values, emulator string) (*Options, error) {
	for k := range q {
		switch k {
		case "anonymous", "access_id", "universe_domain", "grpc", "zonal":
		case "private_key_path":
			return nil, fmt.Errorf("query parameter %q: it serves signed URLs, which trove's GCS driver does not make", k)
		default:
			return nil, fmt.Errorf("invalid query parameter %q", k)
		}
	}
	anonymous, err := boolParam(q, "anonymous")
	if err != nil {
		return nil, err
	}
	switch id := q.Get("access_id"); id {
	case "":
	case "-":
		anonymous = true
	default:
		return nil, fmt.Errorf("query parameter access_id=%s: it serves signed URLs, which trove's GCS driver does not make (access_id=- is anonymous=true)", id)
	}
	for _, k := range []string{"grpc", "zonal"} {
		if on, err := boolParam(q, k); err != nil {
			return nil, err
		} else if on {
			return nil, fmt.Errorf("query parameter %s=true: trove's GCS driver speaks the JSON API only", k)
		}
	}
	if emulator != "" {
		if !strings.Contains(emulator, "://") {
			emulator = "http://" + emulator
		}
		return &Options{Client: http.DefaultClient, Endpoint: emulator}, nil
	}
	universe := q.Get("universe_domain")
	opts := &Options{Client: http.DefaultClient}
	if !anonymous {
		// The token source keeps the context for refreshes, long after
		// the open it came with.
		ctx := context.WithoutCancel(ctx)
		var creds *google.Credentials
		if universe != "" {
			creds, err = gcp.DefaultCredentialsWithParams(ctx, google.CredentialsParams{UniverseDomain: universe})
		} else {
			creds, err = gcp.DefaultCredentials(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("no Google credentials (anonymous=true opens a public bucket without): %w", err)
		}
		if universe == "" {
			if universe, err = creds.GetUniverseDomain(); err != nil {
				return nil, err
			}
		}
		hc, err := gcp.NewHTTPClient(gcp.DefaultTransport(), creds.TokenSource)
		if err != nil {
			return nil, err
		}
		opts.Client = &hc.Client
	}
	if universe != "" && universe != "googleapis.com" {
		opts.Endpoint = "https://storage." + universe
	}
	return opts, nil
}

// boolParam is the query parameter k, false if absent.
func boolParam(q url.Values, k string) (bool, error) {
	v := q.Get(k)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("invalid value %q for query parameter %q: %w", v, k, err)
	}
	return on, nil
}
