package crypt_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/backend/mem"
)

func newCrypt(t *testing.T) (*crypt.Storage, *mem.Storage) {
	t.Helper()
	inner := mem.New()
	c, err := crypt.New(inner, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, inner
}

// objects lists every object of the inner store with its bytes.
func objects(t *testing.T, inner backend.Storage) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for info, err := range backend.Walk(t.Context(), inner, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir {
			b, err := inner.ReadFile(t.Context(), info.Name)
			if err != nil {
				t.Fatal(err)
			}
			out[info.Name] = b
		}
	}
	return out
}

func TestNamesAndContentHidden(t *testing.T) {
	c, inner := newCrypt(t)
	ctx := t.Context()
	secret := "sessions/--home-alice-secretproject--/2026_0199aabbcc.jsonl"
	body := bytes.Repeat([]byte("the launch code is 0000; "), 10000)
	if err := c.WriteFile(ctx, secret, body); err != nil {
		t.Fatal(err)
	}
	for name, b := range objects(t, inner) {
		for _, needle := range []string{"alice", "secretproject", "0199aabbcc", "sessions", "launch code"} {
			if strings.Contains(name, needle) || bytes.Contains(b, []byte(needle)) {
				t.Errorf("object %s shows %q", name, needle)
			}
		}
	}
	got, err := c.ReadFile(ctx, secret)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadFile: %d bytes, %v", len(got), err)
	}
	info, err := c.Stat(ctx, secret)
	if err != nil || info.Size != int64(len(body)) {
		t.Fatalf("Stat: %+v, %v", info, err)
	}
}

