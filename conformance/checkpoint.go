package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// TestCheckpoint runs the checkpoint conformance suite: manifests and blobs
// in a store newBackend makes (through the real cas store), the workspace a
// real temporary directory. Subtest names are stable; the Checklist group
// holds one test per checkpoint item of the file checkpoints spec's verification
// checklist (docs/formats.md).
func TestCheckpoint(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	cases := []struct {
		name string
		run  func(t *testing.T, nb newStorage)
	}{
		{"Checklist/CheckpointCreation", cpCheckpointCreation},
		{"Checklist/RewindCorrectness", cpRewindCorrectness},
		{"Checklist/RewindDryRun", cpRewindDryRun},
		{"Checklist/NewFileHandling", cpNewFileHandling},
		{"ManifestFields", cpManifestFields},
		{"Dedup", cpDedup},
		{"LineStats", cpLineStats},
		{"Idempotent", cpIdempotent},
		{"TreeIgnore", cpTreeIgnore},
		{"Diff", cpDiff},
		{"ListDeleteRefs", cpListDeleteRefs},
		{"MissingCheckpoint", cpMissingCheckpoint},
		{"Safety/HostileManifest", cpHostileManifest},
		{"Safety/SymlinkInPlaceOfDir", cpSymlinkInPlaceOfDir},
		{"Safety/SymlinkInPlaceOfFile", cpSymlinkInPlaceOfFile},
		{"Safety/CorruptBlob", cpCorruptBlob},
		{"Safety/MissingBlob", cpMissingBlob},
		{"Context", cpContext},
		{"StoreFaults", cpStoreFaults},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newBackend) })
	}
}

// cpEnv is one workspace, one store (recorded by a spy) and a manager.
type cpEnv struct {
	t     *testing.T
	ctx   context.Context
	dir   string // the workspace
	out   string // a directory outside it, which nothing may touch
	spy   *spy.Storage
	blobs *cas.Store
	m     *checkpoint.Manager
}

func newCPEnv(t *testing.T, nb newStorage) *cpEnv {
	t.Helper()
	return newCPEnvOn(t, nb(t))
}

