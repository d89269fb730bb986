package trove

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
)

// ErrMixedStores is the error of a mirror that would put plain files in an
// encrypted store, or ciphertext of another key in one.
var ErrMixedStores = errors.New("mirror: source and destination are encrypted differently")

type mirrorCopy func(ctx context.Context, f backend.Info) (MirrorAction, error)

// mirrorMode checks that src's files can go to dst and returns how each is
// copied: through the two storages as they are, or, from an encrypted
// source to a raw destination, as the ciphertext objects under them. The
// key objects of a sealed copy are written first (unless dry).
func mirrorMode(ctx context.Context, src, dst backend.Storage, dry bool) (mirrorCopy, error) {
	plain := func(ctx context.Context, f backend.Info) (MirrorAction, error) {
		return mirrorFile(ctx, src, dst, f, strings.HasPrefix(f.Name, "blobs/"), dry)
	}
	cs, sealed := src.(*crypt.Storage)
	if !sealed {
		// Its names are needed to leave locks, leases and caches behind.
		if enc, err := crypt.IsEncrypted(ctx, src); err != nil || enc {
			if err == nil {
				err = fmt.Errorf("the source: %w", crypt.ErrEncrypted)
			}
			return nil, fmt.Errorf("mirror: %w", err)
		}
	}
	if _, ok := dst.(*crypt.Storage); ok {
		return plain, nil
	}
	enc, err := crypt.IsEncrypted(ctx, dst)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	if !sealed {
		if enc {
			return nil, fmt.Errorf("%w: plain files into an encrypted store (open it with its key)", ErrMixedStores)
		}
		return plain, nil
	}
	if err := mirrorKeys(ctx, cs.Inner(), dst, enc, dry); err != nil {
		return nil, err
	}
	raw := cs.Inner()
	return func(ctx context.Context, f backend.Info) (MirrorAction, error) {
		sname := cs.StoredName(f.Name)
		info, err := raw.Stat(ctx, sname)
		if err != nil {
			return MirrorAction{}, fmt.Errorf("mirror: %s: %w", f.Name, err)
		}
		act, err := mirrorFile(ctx, raw, dst, info, strings.HasPrefix(f.Name, "blobs/"), dry)
		act.Name = f.Name
		return act, err
	}, nil
}

// mirrorKeys copies the key objects of an encrypted store's raw storage
// src to dst. A destination that has keys must share one with src (an
// earlier mirror's copy): else its objects are under another master key.
// One that has none must hold nothing at all.
func mirrorKeys(ctx context.Context, src, dst backend.Storage, dstEnc, dry bool) error {
	keys := map[string][]byte{}
	for info, err := range src.List(ctx, crypt.KeysDir) {
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		b, err := src.ReadFile(ctx, info.Name)
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		keys[info.Name] = b
	}
	if dstEnc {
		shared := false
		for name, b := range keys {
			d, err := dst.ReadFile(ctx, name)
			if err == nil && string(d) == string(b) {
				shared = true
			}
		}
		if !shared {
			return fmt.Errorf("%w: the destination is encrypted with another key", ErrMixedStores)
		}
	} else {
		for info, err := range dst.List(ctx, ".") {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return fmt.Errorf("mirror: %w", err)
			}
			return fmt.Errorf("%w: ciphertext into a plain store (%s)", ErrMixedStores, info.Name)
		}
	}
	if dry {
		return nil
	}
	for name, b := range keys {
		if err := backend.PutFile(ctx, dst, name, b); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
	}
	return nil
}
