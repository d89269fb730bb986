package importer

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
)

// storeFiles is every file of a store on disk but caches and locks, by
// name.
func storeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.Contains(rel, ".index") || strings.HasSuffix(rel, ".lock") || strings.HasSuffix(rel, ".lease") {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sourcesUnder(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, d := range dirs {
		fs, _, err := sourceFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	return files
}

// TestFollowEqualsImport feeds each recorded source to a Follower a few
// lines at a time and checks the store ends as a one-shot import of the
// files leaves a fresh one, whatever the steps.
func TestFollowEqualsImport(t *testing.T) {
	ctx := context.Background()
	dirs := []string{"testdata/claude", "testdata/claude-sidechain", "testdata/codex", "testdata/spec002",
		"testdata/heldout/claude", "testdata/heldout/codex", "testdata/heldout/pi/sessions"}
	for _, step := range []int{1, 2, 3, 1000} {
		oneDir, liveDir := t.TempDir(), t.TempDir()
		one, err := trove.Open(ctx, oneDir)
		if err != nil {
			t.Fatal(err)
		}
		live, err := trove.Open(ctx, liveDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*trove.Store{one, live} {
			if _, err := importPiBlobs(ctx, s.Blobs(), "testdata/heldout/pi/blobs", false); err != nil {
				t.Fatal(err)
			}
		}
		files := sourcesUnder(t, dirs...)
		if _, err := Import(ctx, one, files, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Follow(live, path, "", data)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(data, []byte("\n"))
			for i := 0; i < len(lines); i += step {
				chunk := bytes.Join(lines[i:min(i+step, len(lines))], nil)
				if _, err := f.Feed(ctx, chunk); err != nil {
					t.Fatalf("step %d %s: %v", step, path, err)
				}
			}
		}
		one.Close()
		live.Close()
		want, got := storeFiles(t, oneDir), storeFiles(t, liveDir)
		if n := countSuffix(want, "import.json"); n < 8 {
			t.Fatalf("the one-shot import made %d sessions", n)
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("step %d: %s differs:\nimport: %s\nfollow: %s", step, name, w, got[name])
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("step %d: follow wrote %s, import did not", step, name)
			}
		}
	}
}

func countSuffix(files map[string]string, suffix string) int {
	n := 0
	for name := range files {
		if strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}
