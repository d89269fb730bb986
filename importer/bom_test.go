package importer

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportBOMAndCRLF imports recordings saved with a byte order mark
// and CRLF line ends (testdata/bom-crlf) and the same files without
// either, at the same paths in another directory: their sessions are the
// same, so the first line is not dropped for its mark and a Codex rollout
// still names its session. TestFollowEqualsImport follows them too.
func TestImportBOMAndCRLF(t *testing.T) {
	src, plain := filepath.Join("testdata", "bom-crlf"), t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) || !bytes.Contains(b, []byte("\r\n")) {
			t.Fatalf("%s has no byte order mark or no CRLF", p)
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(plain, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, bytes.ReplaceAll(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), []byte("\r\n"), []byte("\n")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	sessions := func(dir string) map[string]string {
		store := t.TempDir()
		files := importedFiles(t, store, dir)
		out := map[string]string{}
		for name, b := range files {
			// import.json names the source, its size and hash: not the same.
			if strings.HasPrefix(name, "sessions/") && !strings.HasSuffix(name, "import.json") {
				out[name] = b
			}
		}
		return out
	}
	want, got := sessions(plain), sessions(src)
	if len(want) != 6 {
		t.Fatalf("the plain files made %d session files and sidecars, not 6", len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nplain: %.600s\nBOM and CRLF: %.600s", name, w, got[name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("BOM and CRLF made %d files, the plain ones %d", len(got), len(want))
	}
}

// WalkRoot has WalkDir follow a root linked to a directory, and leaves a
// link to a file (walked as itself) and a plain directory as they are.
func TestWalkRoot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(file, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{dir, "dirlink"}, {file, "filelink.jsonl"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	sep := string(filepath.Separator)
	for in, want := range map[string]string{dir: dir, filepath.Join(dir, "dirlink"): filepath.Join(dir, "dirlink") + sep,
		filepath.Join(dir, "filelink.jsonl"): filepath.Join(dir, "filelink.jsonl"), filepath.Join(dir, "none"): filepath.Join(dir, "none")} {
		if got := WalkRoot(in); got != want {
			t.Errorf("WalkRoot(%s) = %s, want %s", in, got, want)
		}
	}
	var walked []string
	filepath.WalkDir(WalkRoot(filepath.Join(dir, "dirlink")), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			walked = append(walked, p)
		}
		return err
	})
	if len(walked) != 3 || !strings.HasPrefix(walked[0], filepath.Join(dir, "dirlink")+sep) {
		t.Errorf("walked through the link: %v", walked)
	}
}
