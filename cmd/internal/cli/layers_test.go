package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlobPutGetVerify(t *testing.T) {
	root := t.TempDir()
	store := "file://" + root
	src := filepath.Join(t.TempDir(), "in.bin")
	data := []byte(strings.Repeat("trove blob\n", 5000))
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := trove(t, "", "--store", store, "blob", "put", src)
	ref := strings.TrimSpace(out)
	if code != exitOK || !strings.HasPrefix(ref, "blob:sha256:") || len(ref) != len("blob:sha256:")+64 {
		t.Fatalf("put: %d %q %s", code, out, errOut)
	}
	code, out, errOut = trove(t, "", "--store", store, "blob", "get", ref)
	if code != exitOK || out != string(data) {
		t.Fatalf("get: exit %d, %d bytes back, %s", code, len(out), errOut)
	}
	if code, out, _ = trove(t, "", "--store", store, "blob", "verify"); code != exitOK || !strings.Contains(out, "1 good, 0 bad") {
		t.Fatalf("verify of a good store: %d %s", code, out)
	}
	// Flip one stored byte: verify names the ref and exits 3.
	var obj string
	filepath.WalkDir(filepath.Join(root, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ref[len("blob:sha256:"):]) {
			obj = p
		}
		return nil
	})
	stored, err := os.ReadFile(obj)
	if err != nil {
		t.Fatalf("stored object for %s: %v", ref, err)
	}
	stored[len(stored)-1] ^= 0xff
	if err := os.WriteFile(obj, stored, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = trove(t, "", "--store", store, "blob", "verify")
	if code != exitProblems || !strings.Contains(out, "BAD "+ref) {
		t.Fatalf("verify of a corrupt blob: exit %d, %s", code, out)
	}
	if code, _, _ = trove(t, "", "--store", store, "blob", "get", "blob:sha256:XYZ"); code != exitUsage {
		t.Fatalf("get of a malformed ref: exit %d, want %d", code, exitUsage)
	}
}

func TestCheckpointCreateDiffRewind(t *testing.T) {
	store := "file://" + t.TempDir()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/a.txt", "one\ntwo\nthree\n")
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "create", "--dir", dir, "cp1"); code != exitOK {
		t.Fatalf("create: %d %s", code, errOut)
	}
	write("src/a.txt", "one\n2\n")
	write("new.txt", "created later\n")

	code, out, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--dir", dir, "cp1", "--dry-run", "--json")
	var res struct {
		CanRewind    bool     `json:"can_rewind"`
		FilesChanged []string `json:"files_changed"`
		Insertions   int      `json:"insertions"`
		Deletions    int      `json:"deletions"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("dry run: %d %s %s", code, out, errOut)
	}
	// Rewinding adds back "two" and "three", removes "2" and the new file's line.
	if !res.CanRewind || strings.Join(res.FilesChanged, ",") != "new.txt,src/a.txt" || res.Insertions != 2 || res.Deletions != 2 {
		t.Fatalf("dry run report: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatalf("the dry run touched the workspace: %v", err)
	}
	if code, _, errOut = trove(t, "", "--store", store, "checkpoint", "rewind", "--dir", dir, "cp1"); code != exitOK {
		t.Fatalf("rewind: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src/a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("a.txt after rewind: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt after rewind: %v", err)
	}
	if code, out, _ = trove(t, "", "--store", store, "checkpoint", "diff", "--dir", dir, "cp1"); code != exitOK || !strings.Contains(out, "0 files") {
		t.Fatalf("diff after rewind: %d %s", code, out)
	}
}

func TestSessionContextFile(t *testing.T) {
	code, out, errOut := trove(t, "", "--store", "mem://", "session", "context", "../../../session/testdata/v3-reference.jsonl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got, want any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("../../../session/testdata/v3-reference.context.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(golden, &want); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("context differs from the golden file:\n got %s\nwant %s", g, w)
	}
}
