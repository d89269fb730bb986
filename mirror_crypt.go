package trove

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/cas"
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
		if sealed {
			return plain, nil
		}
		return checkedCopy(ctx, src, plain)
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

// checkedCopy is copy for a plain source into an encrypted destination: a
// loose blob is verified against its name before it is sealed, so that
// damage is refused where it is, not authenticated into the copy and
// found at a later read; a damaged source blob fails the mirror.
func checkedCopy(ctx context.Context, src backend.Storage, copy mirrorCopy) (mirrorCopy, error) {
	blobs, err := cas.Open(ctx, src, cas.WithDir("blobs"))
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	return func(ctx context.Context, f backend.Info) (MirrorAction, error) {
		if ref, ok := looseRef(f.Name); ok {
			if err := verifyBlob(ctx, blobs, ref); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return MirrorAction{Name: f.Name}, fmt.Errorf("mirror: %s: %w", f.Name, err)
			}
		}
		return copy(ctx, f)
	}, nil
}

// looseRef is the ref of a loose blob object's name (blobs/ALGO/xx/HEX).
func looseRef(name string) (cas.Ref, bool) {
	p := strings.Split(name, "/")
	if len(p) != 4 || p[0] != "blobs" || !strings.HasPrefix(p[3], p[2]) {
		return cas.Ref{}, false
	}
	ref, err := cas.ParseRef("blob:" + p[1] + ":" + p[3])
	return ref, err == nil
}

func verifyBlob(ctx context.Context, blobs *cas.Store, ref cas.Ref) error {
	rc, err := blobs.Open(ctx, ref)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
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
