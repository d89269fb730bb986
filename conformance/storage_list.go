package conformance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
)

func testList(t *testing.T, nb newStorage) {
	testListEntries(t, nb)
	testListIteration(t, nb)
}

// testListEntries checks what List yields: children only, in byte order, as
// Stat describes them, after changes and across pages.
func testListEntries(t *testing.T, nb newStorage) {
	t.Run("root-empty", func(t *testing.T) {
		s := nb(t)
		wantList(t, s, ".")
	})
	t.Run("empty-dir", func(t *testing.T) {
		s := nb(t)
		mustEnsureDir(t, s, "d")
		wantList(t, s, "d")
		infos := mustList(t, s, ".")
		if len(infos) != 1 || infos[0].Name != "d" || !infos[0].IsDir {
			t.Errorf("List(.) = %+v, want the directory d", infos)
		}
	})
	t.Run("byte-order", func(t *testing.T) {
		// "a" is a directory: it sorts by its name, not as "a/" would.
		s := nb(t)
		files := []string{"B", "Z", "a-b", "a.b", "a0", "aa", "b", "é", "~", "a/inner"}
		for _, f := range files {
			mustWrite(t, s, f, []byte(f))
		}
		wantList(t, s, ".", "B", "Z", "a", "a-b", "a.b", "a0", "aa", "b", "~", "é")
	})
	t.Run("nested", func(t *testing.T) {
		s := nb(t)
		for _, f := range []string{"a/x", "a/b/y", "a/b/c/z", "top"} {
			mustWrite(t, s, f, []byte(f))
		}
		mustEnsureDir(t, s, "a/empty")
		wantList(t, s, ".", "a", "top")
		wantList(t, s, "a", "a/b", "a/empty", "a/x")
		wantList(t, s, "a/b", "a/b/c", "a/b/y")
		wantList(t, s, "a/b/c", "a/b/c/z")
		for _, info := range mustList(t, s, "a") {
			wantDir := info.Name != "a/x"
			if info.IsDir != wantDir {
				t.Errorf("List(a): %q IsDir = %v, want %v", info.Name, info.IsDir, wantDir)
			}
			if info.IsDir && info.Size != 0 {
				t.Errorf("List(a): directory %q has size %d", info.Name, info.Size)
			}
		}
	})
	t.Run("agrees-with-Stat", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/small", []byte("x"))
		mustWrite(t, s, "d/big", pattern(70000, 1))
		mustWrite(t, s, "d/empty", nil)
		w := openWriter(t, s, "d/appended", backend.WriterOptions{})
		mustWriteTo(t, w, pattern(3000, 2))
		mustSync(t, w)
		mustWriteTo(t, w, pattern(1000, 3))
		mustClose(t, w)
		mustEnsureDir(t, s, "d/sub")
		for _, info := range mustList(t, s, "d") {
			st, err := s.Stat(t.Context(), info.Name)
			if err != nil {
				t.Errorf("Stat(%q) of a listed name: %v", info.Name, err)
				continue
			}
			if st.Name != info.Name || st.IsDir != info.IsDir || st.Size != info.Size {
				t.Errorf("List says %+v, Stat says %+v", info, st)
			}
			if !info.IsDir && !sameSecond(st.ModTime, info.ModTime) {
				t.Errorf("%q: List ModTime %v, Stat ModTime %v", info.Name, info.ModTime, st.ModTime)
			}
			if !info.IsDir {
				if b := mustRead(t, s, info.Name); int64(len(b)) != info.Size {
					t.Errorf("%q: listed size %d, read %d bytes", info.Name, info.Size, len(b))
				}
			}
		}
	})
	t.Run("after-insert-and-delete", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/b", nil)
		wantList(t, s, "d", "d/b")
		mustWrite(t, s, "d/a", nil)
		mustWrite(t, s, "d/c", nil)
		wantList(t, s, "d", "d/a", "d/b", "d/c")
		if err := s.Unlink(t.Context(), "d/b"); err != nil {
			t.Fatalf("Unlink: %v", err)
		}
		wantList(t, s, "d", "d/a", "d/c")
		if err := s.Rename(t.Context(), "d/a", "d/z"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantList(t, s, "d", "d/c", "d/z")
		w := openWriter(t, s, "d/m", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("m"))
		mustClose(t, w)
		wantList(t, s, "d", "d/c", "d/m", "d/z")
	})
	t.Run("paging", func(t *testing.T) {
		s := nb(t)
		for n := 1; n <= 3; n++ {
			var want []string
			for i := range n {
				name := fmt.Sprintf("p%d/f%d", n, i)
				mustWrite(t, s, name, nil)
				want = append(want, name)
			}
			wantList(t, s, fmt.Sprintf("p%d", n), want...)
		}
	})
}

