package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/trovekit/trove/backend"
)

func testWriteFile(t *testing.T, nb newStorage) {
	t.Run("round-trip", func(t *testing.T) {
		s := nb(t)
		data := pattern(10000, 1)
		mustWrite(t, s, "f", data)
		wantContent(t, s, "f", data)
	})
	t.Run("zero-length", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "empty", nil)
		got, err := s.ReadFile(t.Context(), "empty")
		if err != nil || len(got) != 0 {
			t.Errorf("ReadFile(empty) = %d bytes, %v; want 0 bytes", len(got), err)
		}
		info, err := s.Stat(t.Context(), "empty")
		if err != nil || info.Size != 0 || info.IsDir {
			t.Errorf("Stat(empty) = %+v, %v", info, err)
		}
		wantList(t, s, ".", "empty")
	})
	t.Run("overwrite", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", pattern(5000, 1))
		mustWrite(t, s, "f", []byte("short"))
		wantContent(t, s, "f", []byte("short"))
		long := pattern(7000, 2)
		mustWrite(t, s, "f", long)
		wantContent(t, s, "f", long)
		mustWrite(t, s, "f", nil)
		wantContent(t, s, "f", nil)
		wantTree(t, s, "f")
	})
	t.Run("creates-parents", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "a/b/c/f", []byte("x"))
		for _, d := range []string{"a", "a/b", "a/b/c"} {
			info, err := s.Stat(t.Context(), d)
			if err != nil || !info.IsDir {
				t.Errorf("Stat(%q) = %+v, %v; want a directory", d, info, err)
			}
		}
		wantTree(t, s, "a", "a/b", "a/b/c", "a/b/c/f")
	})
	t.Run("caller-buffer-reusable", func(t *testing.T) {
		// The backend must not keep the caller's slice.
		s := nb(t)
		buf := []byte("original")
		mustWrite(t, s, "f", buf)
		copy(buf, "XXXXXXXX")
		wantContent(t, s, "f", []byte("original"))
		got := mustRead(t, s, "f")
		copy(got, "YYYYYYYY")
		wantContent(t, s, "f", []byte("original"))
	})
	t.Run("atomic-under-readers", func(t *testing.T) {
		s := nb(t)
		testReplaceAtomic(t, s, func(v int, data []byte) error {
			return s.WriteFile(t.Context(), "f", data)
		})
		wantTree(t, s, "f")
	})
	t.Run("concurrent-same-name", func(t *testing.T) {
		s := nb(t)
		const writers, rounds = 4, 3
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for range rounds {
					if err := s.WriteFile(t.Context(), "same", version(g)); err != nil {
						t.Errorf("WriteFile(same) by writer %d: %v", g, err)
						return
					}
				}
			})
		}
		wg.Wait()
		got := mustRead(t, s, "same")
		if _, err := checkVersion(got, writers); err != nil {
			t.Errorf("after concurrent writes: %v", err)
		}
		wantTree(t, s, "same")
	})
}

// version is the content of version v for atomicity cases: one byte value
// repeated, a length of its own, so a mix of two versions shows.
func version(v int) []byte {
	return bytes.Repeat([]byte{byte('A' + v)}, 8<<10+v*331)
}

// checkVersion says which version b is, or why it is none of 0..n-1 whole.
func checkVersion(b []byte, n int) (int, error) {
	if len(b) == 0 {
		return -1, errors.New("empty content")
	}
	v := int(b[0]) - 'A'
	if v < 0 || v >= n {
		return -1, fmt.Errorf("unknown version byte %q", b[0])
	}
	if want := version(v); !bytes.Equal(b, want) {
		return -1, fmt.Errorf("a mix of versions: %s", diff(b, want))
	}
	return v, nil
}

// testReplaceAtomic writes versions 0..n-1 of "f" with replace while
// readers keep reading it: each read must be one whole version, and a
// reader never goes back to an older one.
func testReplaceAtomic(t *testing.T, s backend.Storage, replace func(v int, data []byte) error) {
	const versions, readers = 20, 3
	mustWrite(t, s, "f", version(0))
	done := make(chan struct{})
	var wg sync.WaitGroup
	// Stop the readers even when the test fails early (t.Fatal),
	// so none reports after the test has ended.
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop()
	for r := range readers {
		wg.Go(func() {
			last := 0
			for {
				finished := false
				select {
				case <-done:
					finished = true // one last read after the final write
				default:
				}
				var got []byte
				var err error
				if r%2 == 0 {
					got, err = s.ReadFile(t.Context(), "f")
				} else {
					got, err = readAll(s.Open(t.Context(), "f"))
				}
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				v, err := checkVersion(got, versions)
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				if v < last {
					t.Errorf("reader %d saw version %d after %d", r, v, last)
					return
				}
				last = v
				if finished {
					if v != versions-1 {
						t.Errorf("reader %d: after the last write read version %d, want %d", r, v, versions-1)
					}
					return
				}
			}
		})
	}
	for v := 1; v < versions; v++ {
		if err := replace(v, version(v)); err != nil {
			t.Errorf("replace with version %d: %v", v, err)
			break
		}
	}
	stop()
	wantContent(t, s, "f", version(versions-1))
}

