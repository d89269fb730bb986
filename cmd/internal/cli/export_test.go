package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/viewer/viewertest"
)

func TestExportCommand(t *testing.T) {
	store, id := viewertest.Store(t)
	code, out, errOut := trove(t, "", "--store", store, "export", id[:8])
	if code != exitOK || !strings.Contains(out, "Find the bug ZEBRA-42") || !strings.Contains(out, "&lt;script&gt;") || strings.Contains(out, "<script") {
		t.Fatalf("export html: exit %d, stderr %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "s.md")
	if code, _, errOut := trove(t, "", "--store", store, "export", id, "--format", "md", "-o", file); code != exitOK {
		t.Fatalf("export md: exit %d: %s", code, errOut)
	}
	md, _ := os.ReadFile(file)
	if !strings.Contains(string(md), "Tool call `grep`") {
		t.Errorf("markdown file:\n%s", md)
	}
	code, out, _ = trove(t, "", "--store", store, "export", id, "--format", "jsonl")
	if code != exitOK || strings.Count(out, "\n") != 5 || !strings.HasPrefix(out, `{"type":"session","version":3,"id":"`+id) {
		t.Errorf("export jsonl: exit %d:\n%s", code, out)
	}
	if code, _, _ := trove(t, "", "--store", store, "export", id, "--format", "pdf"); code != exitUsage {
		t.Errorf("bad format: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := trove(t, "", "--store", store, "export", "nosuchsession"); code == exitOK {
		t.Error("export of a missing session succeeded")
	}
}
