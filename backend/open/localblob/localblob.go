// Package localblob registers memblob:// (a fresh in-memory gocloud bucket
// each time) and fileblob:///abs/path (a gocloud fileblob bucket in an
// existing directory) with backend/open: import it for its side effect.
// Both are backend/cloud stores that need no cloud, for tests and trials
// of the bucket layout.
//
// Imports: the standard library, gocloud.dev/blob/memblob, backend,
// backend/cloud and backend/open.
package localblob

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/open"
)

func init() {
	open.Register("memblob", func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		if u.Host != "" || u.Path != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("memblob:// takes no name (every memblob store is fresh and private): %w", backend.ErrNotSupported)
		}
		return cloud.New(memblob.OpenBucket(nil), Options(cfg)...)
	})
	// gocloud calls fileblob's scheme "file"; trove's is the disk backend.
	open.Register("fileblob", func(ctx context.Context, u *url.URL, cfg open.Config) (backend.Storage, error) {
		if u.Host != "" && u.Host != "localhost" || u.Path == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("fileblob URL takes a local path and no options: %w", backend.ErrInvalidPath)
		}
		return cloud.OpenFileblob(filepath.FromSlash(u.Path), Options(cfg)...)
	})
}

// Options are the cloud options of what open's Config asks: a provider of
// another bucket passes them to cloud.Connect.
func Options(cfg open.Config) []cloud.Option {
	return []cloud.Option{cloud.WithTimeout(cfg.Timeout), cloud.WithRetry(cfg.Attempts, 100*time.Millisecond)}
}
