package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/cas"
)

// TestCAS runs the blob store suite (package cas) on the backends newBackend
// makes: fresh and empty on each call, cleaned up by the constructor.
//
// Subtests are stable names: "Refs", "RoundTrip/<kind>/<size>/<algo>",
// "Stream/...", "Dedup", "Batch", "Mixed", "Corrupt", "Truncated",
// "LyingHeader", "ZstdBomb", "GC/...", "Concurrent", "Crash/..." (only on a
// backend.Crasher), "Faults/...". With -short the 64 MiB streams are skipped.
//
// The suite knows the store's layout (DESIGN section 9 and package cas):
// loose blobs at blobs/<algo>/<hex[:2]>/<hex>, packs under blobs/packs, and
// the 16-byte header of a stored object, so that it can damage objects the
// way disks and hostile writers do.
func TestCAS(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	for _, g := range []struct {
		name string
		run  func(*testing.T, func(testing.TB) backend.Storage)
	}{
		{"Refs", casTestRefs},
		{"RoundTrip", casTestRoundTrip},
		{"Stream", casTestStream},
		{"Missing", casTestMissing},
		{"Dedup", casTestDedup},
		{"PutRef", casTestPutRef},
		{"Batch", casTestBatch},
		{"Mixed", casTestMixed},
		{"Delete", casTestDelete},
		{"Corrupt", casTestCorrupt},
		{"Truncated", casTestTruncated},
		{"LyingHeader", casTestLyingHeader},
		{"ZstdBomb", casTestBomb},
		{"Stray", casTestStray},
		{"GC", casTestGC},
		{"Concurrent", casTestConcurrent},
		{"Context", casTestContext},
		{"Crash", casTestCrash},
		{"Faults", casTestFaults},
	} {
		t.Run(g.name, func(t *testing.T) { g.run(t, newBackend) })
	}
}

func casOpen(tb testing.TB, st backend.Storage, opts ...cas.Option) *cas.Store {
	tb.Helper()
	s, err := cas.Open(tb.Context(), st, opts...)
	if err != nil {
		tb.Fatalf("cas.Open: %v", err)
	}
	return s
}

// casJSON returns n bytes of JSON-looking text that compresses well but not
// trivially, different for each seed.
func casJSON(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var b bytes.Buffer
	words := []string{"tool_use", "assistant", "user", "content", "text", "image", "README.md", "func main()", "error", "session"}
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":"%08x","parentId":"%08x","type":%q,"text":%q,"tokens":%d}`+"\n",
			r.Uint32(), r.Uint32(), words[r.IntN(len(words))], words[r.IntN(len(words))]+" "+words[r.IntN(len(words))], r.IntN(5000))
	}
	return b.Bytes()[:n]
}

// casRandom returns n incompressible bytes.
func casRandom(n int, seed uint64) []byte {
	b := make([]byte, n)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// casStream yields n bytes without holding them: random, or JSON-like.
func casStream(n int64, seed uint64, compressible bool) io.Reader {
	if compressible {
		return io.LimitReader(&casRepeat{unit: casJSON(1<<20, seed)}, n)
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return io.LimitReader(rand.NewChaCha8(key), n)
}

type casRepeat struct {
	unit []byte
	off  int
}

func (r *casRepeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.unit[r.off:])
		n += k
		r.off = (r.off + k) % len(r.unit)
	}
	return n, nil
}

func casMustPut(tb testing.TB, s *cas.Store, data []byte) cas.Ref {
	tb.Helper()
	ref, err := s.Put(tb.Context(), data)
	if err != nil {
		tb.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	return ref
}

func casMustGet(tb testing.TB, s *cas.Store, ref cas.Ref, want []byte) {
	tb.Helper()
	got, err := s.Get(tb.Context(), ref)
	if err != nil {
		tb.Fatalf("Get(%v): %v", ref, err)
	}
	if !bytes.Equal(got, want) {
		tb.Fatalf("Get(%v) = %d bytes, want %d bytes (content differs)", ref, len(got), len(want))
	}
}

// casFiles lists every file under blobs/, name -> size.
func casFiles(tb testing.TB, st backend.Storage) map[string]int64 {
	tb.Helper()
	out := map[string]int64{}
	for fi, err := range backend.Walk(tb.Context(), st, "blobs") {
		if err != nil {
			tb.Fatalf("walk blobs: %v", err)
		}
		if !fi.IsDir {
			out[fi.Name] = fi.Size
		}
	}
	return out
}

func casLooseName(ref cas.Ref) string {
	h := ref.Hex()
	return "blobs/" + ref.Algorithm().String() + "/" + h[:2] + "/" + h
}

func casPacks(tb testing.TB, st backend.Storage) []string {
	var out []string
	for name := range casFiles(tb, st) {
		if strings.HasPrefix(name, "blobs/packs/") {
			out = append(out, name)
		}
	}
	return out
}

// casVerify runs Verify and returns the refs it called bad; it fails the test
// on an error that is not corruption.
func casVerify(tb testing.TB, s *cas.Store) (good int, bad map[cas.Ref]error, other []error) {
	tb.Helper()
	bad = map[cas.Ref]error{}
	for ref, err := range s.Verify(tb.Context()) {
		switch {
		case err == nil:
			good++
		case ref.IsZero():
			if !errors.Is(err, cas.ErrCorrupt) {
				tb.Fatalf("Verify: %v", err)
			}
			other = append(other, err)
		default:
			if !errors.Is(err, cas.ErrCorrupt) && !errors.Is(err, cas.ErrTooLarge) {
				tb.Fatalf("Verify(%v): error not ErrCorrupt: %v", ref, err)
			}
			bad[ref] = err
		}
	}
	return good, bad, other
}

func casVerifyClean(tb testing.TB, s *cas.Store) int {
	tb.Helper()
	good, bad, other := casVerify(tb, s)
	if len(bad) > 0 || len(other) > 0 {
		tb.Fatalf("Verify found problems: %v %v", bad, other)
	}
	return good
}

func casTestRefs(t *testing.T, nb func(testing.TB) backend.Storage) {
	const (
		emptySHA    = "blob:sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		emptyBLAKE3 = "blob:blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	)
	t.Run("known", func(t *testing.T) {
		for _, c := range []struct {
			algo cas.Algorithm
			want string
		}{{cas.SHA256, emptySHA}, {cas.BLAKE3, emptyBLAKE3}} {
			ref, err := cas.Sum(c.algo, nil)
			if err != nil || ref.String() != c.want {
				t.Errorf("Sum(%v, empty) = %v, %v; want %s", c.algo, ref, err, c.want)
			}
			parsed, err := cas.ParseRef(c.want)
			if err != nil || parsed != ref {
				t.Errorf("ParseRef(%s) = %v, %v", c.want, parsed, err)
			}
			s := casOpen(t, nb(t), cas.WithAlgorithm(c.algo))
			if got := casMustPut(t, s, nil); got != ref {
				t.Errorf("Put(empty) with %v = %v, want %v", c.algo, got, ref)
			}
		}
	})
	t.Run("hostile", func(t *testing.T) {
		hex := strings.TrimPrefix(emptySHA, "blob:sha256:")
		for _, bad := range []string{
			"", "blob:", "blob:sha256", "blob:sha256:", "sha256:" + hex, "blob::" + hex,
			"blob:md5:" + hex, "blob:SHA256:" + hex, "blob:sha1:" + hex[:40], "BLOB:sha256:" + hex,
			"blob:sha256:" + strings.ToUpper(hex), "blob:sha256:" + hex[:63], "blob:sha256:" + hex + "0",
			"blob:sha256:" + hex[:63] + "g", " blob:sha256:" + hex, "blob:sha256:" + hex + " ",
			"blob:sha256:" + hex + "\n", "blob:sha256:" + hex + "\x00", "blob:sha256:../../../etc/passwd",
			"blob:sha256:" + hex[:62] + "/x", "blob:sha256:" + hex[:62] + "..", "blob:sha256:" + hex + ":" + hex,
			"blob:sha256:" + strings.Repeat("0", 10000), "blob:blake3:" + hex[:32], "blob:sha256:" + hex[:60] + "٣٣٣٣",
		} {
			if ref, err := cas.ParseRef(bad); !errors.Is(err, cas.ErrInvalidRef) {
				t.Errorf("ParseRef(%q) = %v, %v; want ErrInvalidRef", bad, ref, err)
			}
			var r cas.Ref
			quoted, _ := json.Marshal(bad)
			if err := json.Unmarshal(quoted, &r); !errors.Is(err, cas.ErrInvalidRef) {
				t.Errorf("json.Unmarshal(%q) = %v; want ErrInvalidRef", bad, err)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		ref, _ := cas.ParseRef(emptyBLAKE3)
		b, err := json.Marshal(struct{ R cas.Ref }{ref})
		if err != nil || string(b) != `{"R":"`+emptyBLAKE3+`"}` {
			t.Fatalf("json.Marshal = %s, %v", b, err)
		}
		var back struct{ R cas.Ref }
		if err := json.Unmarshal(b, &back); err != nil || back.R != ref {
			t.Fatalf("json round trip = %v, %v", back.R, err)
		}
	})
	t.Run("zero", func(t *testing.T) {
		s := casOpen(t, nb(t))
		ctx := t.Context()
		var zero cas.Ref
		if _, err := s.Get(ctx, zero); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("Get(zero) = %v", err)
		}
		if _, err := s.Open(ctx, zero); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("Open(zero) = %v", err)
		}
		if _, err := s.Has(ctx, zero); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("Has(zero) = %v", err)
		}
		if _, err := s.Stat(ctx, zero); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("Stat(zero) = %v", err)
		}
		if err := s.Delete(ctx, zero); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("Delete(zero) = %v", err)
		}
		if err := s.PutRef(ctx, zero, strings.NewReader("x")); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("PutRef(zero) = %v", err)
		}
		if _, err := json.Marshal(zero); err == nil {
			t.Errorf("json.Marshal(zero ref) succeeded")
		}
	})
}

