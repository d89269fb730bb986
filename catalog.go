package trove

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/catalog"
)

// WithCatalogDir sets the directory of the store's search catalog. By
// default a local store's catalog is beside it (<root>.catalog), and any
// other store's is in a temporary directory removed at Close (see
// CatalogDir for a bucket's place in the user's cache).
func WithCatalogDir(dir string) Option { return func(c *config) { c.catalogDir = dir } }

// WithCatalogOptions passes options to the search catalog; a command
// line tool passes catalog.WithExitAfterClose(true).
func WithCatalogOptions(opts ...catalog.Option) Option {
	return func(c *config) { c.catalog = append(c.catalog, opts...) }
}

// CatalogDir is where the catalog of the store at url belongs: beside a
// local store's root (<root>.catalog), in the user's cache directory keyed
// by the URL for a bucket, and "" for mem://, whose catalog is temporary.
// The catalog is never inside the store: it is derived from it.
func CatalogDir(url string) (string, error) {
	scheme, _, ok := strings.Cut(url, "://")
	switch {
	case url == "" || !ok || scheme == "file":
		return "", nil // beside the root: New finds it
	case scheme == "mem":
		return "", nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("trove: catalog directory: %w", err)
	}
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(cache, "trove", "catalog", hex.EncodeToString(sum[:12])), nil
}

// besideRoot is the catalog directory beside a local root, or "".
func besideRoot(st any) string {
	l, ok := st.(*fs.Storage)
	if !ok {
		return ""
	}
	root := l.OSRoot()
	if root == "" || filepath.Dir(root) == root {
		return ""
	}
	return root + ".catalog"
}

// Catalog opens the store's search catalog on first use (building it
// from the session files when missing, damaged or of another schema).
func (s *Store) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.cat != nil {
		return s.cat, nil
	}
	dir := s.cfg.catalogDir
	if dir == "" {
		var err error
		if dir, err = encryptedCatalogDir(s.st); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		dir = besideRoot(s.base)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "trove-catalog-")
		if err != nil {
			return nil, fmt.Errorf("trove: catalog: %w", err)
		}
		dir, s.catTemp = tmp, tmp
	}
	opts := append([]catalog.Option{catalog.WithLogger(s.cfg.log), catalog.WithClock(s.cfg.now)}, s.cfg.catalog...)
	if s.catTemp != "" {
		// Removed at Close: its files must be closed first (Windows).
		opts = append(opts, catalog.WithExitAfterClose(false))
	}
	c, err := catalog.Open(ctx, dir, s.st, s.blobs, opts...)
	if err != nil {
		return nil, err
	}
	s.cat = c
	return c, nil
}

// Search yields the session entries that match q, best first (see
// catalog.Query for the syntax and filters). The catalog is brought up to
// the store first: a message another process flushed is found.
func (s *Store) Search(ctx context.Context, q catalog.Query) iter.Seq2[catalog.Hit, error] {
	return func(yield func(catalog.Hit, error) bool) {
		c, err := s.Catalog(ctx)
		if err != nil {
			yield(catalog.Hit{}, err)
			return
		}
		for h, err := range c.Search(ctx, q) {
			if !yield(h, err) {
				return
			}
		}
	}
}

// closeCatalog closes the catalog and removes a temporary one.
func (s *Store) closeCatalog() error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	var err error
	if s.cat != nil {
		err = s.cat.Close()
		s.cat = nil
	}
	if s.catTemp != "" {
		if rerr := os.RemoveAll(s.catTemp); err == nil {
			err = rerr
		}
		s.catTemp = ""
	}
	return err
}

// Stats adds up the store's sessions from its catalog: messages, tokens,
// cost, tool calls and failures, by day, model, cwd or tool, and the bytes
// the sessions and their blobs take.
func (s *Store) Stats(ctx context.Context, q catalog.StatsQuery) (*catalog.Stats, error) {
	c, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return c.Stats(ctx, q)
}