// TestEveryByteFlipped flips each byte of every object in turn (a whole
// file of three frames, an appended one, small files): every read fails
// with ErrCorrupt naming the file, or, for a flip that makes the last
// append look torn, returns a prefix of the content; never other bytes.
func TestEveryByteFlipped(t *testing.T) {
	c, inner := newCrypt(t)
	ctx := t.Context()
	files := map[string][]byte{
		"a/whole": bytes.Repeat([]byte("0123456789abcdef"), (2*crypt.FrameSize+100)/16),
		"a/small": []byte("hello"),
		"a/empty": nil,
	}
	for name, data := range files {
		if err := c.WriteFile(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	w, err := c.OpenWriter(ctx, "a/log.jsonl", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log []byte
	for i := range 3 {
		line := []byte(strings.Repeat("x", i+1) + "\n")
		log = append(log, line...)
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	files["a/log.jsonl"] = log
	stored := objects(t, inner)
	if len(stored) != len(files) {
		t.Fatalf("%d objects for %d files", len(stored), len(files))
	}
	names := map[string]string{} // stored -> logical
	for name := range files {
		for sname := range stored {
			b := stored[sname]
			inner.WriteFile(ctx, sname, append(b[:len(b):len(b)], 0)) // mark
			if got, _ := c.ReadFile(ctx, name); got == nil {
				names[sname] = name
			}
			inner.WriteFile(ctx, sname, b)
		}
	}
	for name, want := range files {
		for _, size := range []int{len(want) + crypt.Overhead, len(want) + 1} {
			if got, err := readStream(ctx, c, name, size); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s read into %d bytes: %d bytes, %v", name, size, len(got), err)
			}
		}
	}
	for sname, b := range stored {
		name := names[sname]
		for i := range b {
			if !probe(i, len(b)) {
				continue
			}
			bad := bytes.Clone(b)
			bad[i] ^= 0x40
			if err := inner.WriteFile(ctx, sname, bad); err != nil {
				t.Fatal(err)
			}
			for how, read := range map[string]func() ([]byte, error){
				"ReadFile": func() ([]byte, error) { return c.ReadFile(ctx, name) },
				"Open":     func() ([]byte, error) { return readStream(ctx, c, name, len(files[name])+crypt.Overhead) },
				"Open+1":   func() ([]byte, error) { return readStream(ctx, c, name, len(files[name])+1) },
			} {
				got, err := read()
				switch {
				case err != nil:
					var pe *fs.PathError
					if !errors.Is(err, crypt.ErrCorrupt) || !errors.As(err, &pe) || pe.Path != name {
						t.Fatalf("%s %s byte %d: %v, want ErrCorrupt naming it", how, name, i, err)
					}
				case !bytes.HasPrefix(files[name], got) || !strings.HasSuffix(name, ".jsonl"):
					t.Fatalf("%s %s byte %d flipped: read %q with no error", how, name, i, got)
				}
			}
		}
		inner.WriteFile(ctx, sname, b)
	}
}

// readStream reads name through Open into one buffer of size bytes, as a
// blob store's Get does: a frame decrypts in place where the buffer has
// room for its tag and trailer too, else straight into the buffer.
func readStream(ctx context.Context, c *crypt.Storage, name string, size int) ([]byte, error) {
	rc, err := c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, size)
	n, err := io.ReadFull(rc, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// probe picks the bytes a flip test tries in an object of n bytes: every
// byte of a small one; in a big one, every byte near a frame's start or end
// (headers, nonces, tags, trailers) and one in 61 between.
func probe(i, n int) bool {
	if n < 4096 {
		return true
	}
	const full = crypt.FrameSize + crypt.Overhead
	at := i % full
	return at < 64 || at >= full-64 || i >= n-64 || i%61 == 0
}

func TestSwappedObjectsFail(t *testing.T) {
	c, inner := newCrypt(t)
	ctx := t.Context()
	c.WriteFile(ctx, "x", []byte("one"))
	c.WriteFile(ctx, "y", []byte("two"))
	st := objects(t, inner)
	var names []string
	for n := range st {
		names = append(names, n)
	}
	inner.WriteFile(ctx, names[0], st[names[1]])
	inner.WriteFile(ctx, names[1], st[names[0]])
	for _, n := range []string{"x", "y"} {
		if _, err := c.ReadFile(ctx, n); !errors.Is(err, crypt.ErrCorrupt) {
			t.Errorf("ReadFile(%s) after a swap: %v, want ErrCorrupt", n, err)
		}
	}
}

// TestTornAppend cuts an appended file inside its last frame, as a crash
// may: reads drop that frame, and a new writer appends after the last
// complete one.
func TestTornAppend(t *testing.T) {
	c, inner := newCrypt(t)
	ctx := t.Context()
	w, _ := c.OpenWriter(ctx, "s.jsonl", backend.WriterOptions{})
	w.Write([]byte("one\n"))
	w.Sync()
	w.Write([]byte("two\n"))
	w.Sync()
	w.Close()
	var sname string
	var b []byte
	for n, data := range objects(t, inner) {
		sname, b = n, data
	}
	inner.WriteFile(ctx, sname, b[:len(b)-3])
	got, err := c.ReadFile(ctx, "s.jsonl")
	if err != nil || string(got) != "one\n" {
		t.Fatalf("torn read: %q, %v", got, err)
	}
	if info, err := c.Stat(ctx, "s.jsonl"); err != nil || info.Size != 4 {
		t.Fatalf("torn Stat: %+v, %v", info, err)
	}
	w, err = c.OpenWriter(ctx, "s.jsonl", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("three\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = c.ReadFile(ctx, "s.jsonl")
	if err != nil || string(got) != "one\nthree\n" {
		t.Fatalf("after append: %q, %v", got, err)
	}
	rc, err := c.OpenRange(ctx, "s.jsonl", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(mid) != "hre" {
		t.Fatalf("OpenRange(5, 3) = %q, %v", mid, err)
	}
}

func TestKeys(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	if _, err := crypt.Open(ctx, inner, []byte("pw")); !errors.Is(err, crypt.ErrNotEncrypted) {
		t.Fatalf("Open of an empty store: %v", err)
	}
	c, err := crypt.Init(ctx, inner, []byte("first"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(ctx, "f", []byte("data")); err != nil {
		t.Fatal(err)
	}
	before := objects(t, inner)
	if _, err := crypt.Open(ctx, inner, []byte("wrong")); !errors.Is(err, crypt.ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	id2, err := crypt.AddKey(ctx, inner, []byte("first"), []byte("second"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	id3, err := crypt.ChangeKey(ctx, inner, []byte("first"), []byte("third"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crypt.Open(ctx, inner, []byte("first")); !errors.Is(err, crypt.ErrWrongKey) {
		t.Fatalf("a changed passphrase still opens: %v", err)
	}
	for _, pw := range []string{"second", "third"} {
		c2, err := crypt.Open(ctx, inner, []byte(pw))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c2.ReadFile(ctx, "f"); err != nil || string(got) != "data" {
			t.Fatalf("%s: %q, %v", pw, got, err)
		}
	}
	keys, err := crypt.ListKeys(ctx, inner)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys: %v, %v", keys, err)
	}
	if err := crypt.RemoveKey(ctx, inner, []byte("third"), id2); err != nil {
		t.Fatal(err)
	}
	if err := crypt.RemoveKey(ctx, inner, []byte("third"), id3); !errors.Is(err, crypt.ErrLastKey) {
		t.Fatalf("removing the last key: %v", err)
	}
	// The data objects were never rewritten.
	after := objects(t, inner)
	for name, b := range before {
		if strings.HasPrefix(name, crypt.KeysDir+"/") {
			continue
		}
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s changed with the keys", name)
		}
	}
}

// A damaged key object keeps no other key from opening the store, and is
// named when no key opens it.
func TestDamagedKeyObject(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	if _, err := crypt.Init(ctx, inner, []byte("first"), crypt.WithScrypt(4)); err != nil {
		t.Fatal(err)
	}
	id2, err := crypt.AddKey(ctx, inner, []byte("first"), []byte("second"), crypt.WithScrypt(4))
	if err != nil {
		t.Fatal(err)
	}
	name := crypt.KeysDir + "/" + id2
	b, err := inner.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := inner.WriteFile(ctx, name, b[:len(b)/2]); err != nil {
		t.Fatal(err)
	}
	if _, err := crypt.Open(ctx, inner, []byte("first")); err != nil {
		t.Fatalf("a damaged second key kept the first from opening: %v", err)
	}
	_, err = crypt.Open(ctx, inner, []byte("second"))
	if !errors.Is(err, crypt.ErrWrongKey) || !errors.Is(err, fs.ErrInvalid) || !strings.Contains(err.Error(), name) {
		t.Fatalf("the damaged key's passphrase: %v, want ErrWrongKey naming %s", err, name)
	}
}

// Any one byte of a store's only key object flipped: opening it with the
// right secret fails naming the object as damaged, never as a wrong
// passphrase alone, and never opens with another master key. So for a
// passphrase's object (scrypt) and a random key's (HKDF).
func TestKeyObjectByteFlips(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret []byte
		opts   []crypt.Option
	}{
		{"passphrase", []byte("pw"), []crypt.Option{crypt.WithScrypt(4)}},
		{"random-key", randomKey(), []crypt.Option{crypt.RandomSecret()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyObjectByteFlips(t, tc.secret, tc.opts...)
		})
	}
}

func keyObjectByteFlips(t *testing.T, secret []byte, opts ...crypt.Option) {
	ctx := context.Background()
	inner := mem.New()
	if _, err := crypt.Init(ctx, inner, secret, opts...); err != nil {
		t.Fatal(err)
	}
	keys, err := crypt.ListKeys(ctx, inner)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	name := crypt.KeysDir + "/" + keys[0].ID
	good, err := inner.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		for _, bit := range []byte{0x01, 0x20} {
			b := bytes.Clone(good)
			b[i] ^= bit
			if err := inner.WriteFile(ctx, name, b); err != nil {
				t.Fatal(err)
			}
			_, err := crypt.Open(ctx, inner, secret)
			if !errors.Is(err, fs.ErrInvalid) || !strings.Contains(err.Error(), name) {
				t.Fatalf("byte %d ^ %#x: %v, want the damage named", i, bit, err)
			}
		}
	}
	if err := inner.WriteFile(ctx, name, good); err != nil {
		t.Fatal(err)
	}
	if _, err := crypt.Open(ctx, inner, secret); err != nil {
		t.Fatalf("restored key object: %v", err)
	}
}

// Elements too long for the short stored form (long cwds) are stored under
// a keyed hash with their name in a side object: written, listed, read,
// removed, and a damaged side object is ErrCorrupt.
func TestLongNames(t *testing.T) {
	c, inner := newCrypt(t)
	ctx := t.Context()
	long := "--home-alice-" + strings.Repeat("deep-directory-", 14) + "--"
	name := long + "/session.jsonl"
	if err := c.WriteFile(ctx, name, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for info, err := range c.List(ctx, ".") {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, info.Name)
	}
	if len(listed) != 1 || listed[0] != long {
		t.Fatalf("List(.) = %q", listed)
	}
	if got, err := c.ReadFile(ctx, name); err != nil || string(got) != "hello\n" {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
	for sname := range objects(t, inner) {
		if strings.Contains(sname, "alice") || len(backend.Base(backend.Dir(sname))) > 64 {
			t.Errorf("stored as %s", sname)
		}
	}
	// A damaged side object: the listing fails, naming the directory.
	for sname, b := range objects(t, inner) {
		if !strings.Contains(sname, "/") {
			bad := bytes.Clone(b)
			bad[len(bad)/2] ^= 1
			inner.WriteFile(ctx, sname, bad)
			var err error
			for _, err = range c.List(ctx, ".") {
			}
			if !errors.Is(err, crypt.ErrCorrupt) {
				t.Errorf("List with a damaged side object: %v, want ErrCorrupt", err)
			}
			inner.WriteFile(ctx, sname, b)
		}
	}
	if err := backend.RemoveAll(ctx, c, long); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, inner); len(left) != 0 {
		t.Errorf("left after removal: %v", left)
	}
}
