package checkpoint_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// Symlinks round-trip: right after a checkpoint nothing differs; a changed
// link is one change; rewind restores the link itself, once.
func TestSymlinksRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 200 MB file (sparse: cheap to make and to store), restored within
	// bounded memory.
	const bigSize = 200 << 20
	patchBig := sparseFile(t, filepath.Join(dir, "data/big.bin"), bigSize)
	patchBig(0, "head")
	patchBig(bigSize-4, "tail")
	for name, target := range map[string]string{"rel": "a.txt", "abs": "/etc/hostname", "dangling": "nowhere", "out": "../.."} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	st := mem.New()
	defer st.Close()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(st, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.CreateTree(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if d, err := m.Diff(ctx, "c"); err != nil || len(d.Files) != 0 {
		t.Fatalf("diff right after create: %+v %v", d, err)
	}
	if err := os.Remove(filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	if d, err := m.Diff(ctx, "c"); err != nil || len(d.Files) != 1 || d.Files[0].Path != "rel" {
		t.Fatalf("diff after changing one link: %+v %v", d, err)
	}
	res, err := m.Rewind(ctx, "c", false)
	if err != nil || len(res.FilesChanged) != 1 {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	if got, _ := os.Readlink(filepath.Join(dir, "rel")); got != "a.txt" {
		t.Errorf("link after rewind points to %q", got)
	}
	if res, err := m.Rewind(ctx, "c", false); err != nil || len(res.FilesChanged) != 0 {
		t.Errorf("a second rewind: %+v %v", res, err)
	}
}

// contentOf is a small file's content, or a big one's length and sha256.
func contentOf(t *testing.T, p string, size int64) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size <= 4096 {
		data, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d bytes, sha256 %x", size, h.Sum(nil))
}

// treeState is every path under dir with its mode and content (or a
// link's target).
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			out[rel] = fi.Mode().Perm().String() + " " + contentOf(t, p, fi.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A rewind is undoable: rewinding to the checkpoint it names restores the
// workspace as it was before, byte for byte and mode for mode.
func TestRewindUndo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "one\ntwo\n", 0o644)
	write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write("empty", "", 0o600)
	write("src/keep.go", "package src\n", 0o644)
	write("src/gone.go", "package src // deleted later\n", 0o644)
	write("lib/deep/x.go", "package deep // its directory is removed later\n", 0o644)
	write("tools/t.go", "package tools // its directory's mode changes later\n", 0o644)
	// A 200 MB file (sparse: cheap to make and to store), restored within
	// bounded memory.
	const bigSize = 200 << 20
	patchBig := sparseFile(t, filepath.Join(dir, "data/big.bin"), bigSize)
	patchBig(0, "head")
	patchBig(bigSize-4, "tail")
	for name, target := range map[string]string{"rel": "a.txt", "abs": "/etc/hostname", "dangling": "nowhere", "out": "../.."} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	st := mem.New()
	defer st.Close()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(st, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.CreateTree(ctx, "c", checkpoint.WithMaxFileSize(-1)); err != nil {
		t.Fatal(err)
	}
	// The agent's edits: content, mode, a deleted file, new files, a link.
	patchBig(bigSize/2, "changed in the middle")
	write("a.txt", "one\nTWO\nthree\n", 0o644)
	write("empty", "", 0o644)
	if err := os.Remove(filepath.Join(dir, "src/gone.go")); err != nil {
		t.Fatal(err)
	}
	write("new/created.txt", "created after the checkpoint\n", 0o640)
	// Directories: one removed (the rewind makes it again), an empty one
	// made (the rewind removes it), one whose mode changed.
	if err := os.RemoveAll(filepath.Join(dir, "lib/deep")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "made/empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "tools"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("run.sh", filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	res, err := m.Rewind(ctx, "c", false)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	// Allocated in all, an upper bound of the peak.
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("rewind allocated %d MiB in all", alloc>>20)
	if alloc >= 128<<20 {
		t.Errorf("the rewind of a %d MiB file allocated %d MiB", bigSize>>20, alloc>>20)
	}
	if !slices.Contains(res.Restored, "data/big.bin") {
		t.Errorf("big.bin not restored: %+v", res)
	}
	if res.Undo == "" || len(res.Deleted) == 0 || len(res.Recreated) == 0 || len(res.Restored) == 0 {
		t.Fatalf("rewind result: %+v", res)
	}
	if _, err := m.Rewind(ctx, res.Undo, false); err != nil {
		t.Fatal(err)
	}
	after := treeState(t, dir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %q before the rewind, %q after the undo", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s exists after the undo, not before the rewind", k)
		}
	}
}

// Rewind streams what it writes: restoring a file much bigger than the
// diff limit allocates a small fraction of it.
func TestRewindBigFileBoundedMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const size = 48 << 20
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i*7 + i/4096)
	}
	name := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(name, big, 0o644); err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	defer st.Close()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(st, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Create(ctx, "c", []string{"big.bin"}); err != nil {
		t.Fatal(err)
	}
	big[size/2] ^= 1
	if err := os.WriteFile(name, big, 0o644); err != nil {
		t.Fatal(err)
	}
	big = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := m.Rewind(ctx, "c", true); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	t.Logf("dry run: %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := m.Rewind(ctx, "c", false)
	runtime.ReadMemStats(&after)
	if err != nil || len(res.FilesChanged) != 1 {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/2 {
		t.Errorf("rewinding a %d MiB file allocated %d MiB", size>>20, alloc>>20)
	}
	data, err := os.ReadFile(name)
	mid := size / 2
	if err != nil || len(data) != size || data[mid] != byte(mid*7+mid/4096) {
		t.Fatalf("the file is not restored: %v", err)
	}
}

// plainBlobs is a cas.Blobs without batches.
type plainBlobs struct{ cas.Blobs }

// Checkpoints take any cas.Blobs: without packs each file is put alone.
func TestAnyBlobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	defer st.Close()
	s, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(st, plainBlobs{s}, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.CreateTree(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Rewind(ctx, "c", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "one\n" {
		t.Errorf("a.txt = %q", got)
	}
	var nilStore *cas.Store
	if _, err := checkpoint.New(st, nilStore, ws); err == nil {
		t.Error("a nil store was taken")
	}
}

// sparseFile makes path a sparse file of size bytes and returns a function
// that writes text at an offset of it.
func sparseFile(t *testing.T, path string, size int64) func(off int64, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	return func(off int64, text string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			if err = f.Truncate(size); err == nil {
				_, err = f.WriteAt([]byte(text), off)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