func casTestRoundTrip(t *testing.T, nb func(testing.TB) backend.Storage) {
	st := nb(t)
	for _, algo := range []cas.Algorithm{cas.SHA256, cas.BLAKE3} {
		s := casOpen(t, st, cas.WithAlgorithm(algo))
		for _, kind := range []string{"json", "random"} {
			for _, n := range []int{0, 1, 63, 64, 1000, 64 << 10, 1<<20 + 3, 5 << 20} {
				t.Run(fmt.Sprintf("%s/%d/%v", kind, n, algo), func(t *testing.T) {
					ctx := t.Context()
					data := casRandom(n, uint64(n))
					if kind == "json" {
						data = casJSON(n, uint64(n))
					}
					ref := casMustPut(t, s, data)
					if want, _ := cas.Sum(algo, data); ref != want {
						t.Fatalf("Put = %v, want %v", ref, want)
					}
					casMustGet(t, s, ref, data)
					rc, err := s.Open(ctx, ref)
					if err != nil {
						t.Fatalf("Open: %v", err)
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("Open+ReadAll = %d bytes, %v", len(got), err)
					}
					if ok, err := s.Has(ctx, ref); !ok || err != nil {
						t.Fatalf("Has = %v, %v", ok, err)
					}
					info, err := s.Stat(ctx, ref)
					if err != nil {
						t.Fatalf("Stat: %v", err)
					}
					if info.Ref != ref || info.Size != int64(n) || info.Packed {
						t.Fatalf("Stat = %+v, want size %d, loose", info, n)
					}
					wantCodec := cas.CodecRaw
					if kind == "json" && n >= 1000 {
						wantCodec = cas.CodecZstd
					}
					if info.Codec != wantCodec {
						t.Errorf("Stat codec = %v, want %v", info.Codec, wantCodec)
					}
					if wantCodec == cas.CodecZstd && info.StoredSize >= info.Size {
						t.Errorf("zstd stored size %d >= size %d", info.StoredSize, info.Size)
					}
					if wantCodec == cas.CodecRaw && info.StoredSize > info.Size+64 {
						t.Errorf("raw stored size %d, size %d: overhead beyond a header", info.StoredSize, info.Size)
					}
				})
			}
		}
	}
}

func casTestStream(t *testing.T, nb func(testing.TB) backend.Storage) {
	sizes := []int64{0, 1, 100 << 10, 3<<20 + 5, 64 << 20}
	for _, compressible := range []bool{true, false} {
		kind := map[bool]string{true: "json", false: "random"}[compressible]
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", kind, n), func(t *testing.T) {
				if n >= 64<<20 && testing.Short() {
					t.Skip("64 MiB stream skipped with -short")
				}
				ctx := t.Context()
				// A 1 MiB stream buffer makes 3 MiB take the staged path too.
				s := casOpen(t, nb(t), cas.WithStreamBuffer(1<<20))
				h := sha256.New()
				ref, err := s.PutReader(ctx, io.TeeReader(casStream(n, uint64(n), compressible), h))
				if err != nil {
					t.Fatalf("PutReader: %v", err)
				}
				want, _ := cas.ParseRef(fmt.Sprintf("blob:sha256:%x", h.Sum(nil)))
				if ref != want {
					t.Fatalf("PutReader = %v, want %v", ref, want)
				}
				info, err := s.Stat(ctx, ref)
				if err != nil || info.Size != n {
					t.Fatalf("Stat = %+v, %v; want size %d", info, err, n)
				}
				if compressible && n >= 100<<10 && info.Codec != cas.CodecZstd {
					t.Errorf("compressible stream stored as %v", info.Codec)
				}
				rc, err := s.Open(ctx, ref)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer rc.Close()
				gh := sha256.New()
				got, err := io.Copy(gh, rc)
				if err != nil || got != n || !bytes.Equal(gh.Sum(nil), h.Sum(nil)) {
					t.Fatalf("Open streamed %d bytes, %v; want %d matching bytes", got, err, n)
				}
				if n <= 4<<20 {
					data, _ := io.ReadAll(casStream(n, uint64(n), compressible))
					if again := casMustPut(t, s, data); again != ref {
						t.Fatalf("Put of the same bytes = %v, want %v", again, ref)
					}
				}
			})
		}
	}
	t.Run("staging-cleaned", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
		data := casJSON(1<<20, 9)
		for range 2 {
			if _, err := s.PutReader(t.Context(), bytes.NewReader(data)); err != nil {
				t.Fatalf("PutReader: %v", err)
			}
		}
		files := casFiles(t, st)
		if len(files) != 1 {
			t.Fatalf("after two staged puts of one content, blobs/ holds %v, want one object", files)
		}
	})
	t.Run("too-large", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithMaxBlobSize(1<<20), cas.WithStreamBuffer(64<<10))
		if _, err := s.PutReader(t.Context(), casStream(1<<20+1, 1, true)); !errors.Is(err, cas.ErrTooLarge) {
			t.Fatalf("PutReader(max+1) = %v, want ErrTooLarge", err)
		}
		if _, err := s.Put(t.Context(), make([]byte, 1<<20+1)); !errors.Is(err, cas.ErrTooLarge) {
			t.Fatalf("Put(max+1) = %v, want ErrTooLarge", err)
		}
		if files := casFiles(t, st); len(files) != 0 {
			t.Fatalf("a refused put left %v", files)
		}
		if _, err := s.PutReader(t.Context(), casStream(1<<20, 1, true)); err != nil {
			t.Fatalf("PutReader(max) = %v", err)
		}
	})
	t.Run("source-error", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
		boom := errors.New("source failed")
		for _, n := range []int64{10, 1 << 20} {
			r := io.MultiReader(casStream(n, 2, true), casErrReader{boom})
			if _, err := s.PutReader(t.Context(), r); !errors.Is(err, boom) {
				t.Fatalf("PutReader with a failing source after %d bytes = %v, want the source's error", n, err)
			}
		}
		if files := casFiles(t, st); len(files) != 0 {
			t.Fatalf("failed puts left %v", files)
		}
	})
}

