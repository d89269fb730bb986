package cas_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/cas"
)

// testdata/blake3store was written by a store with WithAlgorithm(BLAKE3):
// one loose blob and two in a pack. make test runs this test twice: in
// the default build, which reads and verifies them, and with the tag
// trove_noblake3 (the trove command as make install builds it), where
// every path that would hash them fails with ErrAlgorithmUnavailable
// and nothing else changes.
var blake3Fixture = map[string]string{
	"blob:blake3:f490b88fd4fc15a7a189362322608b70351e93b5e5c5989ca999ee480cfabc04": "a blob of more than sixty-four bytes, put alone by a BLAKE3 store: loose",
	"blob:blake3:f9c72705be99ca90dd9873327ffa0f6860e84b789c85c4d2977f92a785f77705": "packed one, hashed with BLAKE3",
	"blob:blake3:52eb1675444a67948737af7e14c3943c2bb7d99726d3bd229f98c48f85184363": "packed two, hashed with BLAKE3",
}

func openBLAKE3Fixture(t *testing.T, opts ...cas.Option) *cas.Store {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/blake3store")); err != nil {
		t.Fatal(err)
	}
	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cas.Open(context.Background(), st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBLAKE3Fixture(t *testing.T) {
	ctx := context.Background()
	s := openBLAKE3Fixture(t)
	linked := cas.BLAKE3.Linked()
	// failed checks err against the build: nil where BLAKE3 is linked,
	// ErrAlgorithmUnavailable where it is not.
	failed := func(what string, err error) {
		t.Helper()
		if linked && err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !linked && !errors.Is(err, cas.ErrAlgorithmUnavailable) {
			t.Fatalf("%s without BLAKE3: %v, want ErrAlgorithmUnavailable", what, err)
		}
	}
	for s2, want := range blake3Fixture {
		ref, err := cas.ParseRef(s2)
		if err != nil {
			t.Fatal(err) // a blake3 ref parses in every build
		}
		got, err := s.Get(ctx, ref)
		failed("Get", err)
		if linked && string(got) != want {
			t.Fatalf("Get %v = %q, want %q", ref, got, want)
		}
		rc, err := s.Open(ctx, ref)
		failed("Open", err)
		if err == nil {
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(b) != want {
				t.Fatalf("Open %v read %q, %v", ref, b, err)
			}
		}
		// Asking does not hash: Has answers in every build.
		if ok, err := s.Has(ctx, ref); err != nil || !ok {
			t.Fatalf("Has %v = %v, %v", ref, ok, err)
		}
		_, err = cas.Sum(cas.BLAKE3, []byte(want))
		failed("Sum", err)
		_, err = cas.SumReader(cas.BLAKE3, strings.NewReader(want))
		failed("SumReader", err)
	}
	n := 0
	for ref, err := range s.Verify(ctx) {
		n++
		failed("Verify "+ref.String(), err)
	}
	if n != len(blake3Fixture) {
		t.Fatalf("Verify yielded %d blobs, want %d", n, len(blake3Fixture))
	}

	// A put of a blake3 ref, alone or in a batch, hashes it first.
	data := []byte("new content, copied by ref")
	var want cas.Ref
	if linked {
		want, _ = cas.Sum(cas.BLAKE3, data)
	} else {
		want, _ = cas.ParseRef("blob:blake3:" + strings.Repeat("ab", 32))
	}
	failed("PutRef", s.PutRef(ctx, want, bytes.NewReader(data)))
	b := s.NewBatch()
	failed("Batch.PutRef", b.PutRef(ctx, want, bytes.NewReader(data)))
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := fs.NewOS(t.TempDir())
	_, err := cas.Open(ctx, st, cas.WithAlgorithm(cas.BLAKE3))
	failed("Open WithAlgorithm(BLAKE3)", err)

	// GC keeps what its roots name and removes nothing young; compacting
	// rewrites the pack, which reads (so hashes) its blobs.
	roots := func(yield func(cas.Ref, error) bool) {
		for s2 := range blake3Fixture {
			ref, _ := cas.ParseRef(s2)
			if !yield(ref, nil) {
				return
			}
		}
	}
	if _, err := s.GC(ctx, roots, cas.GCGrace(0)); err != nil {
		t.Fatalf("GC: %v", err)
	}
	_, err = s.GC(ctx, roots, cas.GCGrace(0), cas.GCCompact())
	failed("GC compacting", err)
	for s2 := range blake3Fixture {
		ref, _ := cas.ParseRef(s2)
		if ok, err := s.Has(ctx, ref); err != nil || !ok {
			t.Fatalf("after GC, Has %v = %v, %v", ref, ok, err)
		}
	}

	// SHA256 works whatever the build.
	ref, err := s.Put(ctx, data)
	if err != nil || ref.Algorithm() != cas.SHA256 {
		t.Fatalf("Put = %v, %v", ref, err)
	}
	if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get %v = %q, %v", ref, got, err)
	}
}