func testWriteFrom(t *testing.T, nb newStorage) {
	t.Run("streamed", func(t *testing.T) {
		s := nb(t)
		data := pattern(1<<20+17, 3)
		src := newSource(data)
		n, err := s.WriteFrom(t.Context(), "a/b/f", src)
		if err != nil || n != int64(len(data)) {
			t.Fatalf("WriteFrom = %d, %v; want %d, nil", n, err, len(data))
		}
		wantContent(t, s, "a/b/f", data)
		wantTree(t, s, "a", "a/b", "a/b/f")
		if c := src.closed.Load(); c != 0 {
			t.Errorf("the backend closed the source reader %d times", c)
		}
	})
	t.Run("empty", func(t *testing.T) {
		s := nb(t)
		n, err := s.WriteFrom(t.Context(), "f", strings.NewReader(""))
		if err != nil || n != 0 {
			t.Fatalf("WriteFrom(empty) = %d, %v", n, err)
		}
		wantContent(t, s, "f", nil)
		wantList(t, s, ".", "f")
	})
	t.Run("odd-readers", func(t *testing.T) {
		s := nb(t)
		data := pattern(3001, 4)
		readers := map[string]io.Reader{
			"one-byte":      iotest.OneByteReader(bytes.NewReader(data)),
			"half":          iotest.HalfReader(bytes.NewReader(data)),
			"data-with-eof": iotest.DataErrReader(bytes.NewReader(data)),
		}
		for name, r := range readers {
			n, err := s.WriteFrom(t.Context(), name, r)
			if err != nil || n != int64(len(data)) {
				t.Errorf("WriteFrom(%s) = %d, %v", name, n, err)
				continue
			}
			wantContent(t, s, name, data)
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", pattern(9000, 1))
		if _, err := s.WriteFrom(t.Context(), "f", strings.NewReader("new")); err != nil {
			t.Fatalf("WriteFrom: %v", err)
		}
		wantContent(t, s, "f", []byte("new"))
		wantTree(t, s, "f")
	})
	failing := func(data []byte, after int) *sourceReader {
		src := newSource(data)
		src.failAfter, src.failErr = after, errBoom
		return src
	}
	t.Run("failing-reader/new-file", func(t *testing.T) {
		s := nb(t)
		_, err := s.WriteFrom(t.Context(), "d/f", failing(pattern(200<<10, 5), 100<<10))
		if !errors.Is(err, errBoom) {
			t.Errorf("WriteFrom with a failing reader = %v, want an error wrapping the reader's", err)
		}
		wantMissing(t, s, "d/f")
		for _, n := range walkNames(t, s) {
			if n != "d" {
				t.Errorf("a failed WriteFrom left %q visible", n)
			}
		}
	})
	t.Run("failing-reader/replace", func(t *testing.T) {
		s := nb(t)
		old := pattern(5000, 6)
		mustWrite(t, s, "f", old)
		_, err := s.WriteFrom(t.Context(), "f", failing(pattern(200<<10, 7), 100<<10))
		if !errors.Is(err, errBoom) {
			t.Errorf("WriteFrom with a failing reader = %v, want an error wrapping the reader's", err)
		}
		wantContent(t, s, "f", old)
		wantTree(t, s, "f")
	})
	t.Run("failing-reader/first-read", func(t *testing.T) {
		s := nb(t)
		_, err := s.WriteFrom(t.Context(), "f", failing(pattern(10, 5), 0))
		if !errors.Is(err, errBoom) {
			t.Errorf("WriteFrom with a failing reader = %v, want an error wrapping the reader's", err)
		}
		wantTree(t, s)
	})
	t.Run("cancelled-midway", func(t *testing.T) {
		s := nb(t)
		old := []byte("old content")
		mustWrite(t, s, "f", old)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		src := newSource(pattern(512<<10, 8))
		src.chunk = 32 << 10
		src.onRead = func(off int) {
			if off >= 32<<10 {
				cancel()
			}
		}
		_, err := s.WriteFrom(ctx, "f", src)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("WriteFrom cancelled midway = %v, want context.Canceled", err)
		}
		wantContent(t, s, "f", old)
		wantTree(t, s, "f")
	})
}

func openWriter(tb testing.TB, s backend.Storage, name string, opt backend.WriterOptions) backend.Writer {
	tb.Helper()
	w, err := s.OpenWriter(tb.Context(), name, opt)
	if err != nil {
		tb.Fatalf("OpenWriter(%q, %+v): %v", name, opt, err)
	}
	return w
}

