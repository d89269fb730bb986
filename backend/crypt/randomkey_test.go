package crypt_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/backend/mem"
)

// randomKey is a key file's content as `trove key add --generate-key-file`
// writes it: 32 random bytes in hex.
func randomKey() []byte {
	var k [32]byte
	rand.Read(k[:])
	return []byte(hex.EncodeToString(k[:]))
}

// A random key's object derives with HKDF: it opens the store, a
// passphrase and other random keys do not open it, and a short secret is
// refused before anything is written.
func TestRandomSecretKey(t *testing.T) {
	ctx := t.Context()
	inner := mem.New()
	c, err := crypt.Init(ctx, inner, []byte("pw"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(ctx, "f", []byte("data")); err != nil {
		t.Fatal(err)
	}
	key := randomKey()
	id, err := crypt.AddKey(ctx, inner, []byte("pw"), key, crypt.RandomSecret())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := crypt.ListKeys(ctx, inner)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys: %v, %v", keys, err)
	}
	for _, k := range keys {
		if want := map[bool]string{true: "hkdf-sha256", false: "scrypt"}[k.ID == id]; k.KDF != want {
			t.Errorf("key %s: kdf %q, want %q", k.ID, k.KDF, want)
		}
	}
	for _, secret := range [][]byte{key, []byte("pw")} {
		c2, err := crypt.Open(ctx, inner, secret)
		if err != nil {
			t.Fatalf("open with %q: %v", secret, err)
		}
		if got, err := c2.ReadFile(ctx, "f"); err != nil || string(got) != "data" {
			t.Fatalf("read with %q: %q, %v", secret, got, err)
		}
	}
	for _, wrong := range [][]byte{randomKey(), key[:len(key)-1], []byte("p")} {
		if _, err := crypt.Open(ctx, inner, wrong); !errors.Is(err, crypt.ErrWrongKey) {
			t.Errorf("open with %q: %v, want ErrWrongKey", wrong, err)
		}
	}
	before := objects(t, inner)
	_, err = crypt.AddKey(ctx, inner, []byte("pw"), []byte("a passphrase, not a key"), crypt.RandomSecret())
	if !errors.Is(err, fs.ErrInvalid) || !strings.Contains(err.Error(), "random secret") {
		t.Fatalf("a short random secret: %v, want fs.ErrInvalid", err)
	}
	if after := objects(t, inner); len(after) != len(before) {
		t.Fatalf("a refused key wrote %d objects", len(after)-len(before))
	}
	// A store made with a random key alone opens with it.
	other := mem.New()
	if _, err := crypt.Init(ctx, other, key, crypt.RandomSecret()); err != nil {
		t.Fatal(err)
	}
	if _, err := crypt.Open(ctx, other, key); err != nil {
		t.Fatal(err)
	}
}

// Opening with a random key never runs scrypt for a passphrase's object,
// whatever the objects' order: scrypt at its default cost allocates 32
// MiB, which the open would show.
func TestRandomSecretSkipsScrypt(t *testing.T) {
	ctx := t.Context()
	inner := mem.New()
	key := randomKey()
	if _, err := crypt.Init(ctx, inner, key, crypt.RandomSecret()); err != nil {
		t.Fatal(err)
	}
	pwID, err := crypt.AddKey(ctx, inner, key, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	// Keys are tried by kind, not listed order: put the passphrase's
	// object first in that order.
	for {
		keys, err := crypt.ListKeys(ctx, inner)
		if err != nil || len(keys) != 2 {
			t.Fatalf("ListKeys: %v, %v", keys, err)
		}
		if keys[0].ID == pwID {
			break
		}
		next := randomKey()
		if _, err := crypt.ChangeKey(ctx, inner, key, next, crypt.RandomSecret()); err != nil {
			t.Fatal(err)
		}
		key = next
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := crypt.Open(ctx, inner, key); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Fatalf("opening with the random key allocated %d bytes: scrypt ran", n)
	}
	if _, err := crypt.Open(ctx, inner, []byte("pw")); err != nil {
		t.Fatalf("the passphrase: %v", err)
	}
}

// BenchmarkOpen is what opening a store costs a process (a hook opens it
// on every tool call): a passphrase's scrypt against a random key's HKDF.
func BenchmarkOpen(b *testing.B) {
	ctx := b.Context()
	inner := mem.New()
	key := randomKey()
	if _, err := crypt.Init(ctx, inner, []byte("pw")); err != nil {
		b.Fatal(err)
	}
	if _, err := crypt.AddKey(ctx, inner, []byte("pw"), key, crypt.RandomSecret()); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		secret []byte
	}{{"passphrase", []byte("pw")}, {"random-key", key}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := crypt.Open(ctx, inner, bc.secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