// testListIteration checks an iteration cut short, written during, cancelled
// or timed out, and the errors of a file and a missing dir.
func testListIteration(t *testing.T, nb newStorage) {
	breakAt := func(t *testing.T, s backend.Storage, at int) {
		n := 0
		for _, err := range s.List(t.Context(), "d") {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			n++
			if n == at {
				break
			}
		}
		if n != at {
			t.Errorf("List yielded %d entries before the break, want %d", n, at)
		}
		// The backend must still work: nothing left locked or open.
		mustWrite(t, s, "d/after", nil)
		wantList(t, s, "d", "d/a", "d/after", "d/b", "d/c")
	}
	t.Run("break-at-first", func(t *testing.T) {
		s := nb(t)
		for _, f := range []string{"d/a", "d/b", "d/c"} {
			mustWrite(t, s, f, nil)
		}
		breakAt(t, s, 1)
	})
	t.Run("break-at-last", func(t *testing.T) {
		s := nb(t)
		for _, f := range []string{"d/a", "d/b", "d/c"} {
			mustWrite(t, s, f, nil)
		}
		breakAt(t, s, 3)
	})
	t.Run("write-during-iteration", func(t *testing.T) {
		// The body of a List loop may call the backend (no deadlock).
		s := nb(t)
		for _, f := range []string{"d/a", "d/b", "d/c"} {
			mustWrite(t, s, f, nil)
		}
		for info, err := range s.List(t.Context(), "d") {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			mustWrite(t, s, "d/new-"+info.Base(), nil)
			if err := s.Unlink(t.Context(), info.Name); err != nil {
				t.Fatalf("Unlink(%q) during List: %v", info.Name, err)
			}
		}
		wantList(t, s, "d", "d/new-a", "d/new-b", "d/new-c")
	})
	t.Run("cancel-at-first", func(t *testing.T) {
		s := nb(t)
		for _, f := range []string{"d/a", "d/b", "d/c"} {
			mustWrite(t, s, f, nil)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		n := 0
		for info, err := range s.List(ctx, "d") {
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("List after cancel yielded %v, want context.Canceled", err)
				}
				continue
			}
			n++
			if n == 1 {
				cancel()
			} else {
				t.Errorf("List yielded %q after its ctx was cancelled", info.Name)
			}
		}
	})
	t.Run("deadline", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/a", nil)
		ctx, cancel := context.WithDeadline(t.Context(), time.Unix(1, 0))
		defer cancel()
		infos, err := list(t, ctx, s, "d")
		if !errors.Is(err, context.DeadlineExceeded) || len(infos) > 0 {
			t.Errorf("List with an expired deadline = %d entries, %v; want context.DeadlineExceeded", len(infos), err)
		}
	})
	t.Run("file-is-error", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("x"))
		infos, err := list(t, t.Context(), s, "f")
		if err == nil || len(infos) > 0 {
			t.Errorf("List of a file = %+v, %v; want an error", infos, err)
		} else {
			wantPathErr(t, "List(f)", err, "f")
		}
	})
	t.Run("missing", func(t *testing.T) {
		s := nb(t)
		infos, err := list(t, t.Context(), s, "nope")
		if len(infos) > 0 {
			t.Errorf("List(nope) yielded %+v", infos)
		}
		wantErr(t, "List(nope)", err, fs.ErrNotExist, "nope")
	})
}

func sameSecond(a, b time.Time) bool {
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}

