package crypt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

func kek(secret []byte, ko *keyObject) ([]byte, error) {
	if ko.KDF != "scrypt" || ko.LogN < 1 || ko.LogN > 30 || ko.R < 1 || ko.P < 1 {
		return nil, fmt.Errorf("%w: key derivation %q with log_n=%d r=%d p=%d", fs.ErrInvalid, ko.KDF, ko.LogN, ko.R, ko.P)
	}
	return scrypt.Key(secret, ko.Salt, 1<<ko.LogN, ko.R, ko.P, chacha20poly1305.KeySize)
}

func keyAD(id string) []byte { return []byte("trove/key/1 " + id) }

// wrap writes a new key object wrapping master with secret.
func wrap(ctx context.Context, inner backend.Storage, master, secret []byte, p kdfParams) (string, error) {
	if len(secret) == 0 {
		return "", fmt.Errorf("crypt: empty passphrase: %w", fs.ErrInvalid)
	}
	var idb [8]byte
	rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	ko := &keyObject{Version: 1, KDF: "scrypt", LogN: p.LogN, R: p.R, P: p.P, Salt: make([]byte, 16), Created: time.Now().UTC()}
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
// that object's id.
func unlock(ctx context.Context, inner backend.Storage, secret []byte) ([]byte, string, error) {
	ids, err := keyIDs(ctx, inner)
	if err != nil {
		return nil, "", err
	}
	if len(ids) == 0 {
		return nil, "", fmt.Errorf("crypt: %w", ErrNotEncrypted)
	}
	// A damaged key object does not keep the others from opening the
	// store; it is named when none does.
	var damaged []error
	for _, id := range ids {
		ko, err := readKey(ctx, inner, id)
		if err == nil {
			var k []byte
			if k, err = kek(secret, ko); err == nil {
				if a, err := chacha20poly1305.NewX(k); err == nil && len(ko.Data) >= nonceSize {
					master, err := a.Open(nil, ko.Data[:nonceSize], ko.Data[nonceSize:], keyAD(id))
					if err == nil && len(master) == KeySize {
						return master, id, nil
					}
				}
				continue
			}
			err = backend.PathErr("read", backend.Join(KeysDir, id), err)
		}
		if !errors.Is(err, fs.ErrInvalid) {
			return nil, "", err // the storage failed, not the key object
		}
		damaged = append(damaged, err)
	}
	if len(damaged) > 0 {
		return nil, "", fmt.Errorf("crypt: %w (%d keys tried; damaged: %w)", ErrWrongKey, len(ids), errors.Join(damaged...))
	}
	return nil, "", fmt.Errorf("crypt: %w (%d keys tried; a damaged key object reads the same)", ErrWrongKey, len(ids))
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
	if _, err := wrap(ctx, inner, master, secret, newOptions(opts).kdf); err != nil {
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
	return wrap(ctx, inner, master, newSecret, newOptions(opts).kdf)
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
	id, err := wrap(ctx, inner, master, newSecret, newOptions(opts).kdf)
	if err != nil {
		return "", err
	}
	return id, inner.Unlink(ctx, backend.Join(KeysDir, old))
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
		out = append(out, KeyInfo{ID: id, KDF: ko.KDF, Created: ko.Created})
	}
	return out, nil
}
