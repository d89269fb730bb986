package open

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// ErrUnknownScheme is returned for a URL whose scheme no backend serves.
var ErrUnknownScheme = fmt.Errorf("unknown storage URL scheme: %w", backend.ErrNotSupported)

// URL opens the store a URL names:
//
//	file:///abs/path or /abs/path or ./rel/path   local disk (backend/fs)
//	mem://                                          a fresh in-memory store
//	s3://, gs://, azblob://, memblob://             gocloud.dev buckets
//	fileblob:///abs/path                            a gocloud.dev fileblob bucket
//
// An empty URL opens DefaultRoot on local disk.
func URL(ctx context.Context, raw string) (backend.Storage, error) {
	if raw == "" {
		root, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		return fs.NewOS(root)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		// A plain path, as people type it.
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		return fs.NewOS(abs)
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
		return fs.NewOS(filepath.FromSlash(u.Path))
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("open %q: mem:// takes no name (every mem store is fresh and private): %w", raw, backend.ErrNotSupported)
		}
		return mem.New(), nil
	case "fileblob":
		// gocloud calls fileblob's scheme "file"; ours is the disk backend.
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", raw, err)
		}
		if u.Host != "" && u.Host != "localhost" || u.Path == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("open %q: fileblob URL takes a local path and no options: %w", raw, backend.ErrInvalidPath)
		}
		return cloud.OpenFileblob(filepath.FromSlash(u.Path))
	case "s3", "gs", "azblob", "memblob":
		return cloud.Open(ctx, raw)
	}
	return nil, fmt.Errorf("open %q: %w", raw, ErrUnknownScheme)
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