func mustWriteTo(tb testing.TB, w backend.Writer, data []byte) {
	tb.Helper()
	n, err := w.Write(data)
	if err != nil || n != len(data) {
		tb.Fatalf("Write(%d bytes) = %d, %v", len(data), n, err)
	}
}

func mustSync(tb testing.TB, w backend.Writer) {
	tb.Helper()
	if err := w.Sync(); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
}

func mustClose(tb testing.TB, w backend.Writer) {
	tb.Helper()
	if err := w.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

func testOpenWriter(t *testing.T, nb newStorage) {
	testOpenWriterAppend(t, nb)
	testOpenWriterModes(t, nb)
	testOpenWriterLifecycle(t, nb)
}

// testOpenWriterAppend checks appends: what Sync and Close make visible, across
// writers and after a WriteFile replaced the file.
func testOpenWriterAppend(t *testing.T, nb newStorage) {
	t.Run("empty-file", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustClose(t, w)
		wantContent(t, s, "f", nil)
		wantList(t, s, ".", "f")
		info, err := s.Stat(t.Context(), "f")
		if err != nil || info.Size != 0 || info.IsDir {
			t.Errorf("Stat(f) = %+v, %v", info, err)
		}
	})
	t.Run("close-makes-visible", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("hello "))
		mustWriteTo(t, w, []byte("world"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("hello world"))
	})
	t.Run("sync-visible-to-new-reader", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		defer w.Close()
		mustWriteTo(t, w, []byte("first;"))
		mustSync(t, w)
		wantContent(t, s, "f", []byte("first;"))
		got, err := readAll(s.Open(t.Context(), "f"))
		if err != nil || string(got) != "first;" {
			t.Errorf("Open after Sync = %q, %v", got, err)
		}
		mustWriteTo(t, w, []byte("second;"))
		mustSync(t, w)
		wantContent(t, s, "f", []byte("first;second;"))
		info, err := s.Stat(t.Context(), "f")
		if err != nil || info.Size != int64(len("first;second;")) {
			t.Errorf("Stat after Sync = %+v, %v", info, err)
		}
		if got, err := s.ReadPrefix(t.Context(), "f", 100); err != nil || string(got) != "first;second;" {
			t.Errorf("ReadPrefix after Sync = %q, %v", got, err)
		}
		mustClose(t, w)
		wantContent(t, s, "f", []byte("first;second;"))
	})
	t.Run("several-chunks", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		var all []byte
		for i := range 40 {
			chunk := pattern(100+i*37, uint64(i))
			all = append(all, chunk...)
			mustWriteTo(t, w, chunk)
			if i%10 == 9 {
				mustSync(t, w)
			}
		}
		mustClose(t, w)
		wantContent(t, s, "log", all)
		wantTree(t, s, "log")
	})
	t.Run("append-across-writers", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("ab"))
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("cd"))
		mustClose(t, w)
		w = openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("ef"))
		mustSync(t, w)
		mustClose(t, w)
		w = openWriter(t, s, "f", backend.WriterOptions{})
		mustClose(t, w)
		wantContent(t, s, "f", []byte("abcdef"))
	})
	t.Run("append-after-WriteFile-replace", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, pattern(3000, 1))
		mustSync(t, w)
		mustClose(t, w)
		mustWrite(t, s, "f", []byte("fresh"))
		w = openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("+tail"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("fresh+tail"))
	})
}

