package crypt

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"

	"github.com/trovekit/trove/backend"
)

// KeysDir holds the key objects of an encrypted store, in the inner store
// and in plain text: each wraps the master key with one passphrase or key
// file. Their presence is what marks a store encrypted.
const KeysDir = "keys"

var (
	// ErrWrongKey: no key object of the store opens with the secret given.
	ErrWrongKey = errors.New("wrong passphrase or key file for this encrypted store")
	// ErrEncrypted: the store is encrypted and no key was given.
	ErrEncrypted = errors.New("store is encrypted: a passphrase or key file is needed")
	// ErrNotEncrypted: a key was given for a store that is not encrypted.
	ErrNotEncrypted = errors.New("store is not encrypted")
	// ErrLastKey: removing the only key would lock the store for good.
	ErrLastKey = errors.New("the store's last key cannot be removed")
)

type kdfParams struct{ LogN, R, P int }

// scrypt's recommended interactive parameters (N=2^15, r=8, p=1).
var defaultKDF = kdfParams{LogN: 15, R: 8, P: 1}

// The key derivations of key objects (KeyInfo.KDF): scrypt for
// passphrases; HKDF for random keys (RandomSecret), which have nothing to
// stretch.
const (
	KDFScrypt = "scrypt"
	KDFHKDF   = "hkdf-sha256"
)

// MinRandomSecret is the least length of a RandomSecret, in bytes.
const MinRandomSecret = 32

// RandomSecret says that the new secret of Init, AddKey or ChangeKey is a
// random key (at least MinRandomSecret bytes from a cryptographic random
// source, as `trove key add --generate-key-file` writes), not a
// passphrase. Its key object derives the wrapping key with HKDF-SHA256
// instead of scrypt: opening the store with it then costs microseconds,
// not scrypt's 50-100 ms and 32 MiB, which a hook that opens the store
// on every tool call pays each time. A guessable secret must never be
// given this way: nothing slows down guessing it.
func RandomSecret() Option {
	return func(o *options) { o.random = true }
}

// WithScrypt sets the scrypt cost of keys that Init, AddKey and ChangeKey
// write: N = 2^logN (default 15). Lower costs are for tests.
func WithScrypt(logN int) Option {
	return func(o *options) {
		if logN >= 1 && logN < 31 {
			o.kdf.LogN = logN
		}
	}
}

// keyObject is the stored, plain JSON form of a key object.
type keyObject struct {
	Version int       `json:"version"`
	KDF     string    `json:"kdf"`
	LogN    int       `json:"log_n"`
	R       int       `json:"r"`
	P       int       `json:"p"`
	Salt    []byte    `json:"salt"`
	Data    []byte    `json:"data"` // nonce || sealed master key
	Created time.Time `json:"created"`
	// Check is the SHA-256 of the object as written with Check empty, so
	// that a flipped byte anywhere in it, the sealed master key included,
	// reads as damage rather than as a wrong passphrase. Objects written
	// before it have none.
	Check string `json:"check,omitempty"`
}

// encode is the key object's stored form, Check as it is.
func (ko *keyObject) encode() ([]byte, error) {
	b, err := json.MarshalIndent(ko, "", "  ")
	return append(b, '\n'), err
}

// sum is what Check holds for ko.
func (ko *keyObject) sum() (string, error) {
	c := *ko
	c.Check = ""
	b, err := c.encode()
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), err
}

// KeyInfo describes one key object.
type KeyInfo struct {
	ID      string    `json:"id"`
	KDF     string    `json:"kdf"`
	Created time.Time `json:"created"`
}

// info describes ko, the key object id.
func (ko *keyObject) info(id string) KeyInfo {
	return KeyInfo{ID: id, KDF: ko.KDF, Created: ko.Created}
}

// kek derives the key that wraps the master key in ko from secret.
func kek(secret []byte, ko *keyObject) ([]byte, error) {
	switch {
	case ko.KDF == KDFScrypt && ko.LogN >= 1 && ko.LogN <= 30 && ko.R >= 1 && ko.P >= 1:
		return scrypt.Key(secret, ko.Salt, 1<<ko.LogN, ko.R, ko.P, chacha20poly1305.KeySize)
	case ko.KDF == KDFHKDF && ko.LogN == 0 && ko.R == 0 && ko.P == 0 && len(ko.Salt) >= 16:
		return hkdf.Key(sha256.New, secret, ko.Salt, "trove/key/1 kek", chacha20poly1305.KeySize)
	}
	return nil, fmt.Errorf("%w: key derivation %q with log_n=%d r=%d p=%d", fs.ErrInvalid, ko.KDF, ko.LogN, ko.R, ko.P)
}

