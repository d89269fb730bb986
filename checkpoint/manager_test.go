package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/cas"
)

// TestFSWorkspace runs create, dry run and rewind on an afero memory
// workspace, with spies on both sides proving the dry run writes nothing.
func TestFSWorkspace(t *testing.T) {
	e := newMemEnv(t)
	old := t0.Add(-time.Hour)
	e.write("a.txt", "1\n2\n3\n", old)
	e.write("sub/b.txt", "b\n", old)
	if _, err := e.m.Create(e.ctx, "named", []string{"a.txt", "sub/b.txt", "sub/new.txt"}); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "1\n3\n", t0)
	e.write("sub/new.txt", "n\n", t0)
	if err := e.fs.Chmod("/ws/sub/b.txt", 0o700); err != nil {
		t.Fatal(err)
	}
	storeSpy := spy.New(e.m.store)
	e.m.store = storeSpy
	e.ws.reset()
	dry, err := e.m.Rewind(e.ctx, "named", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.ws.mutations) != 0 || len(storeSpy.Mutations()) != 0 {
		t.Fatalf("dry run wrote: workspace %v, store %v", e.ws.mutations, storeSpy.Mutations())
	}
	want := &RewindFilesResult{CanRewind: true, FilesChanged: []string{"a.txt", "sub/b.txt", "sub/new.txt"}, Insertions: 1, Deletions: 1}
	if !reflectEqual(dry, want) {
		t.Fatalf("dry run %+v, want %+v", dry, want)
	}
	res, err := e.m.Rewind(e.ctx, "named", false)
	if err != nil || !reflectEqual(res, want) {
		t.Fatalf("rewind %+v, %v", res, err)
	}
	if got := e.read("a.txt"); got != "1\n2\n3\n" {
		t.Fatalf("a.txt = %q", got)
	}
	if fi, err := e.fs.Stat("/ws/sub/b.txt"); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("sub/b.txt mode not restored: %v %v", fi.Mode(), err)
	}
	if _, err := e.fs.Stat("/ws/sub/new.txt"); !os.IsNotExist(err) {
		t.Fatal("sub/new.txt not deleted")
	}
}

func reflectEqual(a, b *RewindFilesResult) bool {
	return a.CanRewind == b.CanRewind && a.Error == b.Error && slices.Equal(a.FilesChanged, b.FilesChanged) &&
		a.Insertions == b.Insertions && a.Deletions == b.Deletions
}

func newDirManager(t *testing.T) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	blobs, err := cas.Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(st, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, dir
}