func testDirs(t *testing.T, nb newStorage) {
	t.Run("EnsureDir-twice", func(t *testing.T) {
		s := nb(t)
		mustEnsureDir(t, s, "d")
		mustEnsureDir(t, s, "d")
		wantTree(t, s, "d")
	})
	t.Run("EnsureDir-nested", func(t *testing.T) {
		s := nb(t)
		mustEnsureDir(t, s, "a/b/c")
		wantTree(t, s, "a", "a/b", "a/b/c")
		for _, d := range []string{"a", "a/b", "a/b/c"} {
			info, err := s.Stat(t.Context(), d)
			if err != nil || !info.IsDir {
				t.Errorf("Stat(%q) = %+v, %v; want a directory", d, info, err)
			}
		}
		mustEnsureDir(t, s, "a/b")
		mustEnsureDir(t, s, "a/b/c/d")
		wantTree(t, s, "a", "a/b", "a/b/c", "a/b/c/d")
	})
	t.Run("EnsureDir-keeps-content", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/f", []byte("x"))
		mustEnsureDir(t, s, "d")
		wantContent(t, s, "d/f", []byte("x"))
	})
	t.Run("EnsureDir-over-file", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("x"))
		if err := s.EnsureDir(t.Context(), "f"); err == nil {
			t.Errorf("EnsureDir over a file succeeded")
		}
		if err := s.EnsureDir(t.Context(), "f/sub"); err == nil {
			t.Errorf("EnsureDir below a file succeeded")
		}
		wantContent(t, s, "f", []byte("x"))
		wantTree(t, s, "f")
	})
	t.Run("file-over-dir", func(t *testing.T) {
		// A name that is a directory cannot become a file.
		s := nb(t)
		mustWrite(t, s, "d/f", []byte("x"))
		mustWrite(t, s, "g", []byte("g"))
		if err := s.WriteFile(t.Context(), "d", []byte("file")); err == nil {
			t.Errorf("WriteFile over a directory succeeded")
		}
		if _, err := s.WriteFrom(t.Context(), "d", newSource([]byte("file"))); err == nil {
			t.Errorf("WriteFrom over a directory succeeded")
		}
		if w, err := s.OpenWriter(t.Context(), "d", backend.WriterOptions{}); err == nil {
			_, werr := w.Write([]byte("file"))
			if cerr := w.Close(); werr == nil && cerr == nil {
				t.Errorf("OpenWriter over a directory succeeded")
			}
		}
		wantErr(t, "Rename(g, d) onto a directory", s.Rename(t.Context(), "g", "d"), backend.ErrIsDir, "d")
		wantErr(t, "Rename(d, h) of a directory", s.Rename(t.Context(), "d", "h"), backend.ErrIsDir, "d")
		wantTree(t, s, "d", "d/f", "g")
		wantContent(t, s, "d/f", []byte("x"))
		wantContent(t, s, "g", []byte("g"))
	})
	t.Run("file-under-file", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("x"))
		if err := s.WriteFile(t.Context(), "f/g", []byte("y")); err == nil {
			t.Errorf("WriteFile below a file succeeded")
		}
		if w, err := s.OpenWriter(t.Context(), "f/g", backend.WriterOptions{}); err == nil {
			_, werr := w.Write([]byte("y"))
			if cerr := w.Close(); werr == nil && cerr == nil {
				t.Errorf("OpenWriter below a file succeeded")
			}
		}
		wantTree(t, s, "f")
		wantContent(t, s, "f", []byte("x"))
	})
}