// kdfCost orders key objects for unlock: the cheap derivation first, so
// that a random key never waits for scrypt on a passphrase's object.
func kdfCost(ko *keyObject) int {
	if ko.KDF == KDFHKDF {
		return 0
	}
	return 1
}

func keyAD(id string) []byte { return []byte("trove/key/1 " + id) }

// wrap writes a new key object wrapping master with secret.
func wrap(ctx context.Context, inner backend.Storage, master, secret []byte, o options) (string, error) {
	if len(secret) == 0 {
		return "", fmt.Errorf("crypt: empty passphrase: %w", fs.ErrInvalid)
	}
	if o.random && len(secret) < MinRandomSecret {
		return "", fmt.Errorf("crypt: a random secret of %d bytes, want %d or more: %w", len(secret), MinRandomSecret, fs.ErrInvalid)
	}
	var idb [8]byte
	rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	ko := &keyObject{Version: 1, KDF: KDFScrypt, LogN: o.kdf.LogN, R: o.kdf.R, P: o.kdf.P, Salt: make([]byte, 16), Created: time.Now().UTC()}
	if o.random {
		ko.KDF, ko.LogN, ko.R, ko.P = KDFHKDF, 0, 0, 0
	}
	rand.Read(ko.Salt)
	k, err := kek(secret, ko)
	if err != nil {
		return "", err
	}
	a, err := chacha20poly1305.NewX(k)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, nonceSize)
	rand.Read(nonce)
	ko.Data = a.Seal(nonce, nonce, master, keyAD(id))
	if ko.Check, err = ko.sum(); err != nil {
		return "", err
	}
	b, err := ko.encode()
	if err != nil {
		return "", err
	}
	return id, backend.CreateFile(ctx, inner, backend.Join(KeysDir, id), b)
}

// keyIDs lists the key objects' ids; none (no directory) is no error.
func keyIDs(ctx context.Context, inner backend.Storage) ([]string, error) {
	var ids []string
	for info, err := range inner.List(ctx, KeysDir) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !info.IsDir {
			ids = append(ids, info.Base())
		}
	}
	return ids, nil
}

func readKey(ctx context.Context, inner backend.Storage, id string) (*keyObject, error) {
	b, err := inner.ReadFile(ctx, backend.Join(KeysDir, id))
	if err != nil {
		return nil, err
	}
	var ko keyObject
	if err := json.Unmarshal(b, &ko); err != nil || ko.Version != 1 {
		return nil, backend.PathErr("read", backend.Join(KeysDir, id), fmt.Errorf("%w: not a key object of version 1", fs.ErrInvalid))
	}
	// Written in one canonical form, a key object must read back to the
	// same bytes, and to its Check when it has one.
	again, err := ko.encode()
	sum, serr := ko.sum()
	if err != nil || serr != nil || !bytes.Equal(again, b) || (ko.Check != "" && sum != ko.Check) {
		return nil, backend.PathErr("read", backend.Join(KeysDir, id), fmt.Errorf("%w: %w: key object damaged", backend.ErrCorrupt, fs.ErrInvalid))
	}
	return &ko, nil
}

// IsEncrypted says whether inner holds an encrypted store (key objects).
func IsEncrypted(ctx context.Context, inner backend.Storage) (bool, error) {
	ids, err := keyIDs(ctx, inner)
	return len(ids) > 0, err
}

// unlock finds the key object secret opens and returns the master key and
// a description of that object.
func unlock(ctx context.Context, inner backend.Storage, secret []byte) ([]byte, KeyInfo, error) {
	ids, err := keyIDs(ctx, inner)
	if err != nil {
		return nil, KeyInfo{}, err
	}
	if len(ids) == 0 {
		return nil, KeyInfo{}, fmt.Errorf("crypt: %w", ErrNotEncrypted)
	}
	// A damaged key object does not keep the others from opening the
	// store; it is named when none does.
	var damaged []error
	type candidate struct {
		id string
		ko *keyObject
	}
	var cands []candidate
	for _, id := range ids {
		ko, err := readKey(ctx, inner, id)
		if err != nil {
			if !errors.Is(err, fs.ErrInvalid) {
				return nil, KeyInfo{}, err // the storage failed, not the key object
			}
			damaged = append(damaged, err)
			continue
		}
		if ko.KDF == KDFHKDF && len(secret) < MinRandomSecret {
			continue // a passphrase, never this random key
		}
		cands = append(cands, candidate{id, ko})
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(kdfCost(a.ko), kdfCost(b.ko)) })
	for _, c := range cands {
		k, err := kek(secret, c.ko)
		if err != nil {
			damaged = append(damaged, backend.PathErr("read", backend.Join(KeysDir, c.id), err))
			continue
		}
		if a, err := chacha20poly1305.NewX(k); err == nil && len(c.ko.Data) >= nonceSize {
			master, err := a.Open(nil, c.ko.Data[:nonceSize], c.ko.Data[nonceSize:], keyAD(c.id))
			if err == nil && len(master) == KeySize {
				return master, c.ko.info(c.id), nil
			}
		}
	}
	if len(damaged) > 0 {
		return nil, KeyInfo{}, fmt.Errorf("crypt: %w (%d keys tried; damaged: %w)", ErrWrongKey, len(ids), errors.Join(damaged...))
	}
	return nil, KeyInfo{}, fmt.Errorf("crypt: %w (%d keys tried; a damaged key object reads the same)", ErrWrongKey, len(ids))
}

