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

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// ErrUnknownScheme is returned for a URL whose scheme no backend serves.
var ErrUnknownScheme = fmt.Errorf("unknown storage URL scheme: %w", backend.ErrNotSupported)

// DefaultTimeout bounds each bucket call unless WithTimeout says otherwise.
const DefaultTimeout = 30 * time.Second

// Opener opens the store a URL of its scheme names. The URL's query
// options are the opener's to read.
type Opener func(ctx context.Context, u *url.URL, cfg Config) (backend.Storage, error)

// Config is what URL's options ask of an opener.
type Config struct {
	// Timeout bounds each call to a bucket, and each chunk of a streaming
	// read or upload; 0 means no bound.
	Timeout time.Duration
	// Attempts is how many times a call that failed transiently may be
	// tried in all.
	Attempts int
}

// providers maps a URL scheme to its opener, as gocloud's URLMux does:
// the buckets' libraries (gocloud, each cloud's SDK) are linked only into
// programs that import a provider package, which registers in init.
var providers = struct {
	sync.RWMutex
	m map[string]Opener
}{m: map[string]Opener{}}

// builtin are the schemes URL serves itself.
var builtin = []string{"file", "mem"}

// known names the package that registers a well-known scheme, for the
// error of a program that did not import it.
var known = map[string]string{
	"s3":       "github.com/trovekit/trove/backend/open/s3",
	"gs":       "github.com/trovekit/trove/backend/open/gcs",
	"azblob":   "github.com/trovekit/trove/backend/open/azure",
	"memblob":  "github.com/trovekit/trove/backend/open/localblob",
	"fileblob": "github.com/trovekit/trove/backend/open/localblob",
}

// Register makes URL open scheme:// URLs with open. It is meant for the
// init function of a provider package and panics if the scheme is empty,
// built in or already registered.
func Register(scheme string, open Opener) {
	providers.Lock()
	defer providers.Unlock()
	if scheme == "" || open == nil || slices.Contains(builtin, scheme) {
		panic(fmt.Sprintf("open: cannot register scheme %q", scheme))
	}
	if _, dup := providers.m[scheme]; dup {
		panic(fmt.Sprintf("open: scheme %q registered twice", scheme))
	}
	providers.m[scheme] = open
}

// Missing reports whether scheme is a well-known bucket scheme that no
// provider in this program serves: a program can hand such a URL to
// another that links the provider.
func Missing(scheme string) bool {
	if known[scheme] == "" {
		return false
	}
	_, ok := lookup(scheme)
	return !ok
}

func lookup(scheme string) (Opener, bool) {
	providers.RLock()
	defer providers.RUnlock()
	p, ok := providers.m[scheme]
	return p, ok
}

// Option configures URL.
type Option func(*Config)

// WithTimeout bounds each call to a bucket (default DefaultTimeout), and
// each chunk of a streaming read or upload; 0 means no bound. Local disk
// and memory stores do not use it.
func WithTimeout(d time.Duration) Option { return func(c *Config) { c.Timeout = max(d, 0) } }

// WithAttempts sets how many times a bucket call that failed transiently
// (5xx, throttling, a dropped connection, a timeout) is tried in all,
// default 4. Only calls safe to repeat are (see cloud.WithRetry).
func WithAttempts(n int) Option { return func(c *Config) { c.Attempts = max(n, 1) } }

// URL opens the store a URL names:
//
//	file:///abs/path or /abs/path or ./rel/path   local disk (backend/fs)
//	mem://                                          a fresh in-memory store
//	memblob://, fileblob:///abs/path                gocloud buckets in memory or a directory (import backend/open/localblob)
//	s3://, gs://, azblob://                         cloud buckets (import backend/open/s3, gcs, azure)
//
// An empty URL opens DefaultRoot on local disk. A bucket that does not
// exist is an error wrapping fs.ErrNotExist. On any error the Storage is
// nil. A scheme whose provider is not imported is an error naming it.
func URL(ctx context.Context, raw string, opts ...Option) (backend.Storage, error) {
	cfg := Config{Timeout: DefaultTimeout, Attempts: 4}
	for _, o := range opts {
		o(&cfg)
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
	}
	open, ok := lookup(scheme)
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
	st, err := open(ctx, u, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", raw, err)
	}
	if st == nil {
		return nil, fmt.Errorf("open %q: provider returned no store: %w", raw, backend.ErrNotSupported)
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
