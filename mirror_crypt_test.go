package trove_test

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

// fastKDF keeps the tests' key derivations cheap.
var fastKDF = trove.WithCryptOptions(crypt.WithScrypt(4))

// rawObjects reads every object under st.
func rawObjects(t *testing.T, st backend.Storage) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for info, err := range backend.Walk(context.Background(), st, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir {
			b, err := st.ReadFile(context.Background(), info.Name)
			if err != nil {
				t.Fatal(err)
			}
			out[info.Name] = b
		}
	}
	return out
}

// An encrypted store mirrors to S3 as ciphertext (the bucket needs no key
// and holds no plaintext), and back; the copy opens with the passphrase and
// holds everything, fails with a wrong one or none, and writes nothing then.
func TestMirrorEncryptedS3AndBack(t *testing.T) {
	ctx := context.Background()
	dir, ws := t.TempDir(), t.TempDir()
	src, err := trove.Open(ctx, dir, trove.WithKey([]byte("hunter2")), fastKDF)
	if err != nil {
		t.Fatal(err)
	}
	id, img := fillStore(t, src, ws)
	src.Close()

	raw, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := trove.Mirror(ctx, raw, mem.New()); !errors.Is(err, crypt.ErrEncrypted) {
		t.Fatalf("mirror of an encrypted store without its key: %v, want ErrEncrypted", err)
	}
	cs, err := crypt.Open(ctx, raw, []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	bucket := cloudtest.StartS3(t).New(t)
	if _, err := trove.Mirror(ctx, cs, bucket); err != nil {
		t.Fatal(err)
	}
	objs := rawObjects(t, bucket)
	if _, ok := objs[crypt.KeysDir+"/"]; len(objs) < 5 || ok {
		t.Fatalf("bucket holds %d objects", len(objs))
	}
	for name, b := range objs {
		for _, needle := range []string{id, "PNGDATA", "seen", "main.go", "sessions", "blobs"} {
			if strings.Contains(name, needle) || bytes.Contains(b, []byte(needle)) {
				t.Errorf("bucket object %s shows %q", name, needle)
			}
		}
	}

	bcs, err := crypt.Open(ctx, bucket, []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	backDir := t.TempDir()
	back, err := fs.NewOS(backDir)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := trove.Mirror(ctx, bcs, back); err != nil {
		t.Fatal(err)
	}
	before := rawObjects(t, back)
	for _, c := range []struct {
		name string
		opts []trove.Option
		want error
	}{
		{"wrong key", []trove.Option{trove.WithKey([]byte("hunter3"))}, crypt.ErrWrongKey},
		{"no key", nil, crypt.ErrEncrypted},
	} {
		if s, err := trove.Open(ctx, backDir, c.opts...); !errors.Is(err, c.want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		after := rawObjects(t, back)
		if len(after) != len(before) {
			t.Errorf("%s: %d objects after, %d before", c.name, len(after), len(before))
		}
		for n, b := range before {
			if !bytes.Equal(after[n], b) {
				t.Errorf("%s: %s changed", c.name, n)
			}
		}
	}
	s, err := trove.Open(ctx, backDir, trove.WithKey([]byte("hunter2")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkMirror(t, s.Storage(), id, img)
	// A plain store opened with a key is an error too.
	if _, err := trove.Open(ctx, t.TempDir()+"/x", trove.WithKey([]byte("k")), fastKDF); err != nil {
		t.Fatalf("a new store with a key: %v", err)
	}
	plain, err := trove.Open(ctx, ws+"/plain")
	if err != nil {
		t.Fatal(err)
	}
	fillStore(t, plain, ws)
	plain.Close()
	if _, err := trove.Open(ctx, ws+"/plain", trove.WithKey([]byte("k"))); !errors.Is(err, crypt.ErrNotEncrypted) {
		t.Errorf("a plain store with a key: %v, want ErrNotEncrypted", err)
	}
}

// A plain store mirrored into a new encrypted one is re-encrypted; plain
// files never go into an encrypted store by a raw mirror.
func TestMirrorEncrypt(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	src, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	id, img := fillStore(t, src, ws)
	bucket := cloudtest.StartS3(t).New(t)
	dst, err := crypt.Init(ctx, bucket, []byte("pw"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trove.Mirror(ctx, src.Storage(), dst); err != nil {
		t.Fatal(err)
	}
	checkMirror(t, dst, id, img)
	n := len(rawObjects(t, bucket))
	if _, err := trove.Mirror(ctx, src.Storage(), bucket); !errors.Is(err, trove.ErrMixedStores) {
		t.Errorf("plain into encrypted: %v, want ErrMixedStores", err)
	}
	if got := len(rawObjects(t, bucket)); got != n {
		t.Errorf("a refused mirror wrote: %d objects, was %d", got, n)
	}
}

// A damaged blob of a plain source is not sealed into an encrypted copy,
// whose Get trusts its authentication: the mirror fails, naming it.
func TestMirrorEncryptRefusesDamagedBlob(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	src, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ref, err := src.Blobs().Put(ctx, randomBlob(1<<20, 7))
	if err != nil {
		t.Fatal(err)
	}
	name := "blobs/sha256/" + ref.Hex()[:2] + "/" + ref.Hex()
	b, err := st.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := st.WriteFile(ctx, name, b); err != nil {
		t.Fatal(err)
	}
	dst, err := crypt.Init(ctx, mem.New(), []byte("pw"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	_, err = trove.Mirror(ctx, st, dst)
	if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), ref.Hex()) {
		t.Fatalf("mirror of a damaged blob: %v, want cas.ErrCorrupt naming %s", err, ref.Hex())
	}
	if _, err := dst.Stat(ctx, name); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("the damaged blob was sealed into the copy: %v", err)
	}
}