// testOpenWriterModes checks Truncate (with Overwrite too) and Exclusive,
// alone and together, and exclusive creators racing.
func testOpenWriterModes(t *testing.T, nb newStorage) {
	t.Run("truncate", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("abcdef"))
		w := openWriter(t, s, "f", backend.WriterOptions{Truncate: true})
		mustWriteTo(t, w, []byte("x"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("x"))
	})
	t.Run("truncate-without-write", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("abcdef"))
		w := openWriter(t, s, "f", backend.WriterOptions{Truncate: true})
		mustClose(t, w)
		wantContent(t, s, "f", nil)
	})
	t.Run("truncate-missing", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{Truncate: true})
		mustWriteTo(t, w, []byte("new"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("new"))
	})
	t.Run("truncate-overwrite", func(t *testing.T) {
		// Written over the old bytes or after emptying them, the file
		// holds what was written once closed, shorter or longer.
		over := backend.WriterOptions{Truncate: true, Overwrite: true}
		s := nb(t)
		mustWrite(t, s, "f", []byte("abcdef"))
		w := openWriter(t, s, "f", over)
		mustWriteTo(t, w, []byte("x"))
		mustWriteTo(t, w, []byte("y"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("xy"))
		w = openWriter(t, s, "f", over)
		mustWriteTo(t, w, []byte("0123456789"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("0123456789"))
		w = openWriter(t, s, "g", over)
		mustWriteTo(t, w, []byte("new"))
		mustClose(t, w)
		wantContent(t, s, "g", []byte("new"))
	})
	t.Run("exclusive/new", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{Exclusive: true})
		mustWriteTo(t, w, []byte("mine"))
		mustClose(t, w)
		wantContent(t, s, "f", []byte("mine"))
	})
	t.Run("exclusive/exists", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("theirs"))
		w, err := s.OpenWriter(t.Context(), "f", backend.WriterOptions{Exclusive: true})
		if w != nil {
			w.Close()
		}
		wantErr(t, "OpenWriter(f, Exclusive) of an existing file", err, fs.ErrExist, "f")
		wantContent(t, s, "f", []byte("theirs"))
	})
	t.Run("exclusive/fresh", func(t *testing.T) {
		// Fresh skips looks at the place, never the create's own check.
		s := nb(t)
		fresh := backend.WriterOptions{Exclusive: true, Fresh: true}
		w := openWriter(t, s, "d/f", fresh)
		mustWriteTo(t, w, []byte("mine"))
		mustClose(t, w)
		wantContent(t, s, "d/f", []byte("mine"))
		w, err := s.OpenWriter(t.Context(), "d/f", fresh)
		if w != nil {
			w.Close()
		}
		wantErr(t, "OpenWriter(d/f, Exclusive|Fresh) of an existing file", err, fs.ErrExist, "d/f")
		wantContent(t, s, "d/f", []byte("mine"))
	})
	t.Run("exclusive/exists-empty", func(t *testing.T) {
		s := nb(t)
		mustClose(t, openWriter(t, s, "f", backend.WriterOptions{}))
		w, err := s.OpenWriter(t.Context(), "f", backend.WriterOptions{Exclusive: true})
		if w != nil {
			w.Close()
		}
		wantErr(t, "OpenWriter(f, Exclusive) of an existing empty file", err, fs.ErrExist, "f")
	})
	t.Run("exclusive/exists-truncate", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("theirs"))
		w, err := s.OpenWriter(t.Context(), "f", backend.WriterOptions{Exclusive: true, Truncate: true})
		if w != nil {
			w.Close()
		}
		wantErr(t, "OpenWriter(f, Exclusive|Truncate) of an existing file", err, fs.ErrExist, "f")
		wantContent(t, s, "f", []byte("theirs"))
	})
	t.Run("exclusive/race", func(t *testing.T) {
		// Of writers racing to create one name exclusively, exactly one wins.
		s := nb(t)
		const racers = 4
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range racers {
			wg.Go(func() {
				// A lazy backend may find out at Close; a loser's error
				// must say fs.ErrExist wherever it comes.
				err := func() error {
					w, err := s.OpenWriter(t.Context(), "f", backend.WriterOptions{Exclusive: true})
					if err != nil {
						return err
					}
					if _, err := w.Write([]byte{byte('a' + i)}); err != nil {
						w.Close()
						return err
					}
					return w.Close()
				}()
				if err != nil {
					if !errors.Is(err, fs.ErrExist) {
						t.Errorf("racer %d: %v, want fs.ErrExist", i, err)
					}
					return
				}
				mu.Lock()
				won++
				mu.Unlock()
			})
		}
		wg.Wait()
		if won != 1 {
			t.Errorf("%d racers created f exclusively, want 1", won)
		}
		if got := mustRead(t, s, "f"); len(got) != 1 {
			t.Errorf("f = %q, want the winner's one byte", got)
		}
	})
}

// testOpenWriterLifecycle checks a writer used after Close, a second Close,
// the parents OpenWriter creates and a caller's buffer reused.
func testOpenWriterLifecycle(t *testing.T, nb newStorage) {
	t.Run("write-after-close", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("kept"))
		mustClose(t, w)
		if _, err := w.Write([]byte("lost")); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("Write after Close = %v, want ErrClosed", err)
		}
		if err := w.Sync(); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("Sync after Close = %v, want ErrClosed", err)
		}
		wantContent(t, s, "f", []byte("kept"))
	})
	t.Run("close-twice", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("once"))
		mustClose(t, w)
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		wantContent(t, s, "f", []byte("once"))
	})
	t.Run("creates-parents", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "a/b/f", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("x"))
		mustClose(t, w)
		wantTree(t, s, "a", "a/b", "a/b/f")
	})
	t.Run("writer-buffer-reusable", func(t *testing.T) {
		// io.Writer: the backend must not keep the caller's slice.
		s := nb(t)
		w := openWriter(t, s, "f", backend.WriterOptions{})
		buf := []byte("abc")
		mustWriteTo(t, w, buf)
		copy(buf, "XYZ")
		mustWriteTo(t, w, buf)
		mustClose(t, w)
		wantContent(t, s, "f", []byte("abcXYZ"))
	})
}