type casErrReader struct{ err error }

func (r casErrReader) Read([]byte) (int, error) { return 0, r.err }

func casTestMissing(t *testing.T, nb func(testing.TB) backend.Storage) {
	s := casOpen(t, nb(t))
	ctx := t.Context()
	ref, _ := cas.Sum(cas.SHA256, []byte("never stored"))
	if _, err := s.Get(ctx, ref); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), ref.String()) {
		t.Errorf("Get(missing) = %v, want fs.ErrNotExist naming the ref", err)
	}
	if _, err := s.Open(ctx, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v", err)
	}
	if _, err := s.Stat(ctx, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(missing) = %v", err)
	}
	if err := s.Delete(ctx, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete(missing) = %v", err)
	}
	if ok, err := s.Has(ctx, ref); ok || err != nil {
		t.Errorf("Has(missing) = %v, %v", ok, err)
	}
	n := 0
	for _, err := range s.Walk(ctx) {
		if err != nil {
			t.Fatalf("Walk(empty): %v", err)
		}
		n++
	}
	if n != 0 {
		t.Errorf("Walk(empty) yielded %d refs", n)
	}
	if good := casVerifyClean(t, s); good != 0 {
		t.Errorf("Verify(empty) checked %d blobs", good)
	}
}

// casWrites counts the calls that change a store.
func casWrites(inner backend.Storage) (*faulty.Storage, *atomic.Int64) {
	var n atomic.Int64
	st := faulty.New(inner, faulty.WithHook(func(op, name string) error {
		switch op {
		case "WriteFile", "WriteFrom", "OpenWriter", "Rename", "Unlink", "EnsureDir":
			n.Add(1)
		}
		return nil
	}))
	return st, &n
}

func casTestDedup(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st, writes := casWrites(nb(t))
	s := casOpen(t, st)
	small, big := casJSON(10<<10, 1), casRandom(2<<20, 2)
	refSmall, refBig := casMustPut(t, s, small), casMustPut(t, s, big)
	packedData := [][]byte{casJSON(1000, 3), casJSON(2000, 4)}
	packed, err := s.PutMany(ctx, packedData)
	if err != nil {
		t.Fatalf("PutMany: %v", err)
	}
	before := casFiles(t, st)
	writes.Store(0)

	// Every way of putting present content writes nothing.
	if ref := casMustPut(t, s, small); ref != refSmall {
		t.Fatalf("second Put = %v, want %v", ref, refSmall)
	}
	casMustPut(t, s, big)
	if _, err := s.PutReader(ctx, bytes.NewReader(small)); err != nil {
		t.Fatal(err)
	}
	casMustPut(t, s, packedData[0])
	if _, err := s.PutMany(ctx, [][]byte{small, packedData[1], small}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRef(ctx, packed[1], casErrReader{errors.New("must not be read")}); err != nil {
		t.Fatalf("PutRef of a present blob read its source: %v", err)
	}
	// A second store (another process) dedups against what this one wrote.
	s2 := casOpen(t, st)
	casMustPut(t, s2, small)
	casMustPut(t, s2, packedData[1])
	if n := writes.Load(); n != 0 {
		t.Fatalf("puts of present content made %d writes", n)
	}
	if after := casFiles(t, st); len(after) != len(before) {
		t.Fatalf("objects %d -> %d after dedup puts", len(before), len(after))
	}
	casMustGet(t, s, refBig, big)

	// Within one batch, repeated content is stored once.
	st2 := nb(t)
	s3 := casOpen(t, st2)
	b := s3.NewBatch()
	for range 3 {
		if _, err := b.Put(ctx, casJSON(5000, 5)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range s3.Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("batch of one content three times holds %d blobs", n)
	}
	good := casVerifyClean(t, s3)
	if good != 1 {
		t.Fatalf("batch of one content three times stored %d copies", good)
	}
}

func casTestPutRef(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st := nb(t)
	s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
	for _, n := range []int{10, 1 << 20} {
		data := casJSON(n, 11)
		want, _ := cas.Sum(cas.BLAKE3, data)
		if err := s.PutRef(ctx, want, bytes.NewReader(data)); err != nil {
			t.Fatalf("PutRef(%d bytes): %v", n, err)
		}
		casMustGet(t, s, want, data)
		other, _ := cas.Sum(cas.SHA256, append([]byte("x"), data...))
		err := s.PutRef(ctx, other, bytes.NewReader(data))
		if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), other.String()) {
			t.Fatalf("PutRef with the wrong ref = %v, want ErrCorrupt naming it", err)
		}
		if ok, _ := s.Has(ctx, other); ok {
			t.Fatalf("PutRef with the wrong ref stored it")
		}
	}
	if files := casFiles(t, st); len(files) != 2 {
		t.Fatalf("blobs/ holds %v, want the two good blobs", files)
	}

	t.Run("batch", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithPackThreshold(16<<10))
		b := s.NewBatch()
		var refs []cas.Ref
		var data [][]byte
		for i, n := range []int{10, 5000, 40 << 10} { // the last is above the threshold
			d := casJSON(n, uint64(20+i))
			ref, _ := cas.Sum(cas.BLAKE3, d)
			if err := b.PutRef(ctx, ref, bytes.NewReader(d)); err != nil {
				t.Fatalf("Batch.PutRef(%d bytes): %v", n, err)
			}
			refs, data = append(refs, ref), append(data, d)
		}
		wrong, _ := cas.Sum(cas.SHA256, []byte("something else"))
		if err := b.PutRef(ctx, wrong, bytes.NewReader(data[1])); !errors.Is(err, cas.ErrCorrupt) {
			t.Fatalf("Batch.PutRef with the wrong ref = %v, want ErrCorrupt", err)
		}
		if err := b.PutRef(ctx, refs[1], casErrReader{errors.New("must not be read")}); err != nil {
			t.Fatalf("Batch.PutRef of a pending blob read its source: %v", err)
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.PutRef(ctx, refs[0], casErrReader{errors.New("must not be read")}); err != nil {
			t.Fatalf("Batch.PutRef of a stored blob read its source: %v", err)
		}
		for i, r := range refs {
			casMustGet(t, casOpen(t, st), r, data[i])
		}
		if ok, _ := s.Has(ctx, wrong); ok {
			t.Fatal("Batch.PutRef with the wrong ref stored it")
		}
		if good := casVerifyClean(t, s); good != 3 {
			t.Fatalf("Verify checked %d blobs, want 3", good)
		}
	})
}