func testUnlink(t *testing.T, nb newStorage) {
	t.Run("file", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/f", []byte("x"))
		mustWrite(t, s, "d/g", []byte("y"))
		if err := s.Unlink(t.Context(), "d/f"); err != nil {
			t.Fatalf("Unlink: %v", err)
		}
		wantMissing(t, s, "d/f")
		wantList(t, s, "d", "d/g")
		if _, err := s.ReadFile(t.Context(), "d/f"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile after Unlink = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		s := nb(t)
		wantErr(t, "Unlink(nope)", s.Unlink(t.Context(), "nope"), fs.ErrNotExist, "nope")
	})
	t.Run("twice", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", nil)
		if err := s.Unlink(t.Context(), "f"); err != nil {
			t.Fatalf("Unlink: %v", err)
		}
		wantErr(t, "second Unlink(f)", s.Unlink(t.Context(), "f"), fs.ErrNotExist, "f")
	})
	t.Run("non-empty-dir", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "d/f", []byte("x"))
		err := s.Unlink(t.Context(), "d")
		if err == nil {
			t.Errorf("Unlink of a non-empty directory succeeded")
		} else {
			wantPathErr(t, "Unlink(d)", err, "d")
		}
		wantContent(t, s, "d/f", []byte("x"))
		wantTree(t, s, "d", "d/f")
	})
	t.Run("empty-dir", func(t *testing.T) {
		s := nb(t)
		mustEnsureDir(t, s, "d/e")
		if err := s.Unlink(t.Context(), "d/e"); err != nil {
			t.Fatalf("Unlink of an empty directory: %v", err)
		}
		wantMissing(t, s, "d/e")
		wantList(t, s, "d")
	})
	t.Run("appended-file", func(t *testing.T) {
		// A file built by many Syncs goes away whole, parts and all.
		s := nb(t)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		for i := range 4 {
			mustWriteTo(t, w, pattern(100, uint64(i)))
			mustSync(t, w)
		}
		mustClose(t, w)
		if err := s.Unlink(t.Context(), "log"); err != nil {
			t.Fatalf("Unlink: %v", err)
		}
		wantTree(t, s)
		mustWrite(t, s, "log", []byte("again"))
		wantContent(t, s, "log", []byte("again"))
	})
}

func testRename(t *testing.T, nb newStorage) {
	t.Run("simple", func(t *testing.T) {
		s := nb(t)
		data := pattern(5000, 1)
		mustWrite(t, s, "a", data)
		if err := s.Rename(t.Context(), "a", "b"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantMissing(t, s, "a")
		wantContent(t, s, "b", data)
		wantTree(t, s, "b")
	})
	t.Run("replaces", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "a", []byte("new"))
		mustWrite(t, s, "b", pattern(9000, 2))
		if err := s.Rename(t.Context(), "a", "b"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantContent(t, s, "b", []byte("new"))
		wantTree(t, s, "b")
	})
	t.Run("across-dirs", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "x/a", []byte("moved"))
		mustWrite(t, s, "x/keep", nil)
		if err := s.Rename(t.Context(), "x/a", "y/z/b"); err != nil {
			t.Fatalf("Rename into a new directory: %v", err)
		}
		wantContent(t, s, "y/z/b", []byte("moved"))
		wantTree(t, s, "x", "x/keep", "y", "y/z", "y/z/b")
	})
	t.Run("missing-source", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "b", []byte("kept"))
		wantErr(t, "Rename(nope, b)", s.Rename(t.Context(), "nope", "b"), fs.ErrNotExist, "nope")
		wantErr(t, "Rename(nope, c)", s.Rename(t.Context(), "nope", "c"), fs.ErrNotExist, "nope")
		wantContent(t, s, "b", []byte("kept"))
		wantTree(t, s, "b")
	})
	t.Run("same-name", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "a", []byte("self"))
		if err := s.Rename(t.Context(), "a", "a"); err != nil {
			t.Errorf("Rename(a, a): %v", err)
		}
		wantContent(t, s, "a", []byte("self"))
	})
	t.Run("appended-file", func(t *testing.T) {
		s := nb(t)
		w := openWriter(t, s, "log", backend.WriterOptions{})
		var all []byte
		for i := range 3 {
			chunk := pattern(700, uint64(i))
			all = append(all, chunk...)
			mustWriteTo(t, w, chunk)
			mustSync(t, w)
		}
		mustClose(t, w)
		if err := s.Rename(t.Context(), "log", "old/log"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantContent(t, s, "old/log", all)
		wantTree(t, s, "old", "old/log")
		// The moved file keeps appending at its new name.
		w = openWriter(t, s, "old/log", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("tail"))
		mustClose(t, w)
		wantContent(t, s, "old/log", append(all, "tail"...))
	})
	t.Run("atomic-under-readers", func(t *testing.T) {
		s := nb(t)
		testReplaceAtomic(t, s, func(v int, data []byte) error {
			tmp := fmt.Sprintf("tmp%d", v)
			if err := s.WriteFile(t.Context(), tmp, data); err != nil {
				return err
			}
			return s.Rename(t.Context(), tmp, "f")
		})
		wantTree(t, s, "f")
	})
}
