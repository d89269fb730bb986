package checkpoint

import (
	"testing"

	"github.com/spf13/afero"
)

// An undo names absent a directory the rewind made, and removes it only
// when nothing else is in it: a file put there after the rewind stays, on
// the memory workspace too (afero's Remove would take a directory with
// everything in it).
func TestUndoKeepsWhatItDoesNotCover(t *testing.T) {
	e := newMemEnv(t)
	e.write("lib/deep/x.go", "package deep\n", t0)
	if _, err := e.m.CreateTree(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.RemoveAll("/ws/lib/deep"); err != nil {
		t.Fatal(err)
	}
	res, err := e.m.Rewind(e.ctx, "c", false)
	if err != nil || res.Undo == "" {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	// Since the rewind, someone puts a file of their own beside x.go.
	e.write("lib/deep/mine.txt", "keep me\n", t0)
	if _, err := e.m.Rewind(e.ctx, res.Undo, false); err != nil {
		t.Fatal(err)
	}
	if ok, _ := afero.DirExists(e.fs, "/ws/lib/deep"); !ok {
		t.Fatal("the undo removed a directory holding a file it does not cover")
	}
	if got := e.read("lib/deep/mine.txt"); got != "keep me\n" {
		t.Fatalf("the undo lost a file it does not cover: %q", got)
	}
	if ok, _ := afero.Exists(e.fs, "/ws/lib/deep/x.go"); ok {
		t.Fatal("the undo left the file the rewind made")
	}
	// With nothing else in it, the directory goes as the undo says.
	if err := e.fs.RemoveAll("/ws/lib/deep"); err != nil {
		t.Fatal(err)
	}
	res, err = e.m.Rewind(e.ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Rewind(e.ctx, res.Undo, false); err != nil {
		t.Fatal(err)
	}
	if ok, _ := afero.DirExists(e.fs, "/ws/lib/deep"); ok {
		t.Fatal("the undo left the empty directory the rewind made")
	}
}