// Init makes inner, which must be empty, an encrypted store: a random
// master key, wrapped by secret in a first key object.
func Init(ctx context.Context, inner backend.Storage, secret []byte, opts ...Option) (*Storage, error) {
	for info, err := range inner.List(ctx, ".") {
		if err != nil {
			return nil, err
		}
		if info.Base() == KeysDir {
			return nil, fmt.Errorf("crypt: init: %w", fs.ErrExist)
		}
		return nil, fmt.Errorf("crypt: init: the store is not empty (%s): %w", info.Name, ErrNotEncrypted)
	}
	master := make([]byte, KeySize)
	rand.Read(master)
	if _, err := wrap(ctx, inner, master, secret, newOptions(opts)); err != nil {
		return nil, err
	}
	return New(inner, master, opts...)
}

// Open opens the encrypted store on inner with secret (a passphrase or a
// key file's content). A store that is not encrypted is ErrNotEncrypted;
// a secret no key object takes, ErrWrongKey.
func Open(ctx context.Context, inner backend.Storage, secret []byte, opts ...Option) (*Storage, error) {
	master, _, err := unlock(ctx, inner, secret)
	if err != nil {
		return nil, err
	}
	return New(inner, master, opts...)
}

// AddKey wraps the master key with newSecret too, in a new key object, and
// returns its id; secret must open the store.
func AddKey(ctx context.Context, inner backend.Storage, secret, newSecret []byte, opts ...Option) (string, error) {
	master, _, err := unlock(ctx, inner, secret)
	if err != nil {
		return "", err
	}
	return wrap(ctx, inner, master, newSecret, newOptions(opts))
}

// RemoveKey removes the key object id; secret must open the store, and the
// last key stays (ErrLastKey).
func RemoveKey(ctx context.Context, inner backend.Storage, secret []byte, id string) error {
	if _, _, err := unlock(ctx, inner, secret); err != nil {
		return err
	}
	ids, err := keyIDs(ctx, inner)
	if err != nil {
		return err
	}
	found := false
	for _, k := range ids {
		found = found || k == id
	}
	if !found {
		return backend.PathErr("unlink", backend.Join(KeysDir, id), fs.ErrNotExist)
	}
	if len(ids) == 1 {
		return fmt.Errorf("crypt: %w", ErrLastKey)
	}
	return inner.Unlink(ctx, backend.Join(KeysDir, id))
}

// ChangeKey replaces the key object secret opens by one of newSecret and
// returns the new id. Data is not touched: only the wrapping changes.
func ChangeKey(ctx context.Context, inner backend.Storage, secret, newSecret []byte, opts ...Option) (string, error) {
	master, old, err := unlock(ctx, inner, secret)
	if err != nil {
		return "", err
	}
	id, err := wrap(ctx, inner, master, newSecret, newOptions(opts))
	if err != nil {
		return "", err
	}
	return id, inner.Unlink(ctx, backend.Join(KeysDir, old.ID))
}

// KeyFor describes the key object that secret opens (ErrWrongKey when
// none does), such as whether it is a passphrase's (KDFScrypt).
func KeyFor(ctx context.Context, inner backend.Storage, secret []byte) (KeyInfo, error) {
	_, k, err := unlock(ctx, inner, secret)
	return k, err
}

// ListKeys describes the store's key objects; it needs no secret.
func ListKeys(ctx context.Context, inner backend.Storage) ([]KeyInfo, error) {
	ids, err := keyIDs(ctx, inner)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(ids))
	for _, id := range ids {
		ko, err := readKey(ctx, inner, id)
		if err != nil {
			return nil, err
		}
		out = append(out, ko.info(id))
	}
	return out, nil
}
