package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
)

// trove import brings a Claude Code project in once; the session then shows
// like a native one, and a mirror of the store copies it and then nothing.
func TestImportShowMirror(t *testing.T) {
	store := t.TempDir()
	src := filepath.Join("..", "..", "..", "importer", "testdata", "claude")
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
	if code != 0 || !strings.Contains(out, "imported 0 new sessions, 0 updated, and 0 blobs; skipped 2 sessions") {
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

// trove mirror of a store (imported sessions, their blobs, a demo with a
// checkpoint and a run) to a local S3 server: the bucket checks clean
// through trove --store s3://..., lists the same sessions, a second mirror
// copies nothing, and a mirror back to disk checks clean too.
func TestMirrorToS3CLI(t *testing.T) {
	store := t.TempDir()
	if code, _, errOut := trove(t, "", "--store", store, "import", filepath.Join("..", "..", "..", "importer", "testdata", "heldout")); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	if code, _, errOut := trove(t, "", "--store", store, "demo"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	srv := cloudtest.StartS3(t)
	bucket := "s3://" + srv.CreateBucket(t) + "?endpoint=" + srv.URL() + "&region=us-east-1&use_path_style=true&anonymous=true"
	code, out, errOut := trove(t, "", "--json", "mirror", store, bucket)
	var first mirrorJSON
	if err := json.Unmarshal([]byte(out), &first); code != 0 || err != nil || first.Copied == 0 {
		t.Fatalf("mirror to S3: %d %v %s %s", code, err, out, errOut)
	}
	if code, out, errOut := trove(t, "", "--store", bucket, "fsck"); code != 0 || !strings.Contains(out, " 0 problems") {
		t.Errorf("fsck of the bucket: %d %s %s", code, out, errOut)
	}
	_, local, _ := trove(t, "", "--store", store, "ls", "--all")
	_, remote, _ := trove(t, "", "--store", bucket, "ls", "--all")
	if local == "" || local != remote {
		t.Errorf("ls differs:\nlocal\n%s\nbucket\n%s", local, remote)
	}
	code, out, _ = trove(t, "", "--json", "mirror", bucket+"", store)
	var again mirrorJSON
	if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || again.Copied != 0 || again.Skipped != first.Copied+first.Skipped {
		t.Errorf("mirror back onto the source copied something: %d %v %s", code, err, out)
	}
	code, out, _ = trove(t, "", "--json", "mirror", store, bucket)
	if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || again.Copied != 0 {
		t.Errorf("second mirror: %d %v %s", code, err, out)
	}
	back := t.TempDir()
	if code, _, errOut := trove(t, "", "mirror", bucket, back); code != 0 {
		t.Fatalf("mirror back: %s", errOut)
	}
	if code, out, errOut := trove(t, "", "--store", back, "fsck"); code != 0 {
		t.Errorf("fsck of the copy back: %d %s %s", code, out, errOut)
	}
}

// `import --from` takes agent JSONL by its name and by its old one,
// spec002: the same session either way; a name of no format is a usage
// error.
func TestImportFromAgentJSONL(t *testing.T) {
	src := filepath.Join("..", "..", "..", "importer", "testdata", "agent-jsonl")
	id := ""
	for _, from := range []string{"agent-jsonl", "spec002"} {
		store := t.TempDir()
		code, out, errOut := trove(t, "", "--store", store, "import", "--json", "--from", from, src)
		var rep importJSON
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Imported != 1 || rep.Sessions[0].Format != "agent-jsonl" {
			t.Fatalf("import --from %s: %d %s%s", from, code, out, errOut)
		}
		if id != "" && rep.Sessions[0].SessionID != id {
			t.Errorf("--from %s made session %s, --from agent-jsonl %s", from, rep.Sessions[0].SessionID, id)
		}
		id = rep.Sessions[0].SessionID
	}
	if code, _, errOut := trove(t, "", "--store", t.TempDir(), "import", "--from", "spec003", src); code != exitUsage || !strings.Contains(errOut, "agent-jsonl") {
		t.Errorf("--from spec003: exit %d %s", code, errOut)
	}
}

// An imported session answers to the id its agent gave it (Claude Code's
// file name) where a session id is asked for.
func TestAgentSessionID(t *testing.T) {
	store := t.TempDir()
	src := filepath.Join("..", "..", "..", "importer", "testdata", "claude")
	if code, _, errOut := trove(t, "", "--store", store, "import", src); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	claudeID := "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90"
	for _, args := range [][]string{{"show", claudeID}, {"export", "--format", "md", claudeID}, {"session", "context", claudeID}} {
		if code, out, errOut := trove(t, "", append([]string{"--store", store}, args...)...); code != 0 || !strings.Contains(out, "it says hi") {
			t.Errorf("%v: exit %d %s %s", args, code, out, errOut)
		}
	}
	if code, out, errOut := trove(t, "", "--store", store, "fork", claudeID); code != 0 || len(strings.TrimSpace(out)) != 36 {
		t.Errorf("fork: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := trove(t, "", "--store", store, "rm", claudeID); code != 0 {
		t.Errorf("rm: %s", errOut)
	}
	if code, _, errOut := trove(t, "", "--store", store, "show", claudeID); code == 0 || !strings.Contains(errOut, "not exist") {
		t.Errorf("show after rm: exit %d %s", code, errOut)
	}
}
