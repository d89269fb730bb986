package treeobj

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/trovekit/trove/checkpoint/manifest"
)

func ref(s string) string {
	h := sha256.Sum256([]byte(s))
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

// encode writes a tree object of kids, as checkpoint does.
func encode(t *testing.T, kids ...Child) []byte {
	t.Helper()
	b := append([]byte(Magic), byte(len(kids)))
	for _, k := range kids {
		var err error
		if b, err = AppendChild(b, k.Name, k.Entry, k.Sub); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// What AppendChild writes, Decode reads back, for every kind of child.
func TestRoundTrip(t *testing.T) {
	kids := []Child{
		{Name: "a", Entry: &manifest.Entry{Path: "a", Exists: true, Digest: ref("a"), Size: 1, Mode: 0o644}},
		{Name: "d", Entry: &manifest.Entry{Path: "d", Exists: true, Type: manifest.TypeDir, Mode: 0o755}, Sub: ref("tree d")},
		{Name: "gone", Entry: &manifest.Entry{Path: "gone"}},
		{Name: "l", Entry: &manifest.Entry{Path: "l", Exists: true, Type: manifest.TypeSymlink, Target: "a", MTime: time.Unix(5, 0).UTC()}},
		{Name: "pass", Sub: ref("tree pass")},
		{Name: "x", Entry: &manifest.Entry{Path: "x", Exists: true, Digest: ref("x"), Base: ref("b"), Delta: ref("d"), Size: 1, Mode: 0o600}},
	}
	got, err := Decode(encode(t, kids...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, kids) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, kids)
	}
	if _, err := AppendChild(nil, "a", &manifest.Entry{Exists: true, Digest: "blob:nope"}, ""); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("a bad digest: %v", err)
	}
}

// Damage is manifest.ErrCorrupt, never a panic.
func TestDamage(t *testing.T) {
	for _, bad := range []string{"", "trvt", "nope!", "trvt1\x01\x01a\x00", "trvt1\x05"} {
		if _, err := Decode([]byte(bad)); !errors.Is(err, manifest.ErrCorrupt) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	obj := encode(t, Child{Name: "a", Entry: &manifest.Entry{Exists: true, Digest: ref("a"), Size: 1, Mode: 0o644}}, Child{Name: "s", Sub: ref("s")})
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		d := bytes.Clone(obj)
		for range 1 + rng.IntN(3) {
			d[rng.IntN(len(d))] = byte(rng.UintN(256))
		}
		if _, err := Decode(d[:rng.IntN(len(d)+1)]); err != nil && !errors.Is(err, manifest.ErrCorrupt) {
			t.Fatalf("error %v is not ErrCorrupt", err)
		}
	}
}
