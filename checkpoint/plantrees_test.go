package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/statcache"
	"github.com/trovekit/trove/checkpoint/treeobj"
)

// dirManager is a Manager of a real directory holding files (path ->
// content), every timestamp an hour back, on a mem store.
func dirManager(t *testing.T, files map[string]string) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
	ws, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	blobs, _ := cas.Open(context.Background(), st)
	m, err := newManager(st, casBlobs{blobs}, ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, dir
}

// settle moves every verification in the cache two hours on, as if each
// snapshot had run long after the writes before it (ctimes cannot be set
// back), keeping which snapshot verified what.
func settle(m *Manager) {
	const d = int64(2 * time.Hour)
	m.loadCache(context.Background())
	for _, r := range fullCache(m.cache).Dirs {
		r.Verified += d
		for i := range r.Ents {
			r.Ents[i].Verified += d
		}
	}
	m.cache.Last.Verified += d
}

// oneThenTwo is a Manager of files and "a/b/y.txt", "c/z.txt" with tree
// checkpoint "one", then "two" after a line added to a/b/y.txt.
func oneThenTwo(t *testing.T, files map[string]string) *Manager {
	t.Helper()
	ctx := context.Background()
	files["a/b/y.txt"], files["c/z.txt"] = "y\n", "z\n"
	m, dir := dirManager(t, files)
	if _, err := m.CreateTree(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	settle(m)
	if err := os.WriteFile(filepath.Join(dir, "a/b/y.txt"), []byte("y\ny2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTree(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	settle(m)
	return m
}

// TestPlanReadsOnlyChangedTrees: a plan compares only the directories on
// the paths to what changed since the last snapshot, and still sees every
// change there.
func TestPlanReadsOnlyChangedTrees(t *testing.T) {
	ctx := context.Background()
	m := oneThenTwo(t, map[string]string{"a/x.txt": "x\n", "top.txt": "t\n"})
	man, err := m.loadHeader(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	walked, err := m.walkTree(ctx, baseIgnorer(man), m.workspaceGitignore, walkOptions{dirty: true})
	if err != nil {
		t.Fatal(err)
	}
	files, skip, ok, err := m.changedEntries(ctx, man, &walked, newTreeFetch(m.blobs, m.cache.Tree))
	if err != nil || !ok {
		t.Fatalf("changedEntries: %v, %v", ok, err)
	}
	var got []string
	for _, e := range files {
		got = append(got, e.Path)
	}
	// The root's, a's and a/b's entries; c is the same on both sides.
	want := []string{"a", "a/b", "a/b/y.txt", "a/x.txt", "c", "top.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("entries compared: %v, want %v", got, want)
	}
	if !skip("c") || skip("a") || skip("a/b") || skip(".") {
		t.Fatal("skip disagrees with the entries")
	}
	d, err := m.Diff(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "a/b/y.txt" || d.Files[0].Insertions != 1 {
		t.Fatalf("diff: %+v", d.Files)
	}
}

// TestPlanDistrustsFilesCheckpoints: a files checkpoint taken after the
// last tree snapshot updates the stat cache of the files it names; those
// no longer prove the tree snapshot's content, so a rewind to it restores
// them.
func TestPlanDistrustsFilesCheckpoints(t *testing.T) {
	ctx := context.Background()
	m, dir := dirManager(t, map[string]string{"c/z.txt": "z\n", "d/w.txt": "w\n"})
	if _, err := m.CreateTree(ctx, "tree"); err != nil {
		t.Fatal(err)
	}
	settle(m)
	if err := os.WriteFile(filepath.Join(dir, "c/z.txt"), []byte("z changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "files", []string{"c/z.txt"}); err != nil {
		t.Fatal(err)
	}
	settle(m) // the edit is no longer racy for the files checkpoint's entry
	res, err := m.Rewind(ctx, "tree", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.FilesChanged, []string{"c/z.txt"}) {
		t.Fatalf("rewound %v, want c/z.txt", res.FilesChanged)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c/z.txt")); string(b) != "z\n" {
		t.Fatalf("c/z.txt = %q after the rewind", b)
	}
}

// TestPlanSeesFilesTheLastSnapshotIgnored: the last snapshot ignored a file
// that the checkpoint's rules do not, with the same trees otherwise: the
// file was created since the checkpoint and a rewind deletes it.
func TestPlanSeesFilesTheLastSnapshotIgnored(t *testing.T) {
	ctx := context.Background()
	m, dir := dirManager(t, map[string]string{"a/x.txt": "x\n"})
	if _, err := m.CreateTree(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a/new.log"), []byte("log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTree(ctx, "nolog", WithIgnore("*.log")); err != nil {
		t.Fatal(err)
	}
	settle(m)
	res, err := m.Rewind(ctx, "plain", true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []string{"a/new.log"}) {
		t.Fatalf("dry run deletes %v, want a/new.log", res.Deleted)
	}
}

// treeCounter counts the tree objects a snapshot builds (each is hashed
// once, to see whether it is stored already).
type treeCounter struct {
	blobStore
	built atomic.Int64
}

func (c *treeCounter) sumLike(like string, data []byte) (string, error) {
	if strings.HasPrefix(string(data), treeobj.Magic) {
		c.built.Add(1)
	}
	return c.blobStore.sumLike(like, data)
}

// TestSnapshotReusesUnchangedTrees: a snapshot builds only the trees of
// directories that changed since the last one (and their parents), and
// they are the trees a snapshot with no stat cache builds, whatever
// changed: a file, a .gitignore above unchanged directories, the options.
func TestSnapshotReusesUnchangedTrees(t *testing.T) {
	ctx := context.Background()
	m, dir := dirManager(t, map[string]string{"a/x.txt": "x\n", "a/b/y.txt": "y\n", "c/z.txt": "z\n", "c/d/w.txt": "w\n"})
	counter := &treeCounter{blobStore: m.blobs}
	m.blobs = counter
	// fromScratch is the root tree a snapshot with no stat cache takes.
	fromScratch := func(id string, opts ...CreateOption) *Manifest {
		t.Helper()
		saved := m.cache
		m.cache = statcache.New()
		man, err := m.CreateTree(ctx, id, opts...)
		if err != nil {
			t.Fatal(err)
		}
		m.cache = saved
		return man
	}
	snapshot := func(id string, opts ...CreateOption) (*Manifest, int64) {
		t.Helper()
		settle(m)
		counter.built.Store(0)
		man, err := m.CreateTree(ctx, id, opts...)
		if err != nil {
			t.Fatal(err)
		}
		n := counter.built.Load()
		if want := fromScratch(id+"-scratch", opts...); man.Tree != want.Tree {
			t.Fatalf("%s: root tree %s, a snapshot from scratch has %s", id, man.Tree, want.Tree)
		}
		return man, n
	}
	snapshot("one")
	if err := os.WriteFile(filepath.Join(dir, "a/b/y.txt"), []byte("y changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, built := snapshot("two"); built != 3 {
		t.Errorf("after one edit, %d trees built, want 3 (a/b, a and the root)", built)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("w.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if man, _ := snapshot("three"); man.Find("c/d/w.txt") != nil {
		t.Error("a file a new .gitignore ignores is still in the snapshot")
	}
	if man, _ := snapshot("four", WithIgnore("x.txt")); man.Find("a/x.txt") != nil {
		t.Error("a file a new option ignores is still in the snapshot")
	}
	if _, built := snapshot("five", WithIgnore("x.txt")); built != 0 {
		t.Errorf("nothing changed, yet %d trees built", built)
	}
	// A new directory beside unchanged ones, an empty one, a link, and a
	// file gone: only the changed directories' entries are gathered, and
	// the unchanged ones beside them keep their trees.
	for _, d := range []string{"c/new", "e"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "c/new/q.txt"), []byte("q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d/w.txt", filepath.Join(dir, "c/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "a/b/y.txt")); err != nil {
		t.Fatal(err)
	}
	man, built := snapshot("six", WithIgnore("x.txt"))
	if built != 4 {
		t.Errorf("%d trees built, want 4 (c/new, c, a/b and the root)", built)
	}
	if man.Find("c/d/w.txt") != nil || man.Find("c/new/q.txt") == nil || man.Find("c/link") == nil || man.Find("e") == nil {
		t.Error("the snapshot lacks an entry of an unchanged or new directory")
	}
	// A change after an unchanged directory's entries, in path order: what
	// is below the unchanged one is left out, and nothing after it.
	if err := os.WriteFile(filepath.Join(dir, "c/z.txt"), []byte("z changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, built := snapshot("seven", WithIgnore("x.txt")); built != 2 {
		t.Errorf("%d trees built, want 2 (c and the root)", built)
	}
}

// TestRewindPrewritesCleanUp: a rewind writes changed files to temporary
// names while it plans; one that stops at a conflict found later removes
// them and leaves every file as it was, and one that runs leaves none.
func TestRewindPrewritesCleanUp(t *testing.T) {
	ctx := context.Background()
	m, dir := dirManager(t, map[string]string{"a/x.txt": "x\n", "zz": "file\n"})
	if _, err := m.CreateTree(ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	write := func(p, c string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	temps := func() []string {
		var out []string
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
			if strings.HasPrefix(filepath.Base(p), tempPrefix) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	write("a/x.txt", "x changed\n")
	// zz is now a directory holding an ignored file: restoring the file zz
	// would remove it, a conflict found after a/x.txt was planned.
	if err := os.Remove(filepath.Join(dir, "zz")); err != nil {
		t.Fatal(err)
	}
	write("zz/keep.pyc", "ignored\n")
	if _, err := m.Rewind(ctx, "cp", false); !errors.Is(err, ErrConflict) {
		t.Fatalf("rewind: %v, want ErrConflict", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/x.txt")); string(b) != "x changed\n" {
		t.Errorf("a/x.txt = %q after a refused rewind", b)
	}
	if left := temps(); len(left) != 0 {
		t.Errorf("temporary files left by a refused rewind: %v", left)
	}
	if err := os.RemoveAll(filepath.Join(dir, "zz")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Rewind(ctx, "cp", false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/x.txt")); string(b) != "x\n" {
		t.Errorf("a/x.txt = %q after the rewind", b)
	}
	if left := temps(); len(left) != 0 {
		t.Errorf("temporary files left by a rewind: %v", left)
	}
}

// TestRewindLikelyWritesCleanUp: a rewind starts writing, before its plan,
// the files that differ between the checkpoint and the last snapshot; one
// the workspace already has back is left alone, its temporary file removed.
func TestRewindLikelyWritesCleanUp(t *testing.T) {
	ctx := context.Background()
	m, dir := dirManager(t, map[string]string{"a/x.txt": "x\n", "b/y.txt": "y\n"})
	if _, err := m.CreateTree(ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/x.txt", "b/y.txt"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("edited\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.CreateTree(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	// a/x.txt is back as the checkpoint has it; b/y.txt is not.
	if err := os.WriteFile(filepath.Join(dir, "a/x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := m.Rewind(ctx, "cp", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.FilesChanged, []string{"b/y.txt"}) {
		t.Fatalf("rewound %v, want b/y.txt", res.FilesChanged)
	}
	var left []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasPrefix(filepath.Base(p), tempPrefix) {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for p, want := range map[string]string{"a/x.txt": "x\n", "b/y.txt": "y\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
}

// countingBlobs counts the gets of each ref.
type countingBlobs struct {
	blobStore
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingBlobs) get(ctx context.Context, ref string) ([]byte, error) {
	c.mu.Lock()
	c.gets[ref]++
	c.mu.Unlock()
	return c.blobStore.get(ctx, ref)
}

// TestPlanReadsTreesOnce: the trees of a checkpoint that the stat cache
// does not hold are read from the blob store once per plan, though both
// likely (during the walk) and the compare (after it) need them.
func TestPlanReadsTreesOnce(t *testing.T) {
	ctx := context.Background()
	m := oneThenTwo(t, map[string]string{"a/x.txt": "x\n"})
	// As after many snapshots: the cache holds only the last one's trees.
	for ref := range fullCache(m.cache).Older {
		delete(m.cache.Trees, ref)
	}
	cb := &countingBlobs{blobStore: m.blobs, gets: map[string]int{}}
	m.blobs = cb
	res, err := m.Rewind(ctx, "one", true)
	if err != nil || !slices.Equal(res.FilesChanged, []string{"a/b/y.txt"}) {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	trees := 0
	for ref, n := range cb.gets {
		if n > 1 {
			t.Errorf("%s read %d times", ref, n)
		}
		trees++
	}
	// The trees of ".", "a" and "a/b" differ from the last snapshot's, and
	// the old content of y.txt is read for its line counts.
	if trees != 4 {
		t.Errorf("%d refs read, want 4", trees)
	}
}

// A plan decodes each tree once (likely and changedEntries go through the
// same ones): a tree's children, or its damage, come back for its ref.
func TestTreeFetchDecodesOnce(t *testing.T) {
	f := newTreeFetch(nil, nil)
	tree, err := treeobj.AppendChild(append([]byte(treeobj.Magic), 1), "a.txt", &Entry{Exists: true, Digest: "blob:sha256:" + strings.Repeat("0", 64), Size: 1, Mode: 0o644}, "")
	if err != nil {
		t.Fatal(err)
	}
	first, err := f.decode("tree-a", tree)
	if err != nil || len(first) != 1 || first[0].Name != "a.txt" {
		t.Fatalf("decode = %+v, %v; want a.txt", first, err)
	}
	again, err := f.decode("tree-a", nil)
	if err != nil || len(again) != 1 || &again[0] != &first[0] {
		t.Fatalf("decode again = %+v, %v; want the children decoded first", again, err)
	}
	for range 2 {
		if _, err := f.decode("tree-bad", []byte("not a tree")); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode of damage: %v, want ErrCorrupt", err)
		}
	}
}
