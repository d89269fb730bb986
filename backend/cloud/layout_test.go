package cloud_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
)

// newRaw returns a Storage and the bucket under it, to look at or meddle
// with the objects directly.
func newRaw(t *testing.T, opts ...cloud.Option) (*cloud.Storage, *blob.Bucket) {
	t.Helper()
	b := memblob.OpenBucket(nil)
	// Folds delete what they replace at once: these tests look at what
	// is left.
	st, err := cloud.New(b, append([]cloud.Option{cloud.WithFoldGrace(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, b
}

func keys(t *testing.T, b *blob.Bucket) []string {
	t.Helper()
	var out []string
	it := b.List(nil)
	for {
		o, err := it.Next(t.Context())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Key)
	}
}

func appendSynced(t *testing.T, st backend.Storage, name string, recs ...string) {
	t.Helper()
	w, err := st.OpenWriter(t.Context(), name, backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := w.Write([]byte(r)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantFile(t *testing.T, st backend.Storage, name, want string) {
	t.Helper()
	got, err := st.ReadFile(t.Context(), name)
	if err != nil || string(got) != want {
		t.Fatalf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
	}
	fi, err := st.Stat(t.Context(), name)
	if err != nil || fi.Size != int64(len(want)) {
		t.Fatalf("Stat(%s) = %+v, %v; want size %d", name, fi, err, len(want))
	}
}

// A WriteFile over an appended file leaves the name object and one write
// base: every segment it replaced is gone, and the content is the new one.
func TestWriteFileOverSegments(t *testing.T) {
	st, b := newRaw(t)
	appendSynced(t, st, "d/log", "a\n", "b\n", "c\n")
	if err := st.WriteFile(t.Context(), "d/log", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "d/log", "new\n")
	// The name, the empty segment that claimed the base's number, the base.
	got := keys(t, b)
	if len(got) != 3 || !strings.HasSuffix(got[1], "w") || got[2] != "d/log" {
		t.Fatalf("objects after WriteFile = %q, want the name, a claim and one write base", got)
	}
	appendSynced(t, st, "d/log", "more\n")
	wantFile(t, st, "d/log", "new\nmore\n")
}

// A writer that was appending when another WriteFile replaced the file fails
// at its next Sync instead of adding its bytes to the new content.
func TestWriterLosesToWriteFile(t *testing.T) {
	st, _ := newRaw(t)
	appendSynced(t, st, "f", "one\n")
	w, err := st.OpenWriter(t.Context(), "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := st.WriteFile(t.Context(), "f", []byte("replaced\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("Sync after a replacement = %v, want ErrLocked", err)
	}
	wantFile(t, st, "f", "replaced\n")
}

// Segments left by an unlink that stopped between its deletes (the name
// object went first) never come back as the content of a new file.
func TestLeftoversDoNotResurrect(t *testing.T) {
	st, b := newRaw(t)
	appendSynced(t, st, "f", "secret\n", "old\n")
	if err := b.Delete(t.Context(), "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(t.Context(), "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after the name object went = %v, want not exist", err)
	}
	appendSynced(t, st, "f", "fresh\n")
	wantFile(t, st, "f", "fresh\n")
}

// A compaction folds the segments into one base; a reader that started
// before it reads on at the same offset and gets the same bytes.
func TestCompactionUnderReader(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactAt(2))
	var want bytes.Buffer
	w, err := st.OpenWriter(t.Context(), "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		rec := bytes.Repeat([]byte{byte('a' + i)}, 1000)
		want.Write(rec)
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := st.Open(t.Context(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 1500)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // 5 segments > 2: compacts
		t.Fatal(err)
	}
	got := keys(t, b)
	if len(got) != 2 || !strings.HasSuffix(got[0], "c") {
		t.Fatalf("objects after compaction = %q, want the name and one compaction base", got)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading on after a compaction: %v", err)
	}
	if all := append(head, rest...); !bytes.Equal(all, want.Bytes()) {
		t.Fatalf("read %d bytes across a compaction, want the %d written", len(all), want.Len())
	}
	wantFile(t, st, "f", want.String())
}

// An element ending in ".." is a directory like any other on every bucket.
func TestDotDotSuffixElements(t *testing.T) {
	for _, open := range []func(t *testing.T) backend.Storage{
		func(t *testing.T) backend.Storage { st, _ := newRaw(t); return st },
		func(t *testing.T) backend.Storage {
			st, err := cloud.OpenFileblob(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	} {
		st := open(t)
		for _, name := range []string{"a../b", "a../c../d", "x.."} {
			if err := st.WriteFile(t.Context(), name, []byte(name)); err != nil {
				t.Fatal(err)
			}
			wantFile(t, st, name, name)
		}
		var names []string
		for fi, err := range st.List(t.Context(), "a..") {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, fi.Name)
		}
		if !slices.Equal(names, []string{"a../b", "a../c.."}) {
			t.Fatalf("List(a..) = %q", names)
		}
	}
}

// A writer that stayed open while a later writer appended and compacted the
// file fails at its next Sync, though the number it takes was freed by the
// compaction: its bytes would be hidden under the new base.
func TestStaleWriterAfterCompaction(t *testing.T) {
	st, _ := newRaw(t, cloud.WithCompactAt(1))
	ctx := t.Context()
	a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	appendSynced(t, st, "f", "b1\n", "b2\n", "b3\n") // opens, appends, compacts
	if _, err := a.Write([]byte("a1\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("a stale writer's Sync = %v, want ErrLocked", err)
	}
	wantFile(t, st, "f", "b1\nb2\nb3\n")
}

// A writer's own compactions (an open writer folding its segments) never
// trip its own staleness check, and still catch a stale writer.
func TestCompactionWhileOpen(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactOpen(1), cloud.WithCompactAt(1000))
	stale, w := twoWriters(t, st)
	var want strings.Builder
	for i := range 20 {
		rec := strings.Repeat(string(rune('a'+i)), 10+i)
		want.WriteString(rec)
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("Sync %d of a writer compacting its own file: %v", i, err)
		}
	}
	if n := len(keys(t, b)); n > 16+2 { // at most 16n segments, a base, the name
		t.Fatalf("an open writer that compacts left %d objects: %q", n, keys(t, b))
	}
	wantFenced(t, st, stale, w, want.String())
}

// A stale writer that closes with nothing to send folds nothing: the newer
// writer's objects are not its to compact.
func TestStaleCloseDoesNotCompact(t *testing.T) {
	st, _ := newRaw(t, cloud.WithCompactAt(0))
	ctx := t.Context()
	stale, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{"one\n", "two\n"} {
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := stale.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("the newer writer after a stale one closed: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", "one\ntwo\nthree\n")
}

// An open writer on a big file folds its segments into tiers, not the
// whole file: the file stays a few objects per level, every byte is read
// back in order, and a reader that started before a fold reads on at the
// same offset.
func TestTiers(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactOpen(2))
	ctx := t.Context()
	base := bytes.Repeat([]byte("base\n"), 20000)
	if err := st.WriteFile(ctx, "f", base); err != nil {
		t.Fatal(err)
	}
	want := bytes.NewBuffer(slices.Clone(base))
	w, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r io.ReadCloser
	var head []byte
	tiers, atOpen := 0, 0
	for i := range 200 {
		rec := fmt.Appendf(nil, "record %d\n", i)
		want.Write(rec)
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("Sync %d: %v", i, err)
		}
		if i == 100 {
			// A reader part-way through the appended bytes.
			atOpen = want.Len()
			if r, err = st.Open(ctx, "f"); err != nil {
				t.Fatal(err)
			}
			head = make([]byte, len(base)+500)
			if _, err := io.ReadFull(r, head); err != nil {
				t.Fatal(err)
			}
		}
		got := keys(t, b)
		// The name, at most one part per level (8 levels), the claim.
		if len(got) > 1+8+1 {
			t.Fatalf("after %d syncs the file is %d objects: %q", i+1, len(got), got)
		}
		for _, k := range got {
			if strings.Contains(k, "t") && strings.HasPrefix(k, ".~seg/") {
				tiers++
			}
		}
		if i%37 == 0 {
			wantFile(t, st, "f", want.String())
		}
	}
	if tiers == 0 {
		t.Fatal("no tier was made: the writer folded the whole file")
	}
	rest, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := append(head, rest...); !bytes.Equal(got, want.Bytes()[:atOpen]) {
		t.Fatalf("a reader across folds read %d bytes, want the %d the file held when it opened", len(got), atOpen)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", want.String())
	appendSynced(t, st, "f", "after\n")
	wantFile(t, st, "f", want.String()+"after\n")
}

// A fold whose deletes did not happen (a crash, a failed request) leaves
// objects the tier holds: readers skip them, and the next writer goes on.
func TestTierLeftoversSkipped(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactOpen(2))
	ctx := t.Context()
	if err := st.WriteFile(ctx, "f", bytes.Repeat([]byte("b"), 10000)); err != nil {
		t.Fatal(err)
	}
	w, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("b", 10000)
	var segs = map[string][]byte{}
	for i := range 3 {
		rec := fmt.Sprintf("r%d\n", i)
		want += rec
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys(t, b) {
			if data, err := b.ReadAll(ctx, k); err == nil && strings.HasPrefix(k, ".~seg/") {
				segs[k] = data
			}
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	// Put back every segment the folds deleted.
	for k, data := range segs {
		if err := b.WriteAll(ctx, k, data, nil); err != nil {
			t.Fatal(err)
		}
	}
	wantFile(t, st, "f", want)
	if _, err := w.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", want+"more\n")
}

// wantFenced checks that stale fails at its next Sync, then closes w and
// checks that f holds want.
func wantFenced(t *testing.T, st backend.Storage, stale, w backend.Writer, want string) {
	t.Helper()
	if _, err := stale.Write([]byte("stale")); err != nil {
		t.Fatal(err)
	}
	if err := stale.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("the stale writer's Sync = %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", want)
}

// twoWriters opens a writer on f, then a second one that makes the first
// stale; the stale one is closed when the test ends.
func twoWriters(t *testing.T, st backend.Storage) (stale, w backend.Writer) {
	t.Helper()
	stale, err := st.OpenWriter(t.Context(), "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stale.Close() })
	w, err = st.OpenWriter(t.Context(), "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return stale, w
}
