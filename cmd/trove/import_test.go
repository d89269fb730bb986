package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trove import brings a Claude Code project in once; the session then shows
// like a native one, and a mirror of the store copies it and then nothing.
func TestImportShowMirror(t *testing.T) {
	store := t.TempDir()
	src := filepath.Join("..", "..", "importer", "testdata", "claude")
	code, out, errOut := trove(t, "", "--store", store, "import", "--json", src)
	if code != 0 {
		t.Fatalf("import: %d %s", code, errOut)
	}
	var rep importJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Imported != 2 || len(rep.Sessions) != 2 || rep.Sessions[1].ParentID != rep.Sessions[0].SessionID {
		t.Fatalf("import --json: %v %s", err, out)
	}
	id := rep.Sessions[0].SessionID
	code, out, errOut = trove(t, "", "--store", store, "show", id)
	if code != 0 || !strings.Contains(out, "Done: it says hi.") {
		t.Errorf("show: %d %s %s", code, out, errOut)
	}
	code, out, _ = trove(t, "", "--store", store, "import", src)
	if code != 0 || !strings.Contains(out, "imported 0 sessions, skipped 2") {
		t.Errorf("second import: %d %s", code, out)
	}
	if code, _, _ := trove(t, "", "--store", store, "import", "--from", "nope", src); code != exitUsage {
		t.Errorf("--from nope: exit %d", code)
	}
	missing := filepath.Join(t.TempDir(), "typo")
	if code, _, errOut := trove(t, "", "mirror", missing, t.TempDir()); code == 0 || !strings.Contains(errOut, "no store at") {
		t.Errorf("mirror from a missing dir: %d %s", code, errOut)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("mirror created its missing source")
	}
	dst := t.TempDir()
	if code, out, errOut := trove(t, "", "mirror", store, dst); code != 0 || strings.Contains(out, "copied 0 files") {
		t.Fatalf("mirror: %d %s %s", code, out, errOut)
	}
	code, out, _ = trove(t, "", "mirror", "--json", store, dst)
	var m mirrorJSON
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || m.Copied != 0 || m.Skipped == 0 {
		t.Errorf("second mirror: %d %v %s", code, err, out)
	}
	if code, out, errOut := trove(t, "", "--store", dst, "fsck"); code != 0 {
		t.Errorf("fsck of the mirror: %d %s %s", code, out, errOut)
	}
}
