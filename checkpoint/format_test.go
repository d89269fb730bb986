package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

type formatEnv struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	st    backend.Storage
	blobs *cas.Store
	m     *checkpoint.Manager
}

func newFormatEnv(t *testing.T, opts ...checkpoint.Option) *formatEnv {
	t.Helper()
	ctx := context.Background()
	e := &formatEnv{t: t, ctx: ctx, dir: t.TempDir(), st: mem.New()}
	t.Cleanup(func() { e.st.Close() })
	var err error
	if e.blobs, err = cas.Open(ctx, e.st); err != nil {
		t.Fatal(err)
	}
	ws, err := checkpoint.Dir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if e.m, err = checkpoint.New(e.st, e.blobs, ws, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *formatEnv) write(name, data string, mode os.FileMode) {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *formatEnv) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *formatEnv) blobSet() map[cas.Ref]bool {
	e.t.Helper()
	out := map[cas.Ref]bool{}
	for r, err := range e.blobs.Walk(e.ctx) {
		if err != nil {
			e.t.Fatal(err)
		}
		out[r] = true
	}
	return out
}

func (e *formatEnv) create(id string) *checkpoint.Manifest {
	e.t.Helper()
	man, err := e.m.CreateTree(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return man
}

func (e *formatEnv) rewind(id string) *checkpoint.RewindFilesResult {
	e.t.Helper()
	res, err := e.m.Rewind(e.ctx, id, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// Checkpoints written before tree objects (manifest version 1, every entry
// inline) still load, rewind and list their refs for GC.
func TestVersion1ManifestsReadable(t *testing.T) {
	e := newFormatEnv(t, checkpoint.WithDir("checkpoints/--fixture--"))
	contents := []string{"one\ntwo\n", "#!/bin/sh\necho hi\n", "", "package deep\n"}
	for _, c := range contents {
		if _, err := e.blobs.Put(e.ctx, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"tree-v1", "files-v1"} {
		data, err := os.ReadFile(filepath.Join("testdata", "v1", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.WriteFile(e.ctx, "checkpoints/--fixture--/"+id+".json", data); err != nil {
			t.Fatal(err)
		}
	}
	man, err := e.m.Load(e.ctx, "tree-v1")
	if err != nil || man.Version != 1 || len(man.Files) != 8 || man.Tree != "" {
		t.Fatalf("Load = %+v, %v", man, err)
	}
	e.rewind("tree-v1")
	if e.read("a.txt") != "one\ntwo\n" || e.read("src/deep/x.go") != "package deep\n" {
		t.Fatal("tree-v1 not restored")
	}
	if st, err := os.Stat(filepath.Join(e.dir, "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh: %v %v", st, err)
	}
	if target, err := os.Readlink(filepath.Join(e.dir, "link")); err != nil || target != "a.txt" {
		t.Fatalf("link: %q %v", target, err)
	}
	e.write("gone.txt", "created later\n", 0o644)
	if res := e.rewind("files-v1"); !slices.Equal(res.Deleted, []string{"gone.txt"}) {
		t.Fatalf("files-v1 rewind %+v", res)
	}
	var roots int
	for r, err := range checkpoint.Roots(e.ctx, e.st, e.blobs) {
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := e.blobs.Has(e.ctx, r.Ref); !ok {
			t.Errorf("root %v of %s missing", r.Ref, r.File)
		}
		roots++
	}
	if roots == 0 {
		t.Fatal("no roots")
	}
}

// What did not change costs nothing: a checkpoint after one edit deep in a
// tree adds the file's content and the trees on its path, no more.
func TestUnchangedTreesShared(t *testing.T) {
	e := newFormatEnv(t)
	for i := range 5 {
		for j := range 4 {
			e.write(fmt.Sprintf("pkg%d/sub%d/f.go", i, j), fmt.Sprintf("package sub%d%d\n", i, j), 0o644)
		}
	}
	first := e.create("one")
	before := e.blobSet()
	e.write("pkg3/sub2/f.go", "package changed\n", 0o644)
	second := e.create("two")
	after := e.blobSet()
	if added := len(after) - len(before); added != 4 {
		t.Errorf("one edit added %d blobs, want 4 (content, trees of pkg3/sub2, pkg3 and the root)", added)
	}
	if first.Tree == second.Tree || first.Tree == "" {
		t.Errorf("trees %q and %q", first.Tree, second.Tree)
	}
	// An unchanged tree is the same tree.
	if third := e.create("three"); third.Tree != second.Tree {
		t.Errorf("an unchanged workspace got tree %s, want %s", third.Tree, second.Tree)
	}
	if len(e.blobSet()) != len(after) {
		t.Error("an unchanged checkpoint added blobs")
	}
	e.rewind("one")
	if e.read("pkg3/sub2/f.go") != "package sub32\n" {
		t.Fatal("not rewound")
	}
}

// An edited file is stored as a delta against its last version stored
// whole; the checkpoint's refs name both, so GC keeps the base after the
// checkpoint that stored it is deleted, and the content comes back.
func TestEditedFilesStoredAsDeltas(t *testing.T) {
	e := newFormatEnv(t)
	var b bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&b, "line %d: some source text\n", i)
	}
	v1 := b.String()
	v2 := v1[:3000] + "an inserted line\n" + v1[3000:]
	v3 := v2 + "appended\n"
	e.write("src/a.go", v1, 0o644)
	c1 := e.create("c1")
	e.write("src/a.go", v2, 0o644)
	c2 := e.create("c2")
	e.write("src/a.go", v3, 0o644)
	c3 := e.create("c3")
	find := func(man *checkpoint.Manifest) checkpoint.Entry {
		for _, f := range man.Files {
			if f.Path == "src/a.go" {
				return f
			}
		}
		t.Fatal("src/a.go not in the checkpoint")
		return checkpoint.Entry{}
	}
	e1, e2, e3 := find(c1), find(c2), find(c3)
	if e1.Delta != "" || e2.Delta == "" || e3.Delta == "" || e2.Base != e1.Digest || e3.Base != e1.Digest {
		t.Fatalf("entries %+v\n%+v\n%+v: want v2 and v3 deltas of v1", e1, e2, e3)
	}
	loaded, err := e.m.Load(e.ctx, "c3")
	if err != nil {
		t.Fatal(err)
	}
	refs := loaded.Refs()
	if !slices.Contains(refs, e3.Base) || !slices.Contains(refs, e3.Delta) || slices.Contains(refs, e3.Digest) || !slices.Contains(refs, loaded.Tree) {
		t.Fatalf("Refs %v lack the base, the delta or the tree, or name the content", refs)
	}
	for _, id := range []string{"c1", "c2"} {
		if err := e.m.Delete(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := e.blobs.GC(e.ctx, cas.RefsOf(checkpoint.Roots(e.ctx, e.st, e.blobs)), cas.GCGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted) == 0 {
		t.Errorf("GC deleted nothing: %+v", rep)
	}
	e.write("src/a.go", "overwritten\n", 0o644)
	e.rewind("c3")
	if e.read("src/a.go") != v3 {
		t.Fatal("c3 not restored after GC")
	}
	for r, err := range e.blobs.Verify(e.ctx) {
		if err != nil {
			t.Fatalf("verify %v: %v", r, err)
		}
	}
}

// A rewind killed while writing leaves a temporary file; the next snapshot
// or rewind removes it once it is clearly not being written, and a dry run
// leaves it.
func TestStaleTempFilesRemoved(t *testing.T) {
	e := newFormatEnv(t)
	e.write("src/a.go", "package src\n", 0o644)
	old := time.Now().Add(-time.Hour)
	stale := func(name string) string {
		e.write(name, "half written", 0o600)
		if err := os.Chtimes(filepath.Join(e.dir, name), old, old); err != nil {
			t.Fatal(err)
		}
		return name
	}
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(e.dir, name))
		return err == nil
	}
	s1 := stale("src/.trove-tmp-00112233aabbccdd")
	fresh := "src/.trove-tmp-99887766aabbccdd"
	e.write(fresh, "being written", 0o600)
	man := e.create("c")
	if exists(s1) || !exists(fresh) {
		t.Fatalf("after a snapshot: stale kept %v, fresh kept %v", exists(s1), exists(fresh))
	}
	for _, f := range man.Files {
		if strings.Contains(f.Path, ".trove-tmp-") {
			t.Fatalf("%s snapshotted", f.Path)
		}
	}
	s2 := stale(".trove-tmp-0011223344556677")
	if _, err := e.m.Rewind(e.ctx, "c", true); err != nil || !exists(s2) {
		t.Fatalf("a dry run removed %s (%v)", s2, err)
	}
	e.rewind("c")
	if exists(s2) || !exists(fresh) {
		t.Fatalf("after a rewind: stale kept %v, fresh kept %v", exists(s2), exists(fresh))
	}
}

// A snapshot after the checkpoints holding some content were deleted and
// collected stores that content again, though the stat cache knows it.
func TestContentStoredAgainAfterGC(t *testing.T) {
	e := newFormatEnv(t)
	e.write("src/a.go", strings.Repeat("package src // some text\n", 40), 0o644)
	e.write("b.txt", "b\n", 0o644)
	e.create("c1")
	if err := e.m.Delete(e.ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.blobs.GC(e.ctx, cas.RefsOf(checkpoint.Roots(e.ctx, e.st, e.blobs)), cas.GCGrace(0)); err != nil {
		t.Fatal(err)
	}
	man := e.create("c2")
	for _, r := range man.Refs() {
		ref, err := cas.ParseRef(r)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.blobs.Has(e.ctx, ref); !ok || err != nil {
			t.Errorf("c2 names %s, not stored (%v)", r, err)
		}
	}
	e.write("src/a.go", "overwritten\n", 0o644)
	e.rewind("c2")
	if !strings.HasPrefix(e.read("src/a.go"), "package src") {
		t.Fatal("c2 not restored")
	}
}

// Unchanged directories are not stored again by later snapshots, however
// old their trees are.
func TestOldTreesNotRewritten(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	now := time.Now()
	blobs, err := cas.Open(ctx, st, cas.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("d%d/f.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// No racy window: the files' stats are trusted, nothing is read again.
	m, err := checkpoint.New(st, blobs, ws, checkpoint.WithRacyWindow(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	blobBytes := func() int64 {
		var n int64
		for fi, err := range backend.Walk(ctx, st, "blobs") {
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size
		}
		return n
	}
	if _, err := m.CreateTree(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	before := blobBytes()
	now = now.Add(24 * time.Hour)
	if _, err := m.CreateTree(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	if after := blobBytes(); after != before {
		t.Errorf("an unchanged snapshot a day later wrote %d bytes of blobs", after-before)
	}
}

// A rewind judges what was created since by the checkpoint's .gitignore
// files, not the workspace's: both the walk that took the workspace's
// rules and found them changed and a later rewind agree.
func TestRewindUsesCheckpointGitignore(t *testing.T) {
	e := newFormatEnv(t)
	e.write(".gitignore", "*.log\n", 0o644)
	e.write("sub/.gitignore", "", 0o644)
	e.write("sub/a.go", "a\n", 0o644)
	e.create("cp")
	// Now logs count and temporaries do not, in the workspace's rules.
	e.write(".gitignore", "*.tmp\n", 0o644)
	e.write("sub/.gitignore", "*.go\n", 0o644)
	e.write("new.log", "n\n", 0o644)
	e.write("x.tmp", "x\n", 0o644)
	e.write("sub/b.go", "b\n", 0o644)
	res := e.rewind("cp")
	if want := []string{".gitignore", "sub/.gitignore", "sub/b.go", "x.tmp"}; !slices.Equal(res.FilesChanged, want) {
		t.Fatalf("FilesChanged %v, want %v", res.FilesChanged, want)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "new.log")); err != nil {
		t.Errorf("new.log, ignored by the checkpoint's rules, was removed: %v", err)
	}
	for _, p := range []string{"x.tmp", "sub/b.go"} {
		if _, err := os.Stat(filepath.Join(e.dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s, created since under the checkpoint's rules, is still there", p)
		}
	}
	if got := e.read(".gitignore"); got != "*.log\n" {
		t.Errorf(".gitignore %q after the rewind", got)
	}
	// Same rules again: nothing to do.
	if res := e.rewind("cp"); len(res.FilesChanged) != 0 {
		t.Errorf("second rewind changed %v", res.FilesChanged)
	}
}

// The checkpoint's rules decide what was created since also where only
// one side has a .gitignore: one deleted since (what it ignored stays)
// or one created since (what it ignores goes, as created since).
func TestRewindGitignoreOnOneSide(t *testing.T) {
	t.Run("deleted since", func(t *testing.T) {
		e := newFormatEnv(t)
		e.write("a/.gitignore", "*.log\n", 0o644)
		e.write("a/x.go", "x\n", 0o644)
		e.write("b/y.go", "y\n", 0o644)
		e.create("cp")
		if err := os.Remove(filepath.Join(e.dir, "a/.gitignore")); err != nil {
			t.Fatal(err)
		}
		e.write("a/new.log", "n\n", 0o644)
		e.checkRewind("cp", []string{"a/.gitignore"}, "a/new.log", "")
	})
	t.Run("created since", func(t *testing.T) {
		e := newFormatEnv(t)
		e.write("a/x.go", "x\n", 0o644)
		e.write("b/y.go", "y\n", 0o644)
		e.create("cp")
		e.write("b/.gitignore", "*.go\n", 0o644)
		e.write("b/z.go", "z\n", 0o644)
		e.checkRewind("cp", []string{"b/.gitignore", "b/z.go"}, "", "b/z.go")
	})
}

// checkRewind dry-runs a rewind to id, expecting changed, then rewinds,
// expecting kept still there and gone removed (either may be "").
func (e *formatEnv) checkRewind(id string, changed []string, kept, gone string) {
	e.t.Helper()
	res, err := e.m.Rewind(e.ctx, id, true)
	if err != nil || !slices.Equal(res.FilesChanged, changed) {
		e.t.Fatalf("dry run: FilesChanged %v, %v; want %v", res.FilesChanged, err, changed)
	}
	e.rewind(id)
	if _, err := os.Stat(filepath.Join(e.dir, kept)); kept != "" && err != nil {
		e.t.Errorf("%s, ignored by the checkpoint's rules, was removed: %v", kept, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, gone)); gone != "" && !os.IsNotExist(err) {
		e.t.Errorf("%s, created since under the checkpoint's rules, is still there", gone)
	}
}