// TestCtimeCatchesRestoredMtime: a rewrite that keeps the size and puts the
// old mtime back (cp -p, tar) is still seen, through ctime, on the OS.
func TestCtimeCatchesRestoredMtime(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	p := filepath.Join(dir, "a.txt")
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(p, []byte("AAAA"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	st, _ := m.ws.lstat("a.txt")
	if st.Ctime == 0 {
		t.Skip("no ctime on this platform")
	}
	// Let the first snapshot's cache entry settle: pretend it was verified
	// long after the writes, so only ctime can expose the change.
	if _, err := m.CreateTree(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	for _, r := range fullCache(m.cache).Dirs {
		for i := range r.Ents {
			r.Ents[i].Verified += int64(time.Hour)
		}
	}
	if err := os.WriteFile(p, []byte("BBBB"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	man, err := m.CreateTree(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if got := man.Find("a.txt").Digest; got != sumRef([]byte("BBBB")) {
		t.Fatal("a same-size rewrite with the mtime restored was missed")
	}
}

func TestCreateRefusals(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]error{
		"d":              ErrIsDir,
		"link/f":         ErrUnsafePath,
		"../x":           ErrUnsafePath,
		"/etc/passwd":    ErrUnsafePath,
		"a\x00b":         ErrUnsafePath,
		"a//b":           ErrUnsafePath,
		`win\path`:       ErrUnsafePath,
		"./a":            ErrUnsafePath,
		"x/../../escape": ErrUnsafePath,
	}
	for p, want := range cases {
		if _, err := m.Create(ctx, "cp", []string{p}); !errors.Is(err, want) {
			t.Errorf("Create(%q): %v, want %v", p, err, want)
		}
	}
	// A symlink itself is recorded as a symlink, not followed.
	man, err := m.Create(ctx, "cp", []string{"link"})
	if err != nil {
		t.Fatal(err)
	}
	if e := man.Files[0]; e.Type != TypeSymlink || e.Target != outside {
		t.Fatalf("symlink recorded as %+v", e)
	}
	// Under a path whose parent is a file: absent, not an error.
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	man, err = m.Create(ctx, "cp2", []string{"file/below"})
	if err != nil || man.Files[0].Exists {
		t.Fatalf("file/below: %+v, %v", man, err)
	}
}

// TestRewindConflict: a directory of unknown content where a named file
// was is refused before anything changes.
func TestRewindConflict(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write("b.txt", "b")
	if _, err := m.Create(ctx, "cp", []string{"a.txt", "b.txt"}); err != nil {
		t.Fatal(err)
	}
	write("a.txt", "changed")
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	write("b.txt/inside", "user data")
	res, err := m.Rewind(ctx, "cp", false)
	if !errors.Is(err, ErrConflict) || res.CanRewind {
		t.Fatalf("rewind over a directory = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed" {
		t.Fatal("a.txt was restored although the rewind was refused")
	}
}

// TestConcurrentUse: one Manager used from several goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	m, dir := newDirManager(t)
	ctx := context.Background()
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("cp%d", i)
			if _, err := m.CreateTree(ctx, id); err != nil {
				errs <- err
				return
			}
			if _, err := m.Rewind(ctx, id, true); err != nil {
				errs <- err
			}
			if _, err := m.Diff(ctx, id); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	infos, err := m.List(ctx)
	if err != nil || len(infos) != 8 {
		t.Fatalf("List = %d, %v", len(infos), err)
	}
}

// TestReadOnlyDirectoryRestored: a directory recorded read-only gets its
// files back and then its mode.
func TestReadOnlyDirectoryRestored(t *testing.T) {
	if os.Getuid() == 0 {
		t.Log("running as root: permission bits are checked, not enforced")
	}
	m, dir := newDirManager(t)
	ctx := context.Background()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	if _, err := m.CreateTree(ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ro, 0o755)
	if err := os.RemoveAll(ro); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Rewind(ctx, "cp", false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(ro)
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("ro: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "f")); string(b) != "f" {
		t.Fatal("file in a read-only directory not restored")
	}
}

func TestNonUTF8SymlinkTargetSkipped(t *testing.T) {
	m, dir := newDirManager(t)
	if err := os.Symlink("bad\xff", filepath.Join(dir, "l")); err != nil {
		t.Skip("cannot make such a symlink here:", err)
	}
	man, err := m.CreateTree(context.Background(), "cp")
	if err != nil {
		t.Fatal(err)
	}
	if man.Find("l") != nil || len(man.Skipped) != 1 || man.Skipped[0].Reason != "target" {
		t.Fatalf("files %v skipped %v", man.Files, man.Skipped)
	}
	if _, err := m.Create(context.Background(), "cp2", []string{"l"}); err == nil {
		t.Fatal("Create recorded a symlink target JSON cannot hold")
	}
}

// The walk checks each name in a valid directory, not each path again:
// a name a manifest cannot hold is skipped at any depth, and a drive
// letter only counts at the root.
func TestBadNamesSkippedAtAnyDepth(t *testing.T) {
	m, dir := newDirManager(t)
	for _, p := range []string{"a\\b", "d/e/x\\y", "d/e/ok", "d/c:x", "é/\xffz"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Skip("cannot make such a name here:", err)
		}
	}
	man, err := m.CreateTree(context.Background(), "cp")
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range man.Skipped {
		if s.Reason == "name" {
			skipped = append(skipped, s.Path)
		}
	}
	slices.Sort(skipped)
	if want := []string{"a\\b", "d/e/x\\y", "é/\uFFFDz"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	for _, p := range []string{"d/e/ok", "d/c:x"} {
		if man.Find(p) == nil {
			t.Errorf("%s not kept", p)
		}
	}
}

// The compare reads workspace files into buffers it reuses: files of
// every size, in any order, still count their own lines and no other's.
func TestDiffReusesBuffersExactly(t *testing.T) {
	ctx := context.Background()
	m, dir := newDirManager(t)
	lines := []int{5000, 3, 40000, 1, 700, 12, 9000, 0, 60}
	for i, n := range lines {
		body := strings.Repeat(fmt.Sprintf("line of file %d\n", i), n)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.CreateTree(ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	for i, n := range lines {
		// i+1 lines more, the first line changed when there is one.
		body := strings.Repeat("added\n", i+1) + strings.Repeat(fmt.Sprintf("line of file %d\n", i), max(n-1, 0))
		if n > 0 {
			body = "changed\n" + body
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := m.Diff(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != len(lines) {
		t.Fatalf("%d files changed, want %d: %+v", len(d.Files), len(lines), d.Files)
	}
	for _, f := range d.Files {
		i, err := strconv.Atoi(strings.TrimPrefix(f.Path, "f"))
		if err != nil || i >= len(lines) {
			t.Fatalf("changed: %q", f.Path)
		}
		wantIns, wantDel := i+1, 0
		if lines[i] > 0 {
			wantIns, wantDel = i+2, 1
		}
		if f.Insertions != wantIns || f.Deletions != wantDel {
			t.Errorf("%s: +%d -%d, want +%d -%d", f.Path, f.Insertions, f.Deletions, wantIns, wantDel)
		}
	}
}