func casTestBatch(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st, writes := casWrites(nb(t))
	s := casOpen(t, st, cas.WithPackSize(256<<10), cas.WithPackThreshold(32<<10))
	const count = 300
	data := make([][]byte, count)
	for i := range data {
		if i%3 == 0 {
			data[i] = casRandom(1000+i*20, uint64(i))
		} else {
			data[i] = casJSON(2000+i*50, uint64(i))
		}
	}
	big := casJSON(100<<10, 99) // above the threshold: stored loose
	b := s.NewBatch()
	refs := make([]cas.Ref, count)
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := range data {
		wg.Go(func() {
			ref, err := b.Put(ctx, data[i])
			refs[i] = ref
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Batch.Put: %v", err)
		}
	}
	bigRef, err := b.PutReader(ctx, bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("second Flush: %v", err)
	}
	// About 450 KiB of small blobs in 256 KiB packs: a few packs, each one
	// pack and one index write, plus the loose big blob.
	packs := casPacks(t, st)
	if len(packs) < 2 || len(packs) > 6 {
		t.Fatalf("%d small blobs made %d packs: %v", count, len(packs), packs)
	}
	if n := writes.Load(); n > int64(2*len(packs)+3) {
		t.Fatalf("batch made %d writes for %d packs", n, len(packs))
	}
	// Another store (process) sees them all, packed and loose alike.
	s2 := casOpen(t, st)
	for i, ref := range refs {
		casMustGet(t, s2, ref, data[i])
		info, err := s2.Stat(ctx, ref)
		if err != nil || !info.Packed || info.Size != int64(len(data[i])) || info.ModTime.IsZero() {
			t.Fatalf("Stat(packed %d) = %+v, %v", i, info, err)
		}
		if own, err := s.Stat(ctx, ref); err != nil || own.ModTime.IsZero() {
			t.Fatalf("Stat(packed %d) by its writer = %+v, %v", i, own, err)
		}
		if i%3 == 0 && info.Codec != cas.CodecRaw || i%3 != 0 && info.Codec != cas.CodecZstd {
			t.Fatalf("Stat(packed %d).Codec = %v", i, info.Codec)
		}
	}
	casMustGet(t, s2, bigRef, big)
	if info, _ := s2.Stat(ctx, bigRef); info.Packed {
		t.Fatalf("a blob above the pack threshold was packed")
	}
	rc, err := s2.Open(ctx, refs[7])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, data[7]) {
		t.Fatalf("Open(packed) = %d bytes, %v", len(got), err)
	}
	rc.Close()
	if good := casVerifyClean(t, s2); good != count+1 {
		t.Fatalf("Verify checked %d blobs, want %d", good, count+1)
	}

	t.Run("invisible-before-flush", func(t *testing.T) {
		s := casOpen(t, nb(t))
		b := s.NewBatch()
		ref, err := b.Put(ctx, []byte("pending"))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Has(ctx, ref); ok {
			t.Fatal("a blob is visible before its batch is flushed")
		}
		b.Discard()
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Has(ctx, ref); ok {
			t.Fatal("a discarded blob was stored")
		}
		refs, err := s.PutMany(ctx, [][]byte{[]byte("a"), []byte("b"), nil})
		if err != nil || len(refs) != 3 {
			t.Fatalf("PutMany = %v, %v", refs, err)
		}
		casMustGet(t, s, refs[2], nil)
	})
}

func casTestMixed(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st := nb(t)
	s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
	want := map[cas.Ref][]byte{}
	for i := range 20 {
		d := casJSON(500+i, uint64(100+i))
		want[casMustPut(t, s, d)] = d
	}
	batch := make([][]byte, 40)
	for i := range batch {
		batch[i] = casJSON(700+i, uint64(200+i))
	}
	batch[0] = casJSON(500, 100) // also loose
	refs, err := s.PutMany(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		want[r] = batch[i]
	}
	// The same content loose and packed.
	dup := casJSON(900, 300)
	dupRef := casLooseAndPacked(t, st, dup)
	want[dupRef] = dup
	seen := map[cas.Ref]int{}
	for ref, err := range s.Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		seen[ref]++
	}
	if len(seen) != len(want) {
		t.Fatalf("Walk yielded %d refs, want %d", len(seen), len(want))
	}
	for ref, d := range want {
		if seen[ref] != 1 {
			t.Fatalf("Walk yielded %v %d times", ref, seen[ref])
		}
		casMustGet(t, s, ref, d)
	}
	casVerifyClean(t, s)
}

func casTestDelete(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st := nb(t)
	s := casOpen(t, st)
	loose := casMustPut(t, s, casJSON(3000, 1))
	data := [][]byte{casJSON(1000, 2), casJSON(1100, 3), casJSON(1200, 1)}
	refs, err := s.PutMany(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []cas.Ref{loose, refs[0]} {
		if err := s.Delete(ctx, ref); err != nil {
			t.Fatalf("Delete(%v): %v", ref, err)
		}
		for _, s := range []*cas.Store{s, casOpen(t, st)} {
			if ok, _ := s.Has(ctx, ref); ok {
				t.Fatalf("Has(%v) after Delete", ref)
			}
			if _, err := s.Get(ctx, ref); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Get(%v) after Delete = %v", ref, err)
			}
		}
		if err := s.Delete(ctx, ref); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("second Delete = %v", err)
		}
	}
	casMustGet(t, s, refs[1], data[1])
	casMustGet(t, s, refs[2], data[2])
	for _, r := range refs[1:] {
		if err := s.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if files := casFiles(t, st); len(files) != 0 {
		t.Fatalf("deleting every blob left %v", files)
	}
}

// casDamage rewrites a stored object through f.
func casDamage(tb testing.TB, st backend.Storage, name string, f func([]byte) []byte) {
	tb.Helper()
	b, err := st.ReadFile(tb.Context(), name)
	if err != nil {
		tb.Fatalf("read %s: %v", name, err)
	}
	if err := st.WriteFile(tb.Context(), name, f(b)); err != nil {
		tb.Fatalf("write %s: %v", name, err)
	}
}

// casExpectBad checks that Get, Open+ReadAll and Verify all refuse ref with
// an error wrapping one of wants and naming the ref.
func casExpectBad(tb testing.TB, s *cas.Store, ref cas.Ref, wants ...error) {
	tb.Helper()
	is := func(err error) bool {
		for _, w := range wants {
			if errors.Is(err, w) {
				return true
			}
		}
		return false
	}
	_, err := s.Get(tb.Context(), ref)
	if !is(err) || !strings.Contains(err.Error(), ref.String()) {
		tb.Fatalf("Get(%v) = %v, want %v naming the ref", ref, err, wants)
	}
	rc, err := s.Open(tb.Context(), ref)
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
	}
	if !is(err) {
		tb.Fatalf("Open+read(%v) = %v, want %v", ref, err, wants)
	}
	_, bad, _ := casVerify(tb, s)
	if err, ok := bad[ref]; !ok || !strings.Contains(err.Error(), ref.String()) {
		tb.Fatalf("Verify did not report %v (bad: %v)", ref, bad)
	}
}

func casTestCorrupt(t *testing.T, nb func(testing.TB) backend.Storage) {
	cases := []struct {
		name string
		data []byte
		at   func(n int) int // which byte to flip
	}{
		{"zstd/payload", casJSON(50<<10, 1), func(n int) int { return n / 2 }},
		{"zstd/last", casJSON(50<<10, 2), func(n int) int { return n - 1 }},
		{"raw/payload", casRandom(50<<10, 3), func(n int) int { return n / 2 }},
		{"raw/first", casRandom(50<<10, 4), func(int) int { return 16 }},
		{"header/codec", casRandom(1000, 5), func(int) int { return 5 }},
		{"header/magic", casRandom(1000, 6), func(int) int { return 0 }},
	}
	for _, c := range cases {
		t.Run("loose/"+c.name, func(t *testing.T) {
			st := nb(t)
			s := casOpen(t, st)
			ref := casMustPut(t, s, c.data)
			good := casMustPut(t, s, []byte("an innocent bystander"))
			casDamage(t, st, casLooseName(ref), func(b []byte) []byte { b[c.at(len(b))] ^= 0x40; return b })
			casExpectBad(t, s, ref, cas.ErrCorrupt)
			casMustGet(t, s, good, []byte("an innocent bystander"))
			if _, bad, _ := casVerify(t, s); len(bad) != 1 {
				t.Fatalf("Verify reported %d bad blobs, want 1: %v", len(bad), bad)
			}
		})
		t.Run("packed/"+c.name, func(t *testing.T) {
			st := nb(t)
			s := casOpen(t, st)
			// Random: a record of its own (small compressible blobs
			// share a block record, and its damage).
			bystander := casRandom(3000, 77)
			refs, err := s.PutMany(t.Context(), [][]byte{bystander, c.data})
			if err != nil {
				t.Fatal(err)
			}
			packs := casPacks(t, st)
			if len(packs) != 1 {
				t.Fatalf("packs = %v", packs)
			}
			// The second record starts after the first; find it by size.
			casDamage(t, st, packs[0], func(b []byte) []byte {
				off := len(b) - casStoredLen(t, s, refs[1])
				b[off+c.at(len(b)-off)] ^= 0x40
				return b
			})
			casExpectBad(t, s, refs[1], cas.ErrCorrupt)
			casMustGet(t, s, refs[0], bystander)
		})
	}
	// A raw blob of many chunks is hashed as it is read (cas readSum):
	// damage anywhere in it, or its end cut, is still found.
	for _, c := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"middle", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"last", func(b []byte) []byte { b[len(b)-1] ^= 0x40; return b }},
		{"one-short", func(b []byte) []byte { return b[:len(b)-1] }},
	} {
		t.Run("loose/raw/big-"+c.name, func(t *testing.T) {
			st := nb(t)
			s := casOpen(t, st)
			data := casRandom(1<<20+100, 10)
			ref := casMustPut(t, s, data)
			casMustGet(t, s, ref, data)
			casDamage(t, st, casLooseName(ref), c.damage)
			casExpectBad(t, s, ref, cas.ErrCorrupt)
		})
	}
	t.Run("loose-and-packed", func(t *testing.T) {
		// A good copy elsewhere is not hidden by a bad one.
		st := nb(t)
		s := casOpen(t, st)
		data := casJSON(5000, 8)
		ref := casLooseAndPacked(t, st, data)
		casDamage(t, st, casLooseName(ref), func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
		casMustGet(t, casOpen(t, st), ref, data)
		if _, bad, _ := casVerify(t, s); len(bad) != 1 {
			t.Fatalf("Verify reported %v, want the damaged loose copy", bad)
		}
	})
}

