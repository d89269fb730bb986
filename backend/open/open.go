package open

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// ErrUnknownScheme is returned for a URL whose scheme no backend serves.
var ErrUnknownScheme = fmt.Errorf("unknown storage URL scheme: %w", backend.ErrNotSupported)

// BucketOpener opens the bucket a URL of its scheme names. The bucket's own
// query options (region, endpoint, prefix...) are the opener's to read.
type BucketOpener func(ctx context.Context, u *url.URL) (*blob.Bucket, error)

type provider struct {
	open BucketOpener
	opts []cloud.Option
}

// providers maps a URL scheme to its opener, as gocloud's URLMux does:
// each cloud's SDK is linked only into programs that import its provider
// package, which registers it in init.
var providers = struct {
	sync.RWMutex
	m map[string]provider
}{m: map[string]provider{}}

// builtin are the schemes URL serves itself.
var builtin = []string{"file", "mem", "memblob", "fileblob"}

// known names the package that registers a well-known scheme, for the
// error of a program that did not import it.
var known = map[string]string{
	"s3":     "github.com/trovekit/trove/backend/open/s3",
	"gs":     "github.com/trovekit/trove/backend/open/gcs",
	"azblob": "github.com/trovekit/trove/backend/open/azure",
}

// Register makes URL open scheme:// URLs as cloud stores on the buckets
// open returns, with opts (such as cloud.WithHTTPStatus). It is meant for
// the init function of a provider package and panics if the scheme is
// empty, built in or already registered.
func Register(scheme string, open BucketOpener, opts ...cloud.Option) {
	providers.Lock()
	defer providers.Unlock()
	if scheme == "" || open == nil || slices.Contains(builtin, scheme) {
		panic(fmt.Sprintf("open: cannot register scheme %q", scheme))
	}
	if _, dup := providers.m[scheme]; dup {
		panic(fmt.Sprintf("open: scheme %q registered twice", scheme))
	}
	providers.m[scheme] = provider{open: open, opts: opts}
}

func lookup(scheme string) (provider, bool) {
	providers.RLock()
	defer providers.RUnlock()
	p, ok := providers.m[scheme]
	return p, ok
}

// Option configures URL.
type Option func(*config)

type config struct {
	timeout time.Duration
	tries   int
	cloud   []cloud.Option
}

// WithTimeout bounds each call to a bucket (default cloud.DefaultTimeout),
// and each chunk of a streaming read or upload; 0 means no bound. It does
// not apply to local disk or memory stores.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = max(d, 0) } }

// WithRetries sets how many times a bucket call that failed transiently
// (5xx, throttling, a dropped connection, a timeout) is tried in all,
// default 4; see cloud.WithRetry for which calls are retried.
func WithRetries(attempts int) Option { return func(c *config) { c.tries = max(attempts, 1) } }

// WithCloudOptions passes options to every cloud store URL opens.
func WithCloudOptions(opts ...cloud.Option) Option {
	return func(c *config) { c.cloud = append(c.cloud, opts...) }
}

// URL opens the store a URL names:
//
//	file:///abs/path or /abs/path or ./rel/path   local disk (backend/fs)
//	mem://                                          a fresh in-memory store
//	memblob://                                      a fresh in-memory bucket (backend/cloud)
//	fileblob:///abs/path                            a gocloud.dev fileblob bucket in an existing directory
//	s3://, gs://, azblob://                         buckets, once their provider package is imported
//
// An empty URL opens DefaultRoot on local disk. A bucket that does not
// exist is an error wrapping fs.ErrNotExist; on any error the Storage is
// nil.
func URL(ctx context.Context, raw string, opts ...Option) (backend.Storage, error) {
	c := config{timeout: cloud.DefaultTimeout, tries: 4}
	for _, o := range opts {
		o(&c)
	}
	cloudOpts := func(extra []cloud.Option) []cloud.Option {
		return append(append([]cloud.Option{cloud.WithTimeout(c.timeout), cloud.WithRetry(c.tries, 100*time.Millisecond)}, extra...), c.cloud...)
	}
	if raw == "" {
		root, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		return store(fs.NewOS(root))
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		// A plain path, as people type it.
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		return store(fs.NewOS(abs))
	}
	switch scheme {
	case "file":
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("open %q: file URL with host %q: %w", raw, u.Host, backend.ErrNotSupported)
		}
		if u.Path == "" {
			return nil, fmt.Errorf("open %q: file URL without a path: %w", raw, backend.ErrInvalidPath)
		}
		return store(fs.NewOS(filepath.FromSlash(u.Path)))
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("open %q: mem:// takes no name (every mem store is fresh and private): %w", raw, backend.ErrNotSupported)
		}
		return mem.New(), nil
	case "memblob":
		if rest != "" {
			return nil, fmt.Errorf("open %q: memblob:// takes no name (every memblob store is fresh and private): %w", raw, backend.ErrNotSupported)
		}
		return store(cloud.New(memblob.OpenBucket(nil), cloudOpts(nil)...))
	case "fileblob":
		// gocloud calls fileblob's scheme "file"; ours is the disk backend.
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		if u.Host != "" && u.Host != "localhost" || u.Path == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("open %q: fileblob URL takes a local path and no options: %w", raw, backend.ErrInvalidPath)
		}
		return store(cloud.OpenFileblob(filepath.FromSlash(u.Path), cloudOpts(nil)...))
	}
	p, ok := lookup(scheme)
	if !ok {
		if pkg := known[scheme]; pkg != "" {
			return nil, fmt.Errorf("open %q: %w: %s:// needs its provider linked in: import _ %q", raw, ErrUnknownScheme, scheme, pkg)
		}
		return nil, fmt.Errorf("open %q: %w", raw, ErrUnknownScheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", raw, err)
	}
	b, err := p.open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", raw, err)
	}
	st, err := cloud.Connect(ctx, b, cloudOpts(p.opts)...)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", raw, err)
	}
	return st, nil
}

// store returns a nil interface, not one holding a nil pointer, on error.
func store[S backend.Storage](st S, err error) (backend.Storage, error) {
	if err != nil {
		return nil, err
	}
	return st, nil
}

// DefaultRoot is the local root of DESIGN section 9: $TROVE_HOME, else
// $XDG_DATA_HOME/trove, else ~/.local/share/trove.
func DefaultRoot() (string, error) {
	if v := os.Getenv("TROVE_HOME"); v != "" {
		return filepath.Abs(v)
	}
	if v := os.Getenv("XDG_DATA_HOME"); v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "trove"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default trove root: %w (set TROVE_HOME)", err)
	}
	return filepath.Join(home, ".local", "share", "trove"), nil
}
