package trove

import (
	"bytes"
	"context"
	"errors"
	"fmt"

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