// casLooseAndPacked stores data twice, loose and packed, as two processes
// racing may; the API's dedup never does it by itself.
func casLooseAndPacked(tb testing.TB, st backend.Storage, data []byte) cas.Ref {
	tb.Helper()
	ctx := tb.Context()
	ref := casMustPut(tb, casOpen(tb, st), data)
	loose, err := st.ReadFile(ctx, casLooseName(ref))
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Unlink(ctx, casLooseName(ref)); err != nil {
		tb.Fatal(err)
	}
	if _, err := casOpen(tb, st).PutMany(ctx, [][]byte{data}); err != nil {
		tb.Fatal(err)
	}
	if err := st.WriteFile(ctx, casLooseName(ref), loose); err != nil {
		tb.Fatal(err)
	}
	return ref
}

func casStoredLen(tb testing.TB, s *cas.Store, ref cas.Ref) int {
	info, err := s.Stat(tb.Context(), ref)
	if err != nil {
		tb.Fatalf("Stat: %v", err)
	}
	return int(info.StoredSize)
}

func casTestTruncated(t *testing.T, nb func(testing.TB) backend.Storage) {
	for _, c := range []struct {
		name string
		data []byte
		keep func(n int) int
	}{
		{"zstd/half", casJSON(100<<10, 1), func(n int) int { return n / 2 }},
		{"zstd/one-short", casJSON(100<<10, 2), func(n int) int { return n - 1 }},
		{"raw/one-short", casRandom(10<<10, 3), func(n int) int { return n - 1 }},
		{"header-only", casRandom(10<<10, 4), func(int) int { return 16 }},
		{"half-header", casRandom(10<<10, 5), func(int) int { return 7 }},
		{"empty", casRandom(10<<10, 6), func(int) int { return 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := nb(t)
			s := casOpen(t, st)
			ref := casMustPut(t, s, c.data)
			casDamage(t, st, casLooseName(ref), func(b []byte) []byte { return b[:c.keep(len(b))] })
			casExpectBad(t, s, ref, cas.ErrCorrupt)
		})
	}
	t.Run("staged", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
		ref, err := s.PutReader(t.Context(), casStream(1<<20, 7, true))
		if err != nil {
			t.Fatal(err)
		}
		casDamage(t, st, casLooseName(ref), func(b []byte) []byte { return b[:len(b)-20] })
		casExpectBad(t, s, ref, cas.ErrCorrupt)
	})
	t.Run("pack", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st)
		// Random: records of their own, in order (small compressible
		// blobs share a block record written last).
		a, b := casRandom(4000, 8), casRandom(4000, 9)
		refs, err := s.PutMany(t.Context(), [][]byte{a, b})
		if err != nil {
			t.Fatal(err)
		}
		casDamage(t, st, casPacks(t, st)[0], func(p []byte) []byte { return p[:len(p)-100] })
		casExpectBad(t, s, refs[1], cas.ErrCorrupt)
		casMustGet(t, s, refs[0], a)
	})
}

// casSetLength rewrites the original length in a stored object's header.
func casSetLength(n uint64) func([]byte) []byte {
	return func(b []byte) []byte {
		binary.LittleEndian.PutUint64(b[8:16], n)
		return b
	}
}

func casTestLyingHeader(t *testing.T, nb func(testing.TB) backend.Storage) {
	for _, c := range []struct {
		name string
		data []byte
		size func(n int) uint64
		want []error
	}{
		{"zstd/shorter", casJSON(100<<10, 1), func(n int) uint64 { return uint64(n - 1) }, []error{cas.ErrCorrupt}},
		{"zstd/longer", casJSON(100<<10, 2), func(n int) uint64 { return uint64(n + 1) }, []error{cas.ErrCorrupt}},
		{"zstd/tiny", casJSON(100<<10, 3), func(int) uint64 { return 10 }, []error{cas.ErrCorrupt}},
		{"zstd/zero", casJSON(100<<10, 4), func(int) uint64 { return 0 }, []error{cas.ErrCorrupt}},
		{"raw/shorter", casRandom(10<<10, 5), func(n int) uint64 { return uint64(n - 1) }, []error{cas.ErrCorrupt}},
		{"raw/longer", casRandom(10<<10, 6), func(n int) uint64 { return uint64(n + 1) }, []error{cas.ErrCorrupt}},
		{"huge", casJSON(100<<10, 7), func(int) uint64 { return 1 << 40 }, []error{cas.ErrCorrupt, cas.ErrTooLarge}},
		{"max-uint64", casJSON(100<<10, 8), func(int) uint64 { return ^uint64(0) }, []error{cas.ErrCorrupt, cas.ErrTooLarge}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := nb(t)
			s := casOpen(t, st)
			ref := casMustPut(t, s, c.data)
			casDamage(t, st, casLooseName(ref), casSetLength(c.size(len(c.data))))
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			casExpectBad(t, s, ref, c.want...)
			runtime.ReadMemStats(&m1)
			if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 128<<20 {
				t.Fatalf("reading a blob with a lying header allocated %d MiB", grew>>20)
			}
		})
	}
	t.Run("trailer", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
		ref, err := s.PutReader(t.Context(), casStream(1<<20, 9, true))
		if err != nil {
			t.Fatal(err)
		}
		casDamage(t, st, casLooseName(ref), func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[len(b)-16:], 1<<20-1)
			return b
		})
		casExpectBad(t, s, ref, cas.ErrCorrupt)
	})
	t.Run("packed-index-disagrees", func(t *testing.T) {
		st := nb(t)
		s := casOpen(t, st)
		a := casJSON(5000, 10)
		refs, err := s.PutMany(t.Context(), [][]byte{a})
		if err != nil {
			t.Fatal(err)
		}
		// The record header says one length, the index another.
		casDamage(t, st, casPacks(t, st)[0], func(p []byte) []byte {
			binary.LittleEndian.PutUint64(p[8+8:8+16], 4999)
			return p
		})
		casExpectBad(t, s, refs[0], cas.ErrCorrupt)
	})
}

