package trove

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
)

// WithKey opens the store encrypted with secret, a passphrase or a key
// file's content (see backend/crypt): every object is authenticated-
// encrypted and every name hidden. An empty store is made an encrypted one
// whose first key is secret. A secret no key of the store takes is
// crypt.ErrWrongKey; a store that is not encrypted, crypt.ErrNotEncrypted.
// Without WithKey an encrypted store is crypt.ErrEncrypted.
func WithKey(secret []byte) Option {
	return func(c *config) { c.key = bytes.Clone(secret) }
}

// WithCryptOptions passes options to backend/crypt (the KDF's cost of a
// new store's key, which files are appended to).
func WithCryptOptions(opts ...crypt.Option) Option {
	return func(c *config) { c.crypt = append(c.crypt, opts...) }
}

// encryptedCatalogDir is where an encrypted store's search catalog (plain
// text, derived from the sessions) lives: in the user's cache directory,
// in a directory only the user can enter, named from the store's key (the
// name says nothing of the store); never in or beside the store, so never
// mirrored. "" for a plain store.
func encryptedCatalogDir(st backend.Storage) (string, error) {
	cs, ok := st.(*crypt.Storage)
	if !ok {
		return "", nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("trove: catalog directory: %w", err)
	}
	sum := sha256.Sum256([]byte(cs.StoredName("catalog")))
	dir := filepath.Join(cache, "trove", "catalog", "enc-"+hex.EncodeToString(sum[:12]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("trove: catalog directory: %w", err)
	}
	return dir, os.Chmod(dir, 0o700)
}

// unlock returns the storage New wires: st itself for a plain store, or
// the encrypted storage over it. Nothing is written but a new store's key.
func unlock(ctx context.Context, st backend.Storage, cfg *config) (backend.Storage, error) {
	if cfg.key == nil {
		if _, ok := st.(*crypt.Storage); ok {
			return st, nil
		}
		enc, err := crypt.IsEncrypted(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("trove: %w", err)
		}
		if enc {
			return nil, fmt.Errorf("trove: %w (trove: TROVE_PASSWORD, --password-file or a prompt)", crypt.ErrEncrypted)
		}
		return st, nil
	}
	cs, err := crypt.Open(ctx, st, cfg.key, cfg.crypt...)
	if errors.Is(err, crypt.ErrNotEncrypted) {
		cs, err = crypt.Init(ctx, st, cfg.key, cfg.crypt...)
	}
	if err != nil {
		return nil, fmt.Errorf("trove: %w", err)
	}
	return cs, nil
}
