package open

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// ErrUnknownScheme is returned for a URL whose scheme no backend serves.
var ErrUnknownScheme = fmt.Errorf("unknown storage URL scheme: %w", backend.ErrNotSupported)

// Option tunes URL.
type Option func(*config)

type config struct {
	timeout time.Duration
	set     bool
}

// WithTimeout bounds each bucket request that moves no data, and how long
// a transfer may go without progress (cloud.DefaultTimeout unless given; 0
// for none). Local stores ignore it.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout, c.set = max(d, 0), true }
}

// URL opens the store a URL names:
//
//	file:///abs/path or /abs/path or ./rel/path   local disk (backend/fs)
//	mem://                                          a fresh in-memory store
//	s3://, gs://, azblob://                         gocloud.dev buckets
//	memblob://                                      a fresh gocloud.dev memblob bucket
//	fileblob:///abs/path                            a gocloud.dev fileblob bucket
//
// An empty URL opens DefaultRoot on local disk. A bucket or container that
// does not exist, or an endpoint that does not answer within the timeout,
// is an error here, not an empty store later. On error the Storage is nil.
func URL(ctx context.Context, raw string, opts ...Option) (backend.Storage, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var cloudOpts []cloud.Option
	if c.set {
		cloudOpts = append(cloudOpts, cloud.WithTimeout(c.timeout))
	}
	if raw == "" {
		root, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		return storage(fs.NewOS(root))
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		// A plain path, as people type it.
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		return storage(fs.NewOS(abs))
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
		return storage(fs.NewOS(filepath.FromSlash(u.Path)))
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("open %q: mem:// takes no name (every mem store is fresh and private): %w", raw, backend.ErrNotSupported)
		}
		return mem.New(), nil
	case "memblob":
		if rest != "" {
			return nil, fmt.Errorf("open %q: memblob:// takes no name (every memblob bucket is fresh and private): %w", raw, backend.ErrNotSupported)
		}
		return storage(cloud.New(memblob.OpenBucket(nil), cloudOpts...))
	case "fileblob":
		// gocloud calls fileblob's scheme "file"; ours is the disk backend.
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		if u.Host != "" && u.Host != "localhost" || u.Path == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("open %q: fileblob URL takes a local path and no options: %w", raw, backend.ErrInvalidPath)
		}
		return storage(cloud.OpenFileblob(filepath.FromSlash(u.Path), cloudOpts...))
	case "s3", "gs", "azblob":
		return storage(cloud.OpenChecked(ctx, raw, cloudOpts...))
	}
	return nil, fmt.Errorf("open %q: %w", raw, ErrUnknownScheme)
}

// storage returns st as a Storage, or a nil interface (never one holding a
// nil pointer) with the error.
func storage[T backend.Storage](st T, err error) (backend.Storage, error) {
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