// casBomb is a zstd frame of n zero bytes: a few KiB that decompress to n.
func casBomb(tb testing.TB, n int64) []byte {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for i := int64(0); i < n; i += int64(len(zero)) {
		if _, err := enc.Write(zero); err != nil {
			tb.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func casTestBomb(t *testing.T, nb func(testing.TB) backend.Storage) {
	const bombSize = 128 << 20
	bomb := casBomb(t, bombSize)
	header := func(size uint64) []byte {
		h := []byte{'t', 'r', 'v', 'b', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.LittleEndian.PutUint64(h[8:], size)
		return h
	}
	for _, c := range []struct {
		name   string
		size   uint64
		maxOpt int64
		want   []error
	}{
		// The header claims little; the frame inflates to 128 MiB.
		{"lying-small", 1000, 0, []error{cas.ErrCorrupt}},
		// Honest header, but above the configured maximum.
		{"above-max", bombSize, 16 << 20, []error{cas.ErrTooLarge}},
		// Honest header within the maximum: the digest still does not match.
		{"honest", bombSize, 0, []error{cas.ErrCorrupt}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "honest" && testing.Short() {
				t.Skip("128 MiB decode skipped with -short")
			}
			st := nb(t)
			var opts []cas.Option
			if c.maxOpt > 0 {
				opts = append(opts, cas.WithMaxBlobSize(c.maxOpt))
			}
			s := casOpen(t, st, opts...)
			ref, _ := cas.Sum(cas.SHA256, []byte("what the bomb pretends to be"))
			if err := st.WriteFile(t.Context(), casLooseName(ref), append(header(c.size), bomb...)); err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			rc, err := s.Open(t.Context(), ref)
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			runtime.ReadMemStats(&m1)
			if !errors.Is(err, c.want[0]) {
				t.Fatalf("Open+read of a zstd bomb = %v, want %v", err, c.want[0])
			}
			if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 64<<20 {
				t.Fatalf("streaming a zstd bomb allocated %d MiB", grew>>20)
			}
			if c.name != "honest" {
				runtime.ReadMemStats(&m0)
				_, err = s.Get(t.Context(), ref)
				runtime.ReadMemStats(&m1)
				if !errors.Is(err, c.want[0]) {
					t.Fatalf("Get of a zstd bomb = %v, want %v", err, c.want[0])
				}
				if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 64<<20 {
					t.Fatalf("Get of a zstd bomb allocated %d MiB", grew>>20)
				}
			}
		})
	}
}

func casTestStray(t *testing.T, nb func(testing.TB) backend.Storage) {
	st := nb(t)
	s := casOpen(t, st)
	ref := casMustPut(t, s, []byte("fine"))
	ctx := t.Context()
	for _, name := range []string{"blobs/sha256/zz/not-a-blob", "blobs/sha256/" + ref.Hex(), "blobs/index/garbage"} {
		if err := st.WriteFile(ctx, name, []byte("junk")); err != nil {
			t.Fatal(err)
		}
	}
	// An index that does not decode is reported and skipped by readers.
	if err := st.WriteFile(ctx, "blobs/index/0123456789abcdef0123456789abcdef", []byte("junk")); err != nil {
		t.Fatal(err)
	}
	casMustGet(t, casOpen(t, st), ref, []byte("fine"))
	good, bad, other := casVerify(t, casOpen(t, st))
	if good != 1 || len(bad) != 0 || len(other) != 4 {
		t.Fatalf("Verify: %d good, bad %v, other %v; want 1 good and 4 stray objects", good, bad, other)
	}
	n := 0
	for _, err := range s.Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("Walk yielded %d refs with stray objects around, want 1", n)
	}
}

// casClock is a settable clock for GC.
type casClock struct{ t atomic.Int64 }

func (c *casClock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *casClock) set(t time.Time)         { c.t.Store(t.UnixNano()) }
func (c *casClock) advance(d time.Duration) { c.t.Add(int64(d)) }

func casRoots(refs ...cas.Ref) func(func(cas.Ref, error) bool) {
	return func(yield func(cas.Ref, error) bool) {
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func casTestGC(t *testing.T, nb func(testing.TB) backend.Storage) {
	casTestGCSweep(t, nb)
	casTestGCEdges(t, nb)
}

// casGCFixture is a store with blobs live and dead, loose and packed: a
// pack mostly live, one mostly dead and one all dead.
type casGCFixture struct {
	st                     backend.Storage
	s                      *cas.Store
	clock                  *casClock
	data                   map[cas.Ref][]byte
	liveLoose, deadLoose   cas.Ref
	livePacked, deadPacked []cas.Ref // one pack, mostly live
	sparseLive             cas.Ref   // one pack, mostly dead
	sparseDead             []cas.Ref
	allDead                []cas.Ref // one pack, all dead
}

// casGCSetup fills a store for casGCFixture, with a clock the test moves.
func casGCSetup(t *testing.T, nb func(testing.TB) backend.Storage) *casGCFixture {
	f := &casGCFixture{st: nb(t), clock: &casClock{}, data: map[cas.Ref][]byte{}}
	f.clock.set(time.Now())
	f.s = casOpen(t, f.st, cas.WithClock(f.clock.now), cas.WithGrace(time.Hour), cas.WithRepackBelow(0.5))
	put := func(d []byte) cas.Ref {
		r := casMustPut(t, f.s, d)
		f.data[r] = d
		return r
	}
	many := func(seed uint64, n, size int) []cas.Ref {
		ds := make([][]byte, n)
		for i := range ds {
			ds[i] = casJSON(size, seed*1000+uint64(i))
		}
		refs, err := f.s.PutMany(t.Context(), ds)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range refs {
			f.data[r] = ds[i]
		}
		return refs
	}
	f.liveLoose, f.deadLoose = put(casJSON(5000, 1)), put(casJSON(5000, 2))
	p := many(3, 10, 3000)
	f.livePacked, f.deadPacked = p[:9], p[9:]
	p = many(4, 10, 3000)
	f.sparseLive, f.sparseDead = p[0], p[1:]
	f.allDead = many(5, 5, 3000)
	return f
}

func (f *casGCFixture) live() []cas.Ref {
	return append([]cas.Ref{f.liveLoose, f.sparseLive}, f.livePacked...)
}

func (f *casGCFixture) dead() []cas.Ref {
	d := append([]cas.Ref{f.deadLoose}, f.deadPacked...)
	d = append(d, f.sparseDead...)
	return append(d, f.allDead...)
}

// casTestGCSweep checks what GC removes and keeps: the grace period, a dry
// run, a sweep with a repack, and no grace at all.
func casTestGCSweep(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	t.Run("grace-keeps-young", func(t *testing.T) {
		f := casGCSetup(t, nb)
		before := casFiles(t, f.st)
		rep, err := f.s.GC(ctx, casRoots(f.live()...))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Deleted) != 0 || rep.Young != len(f.dead()) || rep.Live != len(f.live()) {
			t.Fatalf("GC within grace = %+v; want nothing deleted, %d young", rep, len(f.dead()))
		}
		if after := casFiles(t, f.st); len(after) != len(before) {
			t.Fatalf("GC within grace changed objects %d -> %d", len(before), len(after))
		}
		for r, d := range f.data {
			casMustGet(t, f.s, r, d)
		}
	})
	t.Run("dry-run", func(t *testing.T) {
		f := casGCSetup(t, nb)
		f.clock.advance(2 * time.Hour)
		before := casFiles(t, f.st)
		rep, err := f.s.GC(ctx, casRoots(f.live()...), cas.GCDryRun())
		if err != nil {
			t.Fatal(err)
		}
		if !rep.DryRun || len(rep.Deleted) != len(f.dead()) || rep.Repacked != 1 {
			t.Fatalf("dry run = %+v; want %d deletions and 1 repack reported", rep, len(f.dead()))
		}
		after := casFiles(t, f.st)
		if len(after) != len(before) {
			t.Fatalf("dry run changed objects %d -> %d", len(before), len(after))
		}
		for name, size := range before {
			if after[name] != size {
				t.Fatalf("dry run changed %s", name)
			}
		}
		for r, d := range f.data {
			casMustGet(t, f.s, r, d)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		f := casGCSetup(t, nb)
		f.clock.advance(2 * time.Hour)
		packsBefore := len(casPacks(t, f.st))
		// Another process with the old pack indexes cached.
		stale := casOpen(t, f.st)
		casMustGet(t, stale, f.sparseLive, f.data[f.sparseLive])
		rep, err := f.s.GC(ctx, casRoots(f.live()...))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Deleted) != len(f.dead()) || rep.Kept != len(f.live()) || rep.Repacked != 1 || rep.Young != 0 {
			t.Fatalf("GC = %+v; want %d deleted, %d kept, 1 repacked", rep, len(f.dead()), len(f.live()))
		}
		for _, s := range []*cas.Store{f.s, casOpen(t, f.st), stale} {
			for _, r := range f.live() {
				casMustGet(t, s, r, f.data[r])
			}
			for _, r := range f.dead() {
				if ok, err := s.Has(ctx, r); ok || err != nil {
					t.Fatalf("Has(dead %v) after GC = %v, %v", r, ok, err)
				}
			}
		}
		// The all-dead pack is gone and the sparse one replaced: 3 -> 2.
		if n := len(casPacks(t, f.st)); n != packsBefore-1 {
			t.Fatalf("packs %d -> %d after GC, want %d", packsBefore, n, packsBefore-1)
		}
		if good := casVerifyClean(t, f.s); good != len(f.live()) {
			t.Fatalf("Verify after GC: %d good, want %d", good, len(f.live()))
		}
		// A second GC has nothing to do.
		rep, err = f.s.GC(ctx, casRoots(f.live()...))
		if err != nil || len(rep.Deleted) != 0 || rep.Repacked != 0 || len(rep.Removed) != 0 {
			t.Fatalf("second GC = %+v, %v; want nothing to do", rep, err)
		}
	})
	t.Run("no-grace", func(t *testing.T) {
		f := casGCSetup(t, nb)
		f.clock.set(time.Now().Add(time.Minute)) // after every modification time
		rep, err := f.s.GC(ctx, casRoots(f.live()...), cas.GCGrace(0))
		if err != nil || len(rep.Deleted) != len(f.dead()) {
			t.Fatalf("GC without grace = %+v, %v", rep, err)
		}
		for _, r := range f.live() {
			casMustGet(t, f.s, r, f.data[r])
		}
	})
}

// casTestGCEdges checks GC with no roots, with roots that fail, and the
// leftovers of interrupted writes.
func casTestGCEdges(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	t.Run("no-roots", func(t *testing.T) {
		f := casGCSetup(t, nb)
		f.clock.advance(2 * time.Hour)
		if _, err := f.s.GC(ctx, casRoots()); err != nil {
			t.Fatal(err)
		}
		if files := casFiles(t, f.st); len(files) != 0 {
			t.Fatalf("GC with no roots left %v", files)
		}
	})
	t.Run("roots-error", func(t *testing.T) {
		f := casGCSetup(t, nb)
		f.clock.advance(2 * time.Hour)
		boom := errors.New("cannot read sessions")
		roots := func(yield func(cas.Ref, error) bool) {
			if yield(f.liveLoose, nil) {
				yield(cas.Ref{}, boom)
			}
		}
		before := casFiles(t, f.st)
		if _, err := f.s.GC(ctx, roots); !errors.Is(err, boom) {
			t.Fatalf("GC with failing roots = %v", err)
		}
		if after := casFiles(t, f.st); len(after) != len(before) {
			t.Fatalf("GC with failing roots removed objects")
		}
	})
	t.Run("leftovers", func(t *testing.T) {
		// A pack without an index (crash between the two) and a staging
		// object are removed once old, kept while young.
		f := casGCSetup(t, nb)
		for _, name := range []string{"blobs/packs/ab/ab000000000000000000000000000000", "blobs/tmp/cd000000000000000000000000000000"} {
			if err := f.st.WriteFile(ctx, name, []byte("leftover")); err != nil {
				t.Fatal(err)
			}
		}
		all := append(f.live(), f.dead()...)
		rep, err := f.s.GC(ctx, casRoots(all...))
		if err != nil || len(rep.Removed) != 0 {
			t.Fatalf("GC within grace = %+v, %v; want leftovers kept", rep, err)
		}
		f.clock.advance(2 * time.Hour)
		rep, err = f.s.GC(ctx, casRoots(all...))
		if err != nil || len(rep.Removed) != 2 || len(rep.Deleted) != 0 {
			t.Fatalf("GC = %+v, %v; want the 2 leftovers removed", rep, err)
		}
		if files := casFiles(t, f.st); files["blobs/tmp/cd000000000000000000000000000000"] != 0 || files["blobs/packs/ab/ab000000000000000000000000000000"] != 0 {
			t.Fatalf("leftovers still there: %v", files)
		}
		casVerifyClean(t, f.s)
	})
}

func casTestConcurrent(t *testing.T, nb func(testing.TB) backend.Storage) {
	ctx := t.Context()
	st := nb(t)
	// Two stores on one backend stand for two processes: no shared cache,
	// no shared pools.
	stores := []*cas.Store{casOpen(t, st, cas.WithStreamBuffer(256<<10)), casOpen(t, st, cas.WithStreamBuffer(256<<10))}
	small, big := casJSON(20<<10, 1), casJSON(2<<20, 2)
	packed := [][]byte{casJSON(3000, 3), casJSON(4000, 4)}
	want := map[cas.Ref][]byte{}
	for _, d := range append([][]byte{small, big}, packed...) {
		r, _ := cas.Sum(cas.SHA256, d)
		want[r] = d
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		s := stores[i%2]
		wg.Go(func() {
			var err error
			switch i % 4 {
			case 0:
				_, err = s.Put(ctx, small)
			case 1:
				_, err = s.PutReader(ctx, bytes.NewReader(big))
			case 2:
				_, err = s.PutMany(ctx, packed)
			case 3:
				_, err = s.Put(ctx, big)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent put: %v", err)
		}
	}
	for _, s := range append(stores, casOpen(t, st)) {
		for r, d := range want {
			casMustGet(t, s, r, d)
		}
	}
	good, bad, other := casVerify(t, stores[0])
	if len(bad) != 0 || len(other) != 0 || good < len(want) {
		t.Fatalf("Verify after concurrent puts: %d good, %v, %v", good, bad, other)
	}
	for name := range casFiles(t, st) {
		if strings.HasPrefix(name, "blobs/tmp/") {
			t.Fatalf("staging object left behind: %s", name)
		}
	}
	n := 0
	for _, err := range stores[1].Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("Walk after concurrent puts yielded %d refs, want %d", n, len(want))
	}
}

func casTestContext(t *testing.T, nb func(testing.TB) backend.Storage) {
	st := nb(t)
	s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
	ref := casMustPut(t, s, []byte("here"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, []byte("new")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put(cancelled) = %v", err)
	}
	if _, err := s.PutReader(ctx, casStream(1<<20, 1, true)); !errors.Is(err, context.Canceled) {
		t.Errorf("PutReader(cancelled) = %v", err)
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Get(cancelled) = %v", err)
	}
	if _, err := s.GC(ctx, casRoots()); !errors.Is(err, context.Canceled) {
		t.Errorf("GC(cancelled) = %v", err)
	}
	casMustGet(t, s, ref, []byte("here"))
	if ok, _ := s.Has(t.Context(), ref); !ok {
		t.Error("GC with a cancelled context removed a blob")
	}
}

// casOps are the store operations the crash and fault cases interrupt. Each
// returns the blobs it tried to store.
func casOps() []struct {
	name string
	opts []cas.Option
	run  func(ctx context.Context, s *cas.Store) error
	data [][]byte
} {
	small, json, staged := casJSON(100, 1), casJSON(64<<10, 2), casJSON(600<<10, 3)
	batch := make([][]byte, 12)
	for i := range batch {
		batch[i] = casJSON(3000+i, uint64(10+i))
	}
	return []struct {
		name string
		opts []cas.Option
		run  func(ctx context.Context, s *cas.Store) error
		data [][]byte
	}{
		{"Put/small", nil, func(ctx context.Context, s *cas.Store) error { _, err := s.Put(ctx, small); return err }, [][]byte{small}},
		{"Put/json", nil, func(ctx context.Context, s *cas.Store) error { _, err := s.Put(ctx, json); return err }, [][]byte{json}},
		{"PutReader/staged", []cas.Option{cas.WithStreamBuffer(64 << 10)}, func(ctx context.Context, s *cas.Store) error {
			_, err := s.PutReader(ctx, bytes.NewReader(staged))
			return err
		}, [][]byte{staged}},
		{"Batch", []cas.Option{cas.WithPackSize(12 << 10)}, func(ctx context.Context, s *cas.Store) error {
			_, err := s.PutMany(ctx, batch)
			return err
		}, batch},
	}
}

// casCheckAfter checks the state a crash or a fault left: every blob absent or
// whole, nothing corrupt, and the store usable again.
func casCheckAfter(tb testing.TB, st backend.Storage, data [][]byte, opts []cas.Option) (present int) {
	tb.Helper()
	s := casOpen(tb, st, opts...)
	ctx := tb.Context()
	for _, d := range data {
		ref, _ := cas.Sum(cas.SHA256, d)
		got, err := s.Get(ctx, ref)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			tb.Fatalf("Get(%v) after the failure: %v", ref, err)
		case !bytes.Equal(got, d):
			tb.Fatalf("Get(%v) after the failure returned other bytes", ref)
		default:
			present++
		}
	}
	casVerifyClean(tb, s)
	for _, d := range data {
		ref := casMustPut(tb, s, d)
		casMustGet(tb, s, ref, d)
	}
	if _, err := s.PutMany(ctx, data); err != nil {
		tb.Fatalf("PutMany after the failure: %v", err)
	}
	casVerifyClean(tb, s)
	return present
}

var errCASCrashed = errors.New("simulated crash")

// casMutating names the faulty ops that change a store.
func casMutating(op string) bool {
	switch op {
	case "WriteFile", "CreateFile", "WriteFrom", "OpenWriter", "Rename", "Unlink", "EnsureDir", "Writer.Write", "Writer.Sync", "Writer.Close":
		return true
	}
	return false
}

func casTestCrash(t *testing.T, nb func(testing.TB) backend.Storage) {
	if _, ok := nb(t).(backend.Crasher); !ok {
		t.Skip("backend cannot simulate a crash (not a backend.Crasher)")
	}
	for _, op := range casOps() {
		t.Run(op.name, func(t *testing.T) {
			// Crash before the 1st, 2nd, ... change the operation makes,
			// until it completes without reaching the crash point.
			for k := 1; ; k++ {
				inner := nb(t)
				var calls atomic.Int64
				var crashed atomic.Bool
				st := faulty.New(inner, faulty.WithHook(func(o, name string) error {
					if crashed.Load() {
						return errCASCrashed // the process is gone
					}
					if casMutating(o) && calls.Add(1) == int64(k) {
						crashed.Store(true)
						inner.(backend.Crasher).Crash()
						return errCASCrashed
					}
					return nil
				}))
				s := casOpen(t, st, op.opts...)
				err := op.run(t.Context(), s)
				if !crashed.Load() {
					if err != nil {
						t.Fatalf("%s without a crash: %v", op.name, err)
					}
					if k == 1 {
						t.Fatalf("%s made no change to storage", op.name)
					}
					casCheckAfter(t, inner, op.data, op.opts)
					break
				}
				if err == nil {
					t.Fatalf("crash at change %d: %s reported success", k, op.name)
				}
				casCheckAfter(t, inner, op.data, op.opts)
			}
		})
	}
	t.Run("GC", func(t *testing.T) {
		// A crash at any change GC makes (sweeping, repacking, removing
		// packs) loses no live blob and corrupts nothing; the next GC
		// finishes the job.
		for k := 1; ; k++ {
			inner := nb(t)
			clock := &casClock{}
			clock.set(time.Now())
			opts := []cas.Option{cas.WithClock(clock.now), cas.WithPackSize(16 << 10)}
			s := casOpen(t, inner, opts...)
			var live []cas.Ref
			data := map[cas.Ref][]byte{}
			for i := range 3 {
				batch := make([][]byte, 8)
				for j := range batch {
					batch[j] = casJSON(2000+j, uint64(100*i+j))
				}
				refs, err := s.PutMany(t.Context(), batch)
				if err != nil {
					t.Fatal(err)
				}
				for j, r := range refs {
					data[r] = batch[j]
				}
				live = append(live, refs[:i*3]...) // pack 0 dead, 1 sparse, 2 mostly live
			}
			loose := casMustPut(t, s, casJSON(5000, 999))
			data[loose] = casJSON(5000, 999)
			casMustPut(t, s, casJSON(5000, 998)) // dead
			clock.advance(2 * time.Hour)

			var calls atomic.Int64
			var crashed atomic.Bool
			st := faulty.New(inner, faulty.WithHook(func(o, name string) error {
				if crashed.Load() {
					return errCASCrashed
				}
				if casMutating(o) && calls.Add(1) == int64(k) {
					crashed.Store(true)
					inner.(backend.Crasher).Crash()
					return errCASCrashed
				}
				return nil
			}))
			rep, err := casOpen(t, st, opts...).GC(t.Context(), casRoots(append(live, loose)...))
			after := casOpen(t, inner, opts...)
			for _, r := range append(live, loose) {
				casMustGet(t, after, r, data[r])
			}
			casVerifyClean(t, after)
			if !crashed.Load() {
				if err != nil || rep.Repacked != 1 || len(rep.Deleted) != 1+8+5+2 || k < 5 {
					t.Fatalf("GC without a crash = %+v, %v after %d changes; want 1 repack, 16 deletions", rep, err, k-1)
				}
				break
			}
			if _, err := after.GC(t.Context(), casRoots(append(live, loose)...)); err != nil {
				t.Fatalf("GC after a crash at change %d: %v", k, err)
			}
			rep, err = after.GC(t.Context(), casRoots(append(live, loose)...))
			if err != nil || len(rep.Removed) != 0 || len(rep.Deleted) != 0 || rep.Repacked != 0 {
				t.Fatalf("third GC after a crash at change %d = %+v, %v; want nothing left to do", k, rep, err)
			}
			for _, r := range append(live, loose) {
				casMustGet(t, after, r, data[r])
			}
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		// A crash while a staged put streams its object.
		for _, after := range []int64{0, 10, 100 << 10} {
			inner := nb(t)
			st := &casCrashStream{Storage: inner, after: after}
			s := casOpen(t, st, cas.WithStreamBuffer(64<<10))
			data := casJSON(1<<20, 5)
			if _, err := s.PutReader(t.Context(), bytes.NewReader(data)); err == nil {
				t.Fatalf("crash after %d streamed bytes: PutReader succeeded", after)
			}
			if n := casCheckAfter(t, inner, [][]byte{data}, nil); n != 0 {
				t.Fatalf("a put that crashed mid-stream left its blob")
			}
		}
	})
}

// casCrashStream crashes its backend while a WriteFrom is copying.
type casCrashStream struct {
	backend.Storage
	after int64
}

func (c *casCrashStream) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	return c.Storage.WriteFrom(ctx, name, &casCrashReader{r: r, left: c.after, crash: c.Storage.(backend.Crasher).Crash})
}

type casCrashReader struct {
	r     io.Reader
	left  int64
	crash func()
}

func (r *casCrashReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		r.crash()
		return 0, errCASCrashed
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.r.Read(p)
	r.left -= int64(n)
	return n, err
}

func casTestFaults(t *testing.T, nb func(testing.TB) backend.Storage) {
	for _, op := range casOps() {
		t.Run(op.name, func(t *testing.T) {
			// Fail the 1st, 2nd, ... call of any kind, reads included.
			for k := 1; ; k++ {
				inner := nb(t)
				st := faulty.New(inner, faulty.FailNth(k, nil))
				s := casOpen(t, st, op.opts...)
				err := op.run(t.Context(), s)
				if st.Faults() == 0 {
					if err != nil {
						t.Fatalf("%s without a fault: %v", op.name, err)
					}
					break
				}
				if err == nil {
					// A failed cleanup or dedup probe may be survivable;
					// what was stored must still be whole.
					t.Logf("fault at call %d: %s succeeded anyway", k, op.name)
				}
				st.Clear()
				casCheckAfter(t, st, op.data, op.opts)
			}
		})
	}
}