func newCPEnvOn(t *testing.T, st backend.Storage) *cpEnv {
	t.Helper()
	ctx := context.Background()
	base := t.TempDir()
	e := &cpEnv{t: t, ctx: ctx, dir: filepath.Join(base, "ws"), out: filepath.Join(base, "outside"), spy: spy.New(st)}
	for _, d := range []string{e.dir, e.out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.write("outside/secret.txt", "do not touch\n", 0o644)
	blobs, err := cas.Open(ctx, e.spy)
	if err != nil {
		t.Fatal(err)
	}
	e.blobs = blobs
	ws, err := checkpoint.Dir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.New(e.spy, blobs, ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e.m = m
	return e
}

// path maps a workspace path, or "outside/..." to the outside directory.
func (e *cpEnv) path(p string) string {
	if rest, ok := strings.CutPrefix(p, "outside/"); ok {
		return filepath.Join(e.out, filepath.FromSlash(rest))
	}
	return filepath.Join(e.dir, filepath.FromSlash(p))
}

func (e *cpEnv) write(p, content string, mode fs.FileMode) {
	e.t.Helper()
	full := e.path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) read(p string) (string, bool) {
	e.t.Helper()
	b, err := os.ReadFile(e.path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b), true
}

func (e *cpEnv) remove(p string) {
	e.t.Helper()
	if err := os.RemoveAll(e.path(p)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) symlink(target, p string) {
	e.t.Helper()
	if err := os.Symlink(target, e.path(p)); err != nil {
		e.t.Fatal(err)
	}
}

// snapshot describes every path under root: type, mode, content or target.
func snapshotDir(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode().Perm())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("file %v %d %s %q", fi.Mode().Perm(), fi.Size(), fi.ModTime().Format("15:04:05.000000000"), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *cpEnv) both() map[string]string {
	s := snapshotDir(e.t, e.dir)
	for k, v := range snapshotDir(e.t, e.out) {
		s["OUTSIDE/"+k] = v
	}
	return s
}

func (e *cpEnv) rewind(id string, dry bool) *checkpoint.RewindFilesResult {
	e.t.Helper()
	res, err := e.m.Rewind(e.ctx, id, dry)
	if err != nil {
		e.t.Fatalf("Rewind(%s, dry=%v): %v", id, dry, err)
	}
	if !res.CanRewind || res.Error != "" {
		e.t.Fatalf("Rewind(%s, dry=%v) = %+v", id, dry, res)
	}
	return res
}

func (e *cpEnv) wantFile(p, content string, mode fs.FileMode) {
	e.t.Helper()
	got, ok := e.read(p)
	if !ok {
		e.t.Fatalf("%s missing, want %q", p, content)
	}
	if got != content {
		e.t.Fatalf("%s = %q, want %q", p, got, content)
	}
	fi, err := os.Lstat(e.path(p))
	if err != nil {
		e.t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
		e.t.Fatalf("%s mode %v, want regular %v", p, fi.Mode(), mode)
	}
}

func (e *cpEnv) wantAbsent(p string) {
	e.t.Helper()
	if _, err := os.Lstat(e.path(p)); !errors.Is(err, fs.ErrNotExist) {
		e.t.Fatalf("%s exists (err %v), want absent", p, err)
	}
}

func cpCheckpointCreation(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("main.go", "package main\n", 0o644)
	e.write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	man, err := e.m.Create(e.ctx, "msg-1", []string{"main.go", "run.sh", "new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	// The tool mutates the files after the snapshot; the checkpoint keeps
	// what was there before.
	e.write("main.go", "package main\n\nfunc main() {}\n", 0o644)
	e.write("new.txt", "created by the tool\n", 0o644)
	loaded, err := e.m.Load(e.ctx, "msg-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Files) != 3 || len(man.Files) != 3 {
		t.Fatalf("manifest has %d files, want 3", len(loaded.Files))
	}
	for _, f := range loaded.Files {
		switch f.Path {
		case "main.go", "run.sh":
			if !f.Exists || f.Digest == "" {
				t.Fatalf("%s: %+v", f.Path, f)
			}
			ref, err := cas.ParseRef(f.Digest)
			if err != nil {
				t.Fatal(err)
			}
			data, err := e.blobs.Get(e.ctx, ref)
			if err != nil {
				t.Fatalf("blob of %s: %v", f.Path, err)
			}
			want := map[string]string{"main.go": "package main\n", "run.sh": "#!/bin/sh\necho hi\n"}[f.Path]
			if string(data) != want || f.Size != int64(len(want)) {
				t.Fatalf("%s: blob %q size %d, want %q", f.Path, data, f.Size, want)
			}
		case "new.txt":
			if f.Exists {
				t.Fatalf("new.txt recorded as existing: %+v", f)
			}
		}
	}
}

func cpRewindCorrectness(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	bin := string([]byte{0, 1, 2, 0xff, '\n', 0})
	e.write("a.txt", "alpha\nbeta\n", 0o644)
	e.write("bin/tool", "#!/bin/sh\n", 0o755)
	e.write("data.bin", bin, 0o600)
	e.write("empty", "", 0o644)
	e.write("deep/er/still/x.go", "package x\n", 0o640)
	e.symlink("a.txt", "link")
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, e.dir)

	e.write("a.txt", "alpha\nBETA\ngamma\n", 0o600)
	e.write("bin/tool", "#!/bin/sh\nrm -rf /\n", 0o644)
	e.write("data.bin", "text now\n", 0o644)
	e.write("empty", "not empty", 0o644)
	e.remove("deep")
	e.remove("link")
	e.symlink("bin/tool", "link")

	res := e.rewind("cp", false)
	for _, p := range []string{"a.txt", "bin/tool", "data.bin", "empty", "deep/er/still/x.go", "link"} {
		if !slices.Contains(res.FilesChanged, p) {
			t.Errorf("FilesChanged %v lacks %s", res.FilesChanged, p)
		}
	}
	e.wantFile("a.txt", "alpha\nbeta\n", 0o644)
	e.wantFile("bin/tool", "#!/bin/sh\n", 0o755)
	e.wantFile("data.bin", bin, 0o600)
	e.wantFile("empty", "", 0o644)
	e.wantFile("deep/er/still/x.go", "package x\n", 0o640)
	if target, err := os.Readlink(e.path("link")); err != nil || target != "a.txt" {
		t.Fatalf("link -> %q, %v; want a.txt", target, err)
	}
	after := snapshotDir(t, e.dir)
	for p, v := range before {
		// Rewritten files have new mtimes; compare everything else.
		if strip(after[p]) != strip(v) {
			t.Errorf("%s: after rewind %q, at checkpoint %q", p, after[p], v)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s exists after rewind, not at checkpoint", p)
		}
	}
}

// strip drops the mtime from a snapshotDir value.
func strip(v string) string {
	f := strings.SplitN(v, " ", 5)
	if len(f) == 5 && f[0] == "file" {
		return strings.Join([]string{f[0], f[1], f[2], f[4]}, " ")
	}
	return v
}

func cpRewindDryRun(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "1\n2\n3\n", 0o644)
	e.write("gone.txt", "x\ny\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "1\ntwo\n3\n4\n", 0o755)
	e.remove("gone.txt")
	e.write("new/n.txt", "n\n", 0o644)
	ws := e.both()
	mutations := len(e.spy.Mutations())

	dry := e.rewind("cp", true)
	if got := e.both(); !maps(got, ws) {
		t.Fatalf("dry run changed the workspace:\nbefore %v\nafter  %v", ws, got)
	}
	if m := e.spy.Mutations(); len(m) != mutations {
		t.Fatalf("dry run wrote to the store: %v", m[mutations:])
	}
	want := []string{"a.txt", "gone.txt", "new/n.txt"}
	if !slices.Equal(dry.FilesChanged, want) {
		t.Fatalf("dry run FilesChanged %v, want %v", dry.FilesChanged, want)
	}
	// a.txt: "two" and "4" go, "2" comes back; gone.txt: 2 lines back;
	// new/n.txt: 1 line goes.
	if dry.Insertions != 3 || dry.Deletions != 3 {
		t.Fatalf("dry run +%d -%d, want +3 -3", dry.Insertions, dry.Deletions)
	}
	real := e.rewind("cp", false)
	if !slices.Equal(real.FilesChanged, dry.FilesChanged) || real.Insertions != dry.Insertions || real.Deletions != dry.Deletions {
		t.Fatalf("rewind %+v differs from its dry run %+v", real, dry)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func cpNewFileHandling(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("keep.txt", "k\n", 0o644)
	// Named checkpoint: absent paths are recorded and deleted later.
	if _, err := e.m.Create(e.ctx, "named", []string{"keep.txt", "created.txt", "sub/dir/created.go"}); err != nil {
		t.Fatal(err)
	}
	e.write("created.txt", "new\n", 0o644)
	e.write("sub/dir/created.go", "package dir\n", 0o644)
	e.write("unrelated.txt", "not in the checkpoint\n", 0o644)
	res := e.rewind("named", false)
	if !slices.Equal(res.FilesChanged, []string{"created.txt", "sub/dir/created.go"}) || res.Deletions != 2 {
		t.Fatalf("named rewind %+v", res)
	}
	e.wantAbsent("created.txt")
	e.wantAbsent("sub/dir/created.go")
	e.wantFile("unrelated.txt", "not in the checkpoint\n", 0o644) // not named: untouched

	// Tree checkpoint: anything new and not ignored goes, directories too.
	e.remove("sub")
	if _, err := e.m.CreateTree(e.ctx, "tree"); err != nil {
		t.Fatal(err)
	}
	e.write("fresh/nested/a.txt", "a\n", 0o644)
	e.write("b.txt", "b\n", 0o644)
	e.write("node_modules/pkg/index.js", "ignored\n", 0o644)
	res = e.rewind("tree", false)
	if !slices.Equal(res.FilesChanged, []string{"b.txt", "fresh/nested/a.txt"}) {
		t.Fatalf("tree rewind FilesChanged %v", res.FilesChanged)
	}
	e.wantAbsent("b.txt")
	e.wantAbsent("fresh")
	e.wantFile("node_modules/pkg/index.js", "ignored\n", 0o644)
}

func cpManifestFields(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "abc\n", 0o640)
	man, err := e.m.Create(e.ctx, "cp-1", []string{"a.txt", "missing"}, checkpoint.WithSession("sess-9"), checkpoint.WithMessage("user-msg-3"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := e.spy.Inner().ReadFile(e.ctx, e.m.Dir()+"/cp-1.json")
	if err != nil {
		t.Fatalf("manifest not at %s/cp-1.json: %v", e.m.Dir(), err)
	}
	// A few named files are listed in the manifest itself (version 1); a
	// tree's entries are in tree objects (version 2, below).
	for _, want := range []string{`"version":1`, `"session":"sess-9"`, `"message":"user-msg-3"`, `"path":"a.txt"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("manifest lacks %s: %s", want, raw)
		}
	}
	if _, err := e.m.CreateTree(e.ctx, "tree-1"); err != nil {
		t.Fatal(err)
	}
	rawTree, err := e.spy.Inner().ReadFile(e.ctx, e.m.Dir()+"/tree-1.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version":2`, `"tree":"blob:sha256:`} {
		if !bytes.Contains(rawTree, []byte(want)) || bytes.Contains(rawTree, []byte(`"files"`)) {
			t.Errorf("tree manifest lacks %s or lists its files: %s", want, rawTree)
		}
	}
	loaded, err := e.m.Load(e.ctx, "cp-1")
	if err != nil {
		t.Fatal(err)
	}
	full, err := loaded.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"session":"sess-9"`, `"message":"user-msg-3"`, `"path":"a.txt"`, `"exists":true`, `"mode":"0640"`, `"size":4`, `"digest":"blob:sha256:`, `"path":"missing","exists":false`} {
		if !bytes.Contains(full, []byte(want)) {
			t.Errorf("loaded manifest lacks %s: %s", want, full)
		}
	}
	if man.Session != "sess-9" || man.Message != "user-msg-3" || man.Kind != checkpoint.KindFiles {
		t.Fatalf("manifest %+v", man)
	}
	// One object per checkpoint, written whole.
	var manifests int
	for fi, err := range e.spy.Inner().List(e.ctx, e.m.Dir()) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(fi.Name, ".json") {
			manifests++
		}
	}
	if manifests != 2 {
		t.Fatalf("%d manifest objects, want 2", manifests)
	}
	if n := e.spy.Count("WriteFile"); n == 0 {
		t.Fatal("the manifest was not written with WriteFile (atomic replace)")
	}
}

func countBlobs(t *testing.T, e *cpEnv) int {
	t.Helper()
	n := 0
	for _, err := range e.blobs.Walk(e.ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func cpDedup(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}, 512)
	// A session externalized this image already.
	if _, err := e.blobs.Put(e.ctx, image); err != nil {
		t.Fatal(err)
	}
	e.write("img.png", string(image), 0o644)
	e.write("a.txt", "same\n", 0o644)
	e.write("b.txt", "same\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, e); n != 3 {
		t.Fatalf("%d blobs after the first checkpoint, want 3 (the image once, a.txt = b.txt once, the tree)", n)
	}
	if _, err := e.m.CreateTree(e.ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, e); n != 3 {
		t.Fatalf("%d blobs after an unchanged second checkpoint, want 3 (its tree is the first one's)", n)
	}
	e.write("a.txt", "changed\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "three"); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, e); n != 5 {
		t.Fatalf("%d blobs after changing one file, want 5 (its content and a new tree)", n)
	}
}

func cpLineStats(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("code.go", "a\nb\nc\nd\ne\n", 0o644)
	e.write("img.bin", "\x00\x01\x02", 0o644)
	e.write("nonl.txt", "x\ny", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	e.write("code.go", "a\nB\nc\ne\nf\ng\n", 0o644) // b->B, d gone, f g added
	e.write("img.bin", "\x00\x09", 0o644)
	e.write("nonl.txt", "x\ny\n", 0o644) // the last line gains its newline
	res := e.rewind("cp", true)
	// Rewind direction: lines it adds back (b, d, "y") and removes (B, f, g, "y\n").
	if res.Insertions != 3 || res.Deletions != 4 {
		t.Fatalf("+%d -%d, want +3 -4 (%+v)", res.Insertions, res.Deletions, res)
	}
	if !slices.Contains(res.FilesChanged, "img.bin") {
		t.Fatalf("binary change missing from %v", res.FilesChanged)
	}
	d, err := e.m.Diff(e.ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Files {
		switch f.Path {
		case "img.bin":
			if !f.Binary || f.Insertions != 0 || f.Deletions != 0 {
				t.Fatalf("binary diff %+v", f)
			}
		case "code.go":
			if f.Insertions != 3 || f.Deletions != 2 || f.Status != "modified" {
				t.Fatalf("code.go diff %+v, want +3 -2 modified", f)
			}
		}
	}
}

func cpIdempotent(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "a\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "b\n", 0o644)
	e.write("n.txt", "n\n", 0o644)
	if res := e.rewind("cp", false); len(res.FilesChanged) != 2 {
		t.Fatalf("first rewind %+v", res)
	}
	state := e.both()
	res := e.rewind("cp", false)
	if len(res.FilesChanged) != 0 || res.Insertions != 0 || res.Deletions != 0 {
		t.Fatalf("second rewind changed %+v", res)
	}
	if got := e.both(); !maps(got, state) {
		t.Fatalf("second rewind touched the workspace:\n%v\n%v", state, got)
	}
	if ents, _ := os.ReadDir(e.dir); slices.ContainsFunc(ents, func(d fs.DirEntry) bool { return strings.HasPrefix(d.Name(), ".trove-tmp") }) {
		t.Fatal("temporary files left behind")
	}
}

func cpTreeIgnore(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write(".gitignore", "*.log\n/out/\n!keep.log\n", 0o644)
	e.write("app.log", "log\n", 0o644)
	e.write("keep.log", "kept\n", 0o644)
	e.write("out/x", "x\n", 0o644)
	e.write("src/.gitignore", "gen/\n", 0o644)
	e.write("src/gen/g.go", "gen\n", 0o644)
	e.write("src/main.go", "main\n", 0o644)
	e.write(".git/HEAD", "ref\n", 0o644)
	e.write("node_modules/m/i.js", "m\n", 0o644)
	e.write("big.bin", strings.Repeat("z", 2000), 0o644)
	e.write("secret.env", "k=v\n", 0o644)
	man, err := e.m.CreateTree(e.ctx, "cp", checkpoint.WithMaxFileSize(1000), checkpoint.WithIgnore("*.env"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range man.Files {
		if f.Type != checkpoint.TypeDir {
			files = append(files, f.Path)
		}
	}
	want := []string{".gitignore", "keep.log", "src/.gitignore", "src/main.go"}
	if !slices.Equal(files, want) {
		t.Fatalf("snapshot files %v, want %v", files, want)
	}
	if len(man.Skipped) != 1 || man.Skipped[0].Path != "big.bin" || man.Skipped[0].Reason != "size" || man.Skipped[0].Size != 2000 {
		t.Fatalf("skipped %+v, want big.bin for its size", man.Skipped)
	}
	// New ignored files and the skipped big file survive a rewind.
	e.write("new.log", "n\n", 0o644)
	e.write("src/gen/h.go", "h\n", 0o644)
	e.write("big.bin", strings.Repeat("y", 3000), 0o644)
	e.write("src/new.go", "new\n", 0o644)
	res := e.rewind("cp", false)
	if !slices.Equal(res.FilesChanged, []string{"src/new.go"}) {
		t.Fatalf("FilesChanged %v, want [src/new.go]", res.FilesChanged)
	}
	for _, p := range []string{"new.log", "src/gen/h.go", "app.log", "out/x", ".git/HEAD", "node_modules/m/i.js", "secret.env"} {
		if _, ok := e.read(p); !ok {
			t.Errorf("ignored %s was removed", p)
		}
	}
	if got, _ := e.read("big.bin"); got != strings.Repeat("y", 3000) {
		t.Error("skipped big.bin was changed")
	}
}

func cpDiff(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "1\n2\n", 0o644)
	e.write("b.txt", "b\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "1\n2\n3\n", 0o644)
	e.remove("b.txt")
	e.write("c.txt", "c\nc\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "two"); err != nil {
		t.Fatal(err)
	}
	want := []checkpoint.FileDiff{
		{Path: "a.txt", Status: "modified", Insertions: 1},
		{Path: "b.txt", Status: "deleted", Deletions: 1},
		{Path: "c.txt", Status: "added", Insertions: 2},
	}
	d, err := e.m.DiffCheckpoints(e.ctx, "one", "two")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Files, want) || d.Insertions != 3 || d.Deletions != 1 {
		t.Fatalf("DiffCheckpoints = %+v, want %+v", d, want)
	}
	w, err := e.m.Diff(e.ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Files, want) {
		t.Fatalf("Diff(one, workspace) = %+v, want %+v", w.Files, want)
	}
	e.write("a.txt", "1\n2\n", 0o755)
	w, err = e.m.Diff(e.ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Files) == 0 || w.Files[0].Path != "a.txt" || w.Files[0].Status != "mode" {
		t.Fatalf("mode change not reported: %+v", w.Files)
	}
}

func cpListDeleteRefs(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "a\n", 0o644)
	for _, id := range []string{"b", "a", "c"} {
		if _, err := e.m.CreateTree(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := e.m.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("List = %v", ids)
	}
	refs, err := e.m.Refs(e.ctx)
	if err != nil || len(refs) != 2 {
		t.Fatalf("Refs = %v, %v; want the one blob and the one tree all three share", refs, err)
	}
	if err := e.m.Delete(e.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Delete(e.ctx, "b"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
	if _, err := e.m.Load(e.ctx, "b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a deleted checkpoint: %v", err)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("x", 200), "nul\x00"} {
		if _, err := e.m.Create(e.ctx, bad, nil); !errors.Is(err, checkpoint.ErrInvalidID) {
			t.Errorf("Create(id %q): %v, want ErrInvalidID", bad, err)
		}
	}
}

func cpMissingCheckpoint(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	res, err := e.m.Rewind(e.ctx, "nope", false)
	if !errors.Is(err, checkpoint.ErrNotFound) || res == nil || res.CanRewind || res.Error == "" {
		t.Fatalf("Rewind of a missing checkpoint = %+v, %v", res, err)
	}
}

func cpHostileManifest(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "a\n", 0o644)
	if _, err := e.m.Create(e.ctx, "good", []string{"a.txt"}); err != nil {
		t.Fatal(err)
	}
	good, err := e.m.Load(e.ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	digest := good.Files[0].Digest
	entry := func(p string) string {
		return fmt.Sprintf(`{"path":%q,"exists":true,"digest":%q,"size":2,"mode":"0644"}`, p, digest)
	}
	cases := map[string]string{
		"absolute":   entry(e.path("outside/secret.txt")),
		"dotdot":     entry("../outside/secret.txt"),
		"inner-dots": entry("x/../../outside/secret.txt"),
		"nul":        `{"path":"a\u0000b","exists":false}`,
		"backslash":  entry(`..\\outside\\secret.txt`),
		"empty":      entry(""),
		"dot":        entry("./a.txt"),
		"below-file": entry("a.txt") + "," + entry("a.txt/x"),
		"bad-digest": `{"path":"a.txt","exists":true,"digest":"blob:sha256:zz","mode":"0644"}`,
		"unsorted":   entry("b") + "," + entry("a"),
	}
	before := e.both()
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			id := "hostile-" + name
			raw := fmt.Sprintf(`{"version":1,"id":%q,"kind":"files","createdAt":"2026-01-01T00:00:00Z","files":[%s]}`, id, files)
			if err := e.spy.Inner().WriteFile(e.ctx, e.m.Dir()+"/"+id+".json", []byte(raw)); err != nil {
				t.Fatal(err)
			}
			for _, dry := range []bool{true, false} {
				res, err := e.m.Rewind(e.ctx, id, dry)
				if err == nil || res.CanRewind || res.Error == "" {
					t.Fatalf("Rewind(dry=%v) of a hostile manifest = %+v, %v", dry, res, err)
				}
				if !errors.Is(err, checkpoint.ErrUnsafePath) && !errors.Is(err, checkpoint.ErrCorrupt) {
					t.Fatalf("error %v wraps neither ErrUnsafePath nor ErrCorrupt", err)
				}
			}
			if got := e.both(); !maps(got, before) {
				t.Fatalf("a refused rewind changed files:\n%v\n%v", before, got)
			}
		})
	}
}

func cpSymlinkInPlaceOfDir(t *testing.T, nb newStorage) {
	for _, kind := range []string{"tree", "files"} {
		t.Run(kind, func(t *testing.T) {
			e := newCPEnv(t, nb)
			e.write("src/a.go", "package a\n", 0o644)
			var err error
			if kind == "tree" {
				_, err = e.m.CreateTree(e.ctx, "cp")
			} else {
				_, err = e.m.Create(e.ctx, "cp", []string{"src/a.go", "src/new.go"})
			}
			if err != nil {
				t.Fatal(err)
			}
			// The directory becomes a symlink to a directory outside the root,
			// holding files of the same names.
			e.remove("src")
			e.write("outside/a.go", "outside a\n", 0o644)
			e.write("outside/new.go", "outside new\n", 0o644)
			e.symlink(e.out, "src")
			outside := snapshotDir(t, e.out)

			dry := e.rewind("cp", true)
			if !slices.Contains(dry.FilesChanged, "src") {
				t.Fatalf("dry run %+v does not report the symlink", dry)
			}
			e.rewind("cp", false)
			if got := snapshotDir(t, e.out); !maps(got, outside) {
				t.Fatalf("rewind wrote outside the root:\n%v\n%v", outside, got)
			}
			fi, err := os.Lstat(e.path("src"))
			if err != nil || !fi.IsDir() {
				t.Fatalf("src is %v (%v), want a real directory", fi, err)
			}
			e.wantFile("src/a.go", "package a\n", 0o644)
			e.wantAbsent("src/new.go")
		})
	}
}

func cpSymlinkInPlaceOfFile(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "mine\n", 0o644)
	if _, err := e.m.Create(e.ctx, "cp", []string{"a.txt", "absent.txt"}); err != nil {
		t.Fatal(err)
	}
	e.remove("a.txt")
	e.symlink(e.path("outside/secret.txt"), "a.txt")
	e.symlink(e.path("outside/secret.txt"), "absent.txt")
	outside := snapshotDir(t, e.out)
	e.rewind("cp", false)
	if got := snapshotDir(t, e.out); !maps(got, outside) {
		t.Fatalf("rewind wrote through a symlink:\n%v\n%v", outside, got)
	}
	e.wantFile("a.txt", "mine\n", 0o644)
	e.wantAbsent("absent.txt")
}

func cpCorruptBlob(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "original content\n", 0o644)
	e.write("b.txt", "other\n", 0o644)
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	// Flip bytes all through every stored blob object but its first
	// header (a pack holds the files' records and the tree's).
	st := e.spy.Inner()
	corrupted := 0
	for info, err := range backend.Walk(e.ctx, st, "blobs") {
		if err != nil {
			t.Fatal(err)
		}
		if info.IsDir || info.Size == 0 || strings.Contains(info.Name, "/index/") {
			continue
		}
		data, err := st.ReadFile(e.ctx, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i := 20; i < len(data); i += 7 {
			data[i] ^= 0x5a
		}
		if err := st.WriteFile(e.ctx, info.Name, data); err != nil {
			t.Fatal(err)
		}
		corrupted++
	}
	if corrupted == 0 {
		t.Fatal("no blob object found under blobs/")
	}
	e.write("a.txt", "changed\n", 0o644)
	e.write("b.txt", "changed too\n", 0o644)
	before := e.both()
	for _, dry := range []bool{true, false} {
		res, err := e.m.Rewind(e.ctx, "cp", dry)
		if !errors.Is(err, checkpoint.ErrCorrupt) || res.CanRewind || !strings.Contains(res.Error, ".txt") && !strings.Contains(res.Error, "tree blob:") {
			t.Fatalf("Rewind(dry=%v) with corrupt blobs = %+v, %v; want CanRewind false naming the file or its tree", dry, res, err)
		}
	}
	if got := e.both(); !maps(got, before) {
		t.Fatalf("files touched before the corruption was found:\n%v\n%v", before, got)
	}
}

func cpMissingBlob(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "a\n", 0o644)
	e.write("b.txt", "b\n", 0o644)
	man, err := e.m.CreateTree(e.ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cas.ParseRef(man.Files[1].Digest) // b.txt
	if err != nil {
		t.Fatal(err)
	}
	if err := e.blobs.Delete(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	e.remove("a.txt")
	e.write("b.txt", "changed\n", 0o644)
	before := e.both()
	res, err := e.m.Rewind(e.ctx, "cp", false)
	if !errors.Is(err, checkpoint.ErrCorrupt) || res.CanRewind || !strings.Contains(res.Error, "b.txt") {
		t.Fatalf("Rewind with a missing blob = %+v, %v", res, err)
	}
	if got := e.both(); !maps(got, before) {
		t.Fatal("a.txt was restored although b.txt's blob is missing: rewind is not all-checked-first")
	}
}

func cpContext(t *testing.T, nb newStorage) {
	e := newCPEnv(t, nb)
	e.write("a.txt", "a\n", 0o644)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.m.CreateTree(ctx, "cp"); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateTree with a cancelled context: %v", err)
	}
	if _, err := e.m.Load(e.ctx, "cp"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a cancelled CreateTree left a manifest: %v", err)
	}
	if _, err := e.m.CreateTree(e.ctx, "cp"); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "b\n", 0o644)
	if _, err := e.m.Rewind(ctx, "cp", false); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rewind with a cancelled context: %v", err)
	}
	if got, _ := e.read("a.txt"); got != "b\n" {
		t.Fatal("a cancelled rewind changed a file")
	}
}

func cpStoreFaults(t *testing.T, nb newStorage) {
	inner := nb(t)
	for _, op := range []string{"WriteFile", "ReadFile"} {
		t.Run(op, func(t *testing.T) {
			st := faulty.New(inner, faulty.FailFrom(1, faulty.ErrInjected, op))
			e := newCPEnvOn(t, st)
			e.write("a.txt", "a\n", 0o644)
			_, err := e.m.CreateTree(e.ctx, "cp-"+op)
			if op == "WriteFile" && !errors.Is(err, faulty.ErrInjected) {
				t.Fatalf("CreateTree with failing %s: %v", op, err)
			}
			if op == "ReadFile" {
				if err != nil {
					t.Fatalf("CreateTree needs no ReadFile that matters: %v", err)
				}
				res, err := e.m.Rewind(e.ctx, "cp-"+op, false)
				if !errors.Is(err, faulty.ErrInjected) || res.CanRewind {
					t.Fatalf("Rewind with failing ReadFile = %+v, %v", res, err)
				}
			}
		})
	}
}
