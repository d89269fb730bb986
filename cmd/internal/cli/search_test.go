package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSearchCommand(t *testing.T) {
	home := t.TempDir()
	store := filepath.Join(home, "store")
	if code, out, errOut := trove(t, "", "--store", store, "demo"); code != exitOK {
		t.Fatalf("demo: %s %s", errOut, out)
	}
	search := func(args ...string) (int, []searchJSON, string) {
		t.Helper()
		code, out, errOut := trove(t, "", append([]string{"--store", store, "--json", "search", "--all"}, args...)...)
		var hits []searchJSON
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var h searchJSON
			if err := json.Unmarshal([]byte(line), &h); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			hits = append(hits, h)
		}
		return code, hits, errOut
	}
	// Thinking, in both the session and its fork.
	code, hits, errOut := search("screenshot", "shows")
	if code != exitOK || len(hits) != 2 {
		t.Fatalf("search: %d %s %+v", code, errOut, hits)
	}
	for _, h := range hits {
		if h.EntryID == "" || h.SessionID == "" || h.Score <= 0 || !strings.Contains(h.Snippet, "«screenshot» «shows»") {
			t.Errorf("hit %+v", h)
		}
	}
	// A failed tool result, by tool and role.
	if _, hits, _ := search("--role", "tool", "--tool", "edit", `"newline in string"`); len(hits) == 0 || hits[0].Role != "tool" || hits[0].Tools[0] != "edit" {
		t.Errorf("tool result: %+v", hits)
	}
	// The demo's run log: its input, and its tool output kept as a blob.
	for _, q := range [][]string{{"--role", "user", `"greeting test fails"`}, {"--role", "tool", "README.md", "greet_test.go"}} {
		_, hits, _ := search(q...)
		runs := 0
		for _, h := range hits {
			if h.RunID != "" {
				runs++
				if h.SessionID == "" || !strings.HasPrefix(h.EntryID, "@") || h.Role != q[1] {
					t.Errorf("%q: run hit %+v", q, h)
				}
			}
		}
		if runs != 1 {
			t.Errorf("%q: %d hits in run logs, want 1: %+v", q, runs, hits)
		}
	}
	// The catalog is beside the store, never in it.
	if _, err := os.Stat(filepath.Join(store+".catalog", "catalog.db")); err != nil {
		t.Errorf("catalog beside the store: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(store, "*.db*")); len(m) != 0 {
		t.Errorf("catalog files in the store: %v", m)
	}
	// Bad queries are usage errors.
	for _, q := range []string{`"open`, "a AND", "NOT a", "(a"} {
		if code, _, errOut := search(q); code != exitUsage || !strings.Contains(errOut, "bad search query") {
			t.Errorf("query %q: exit %d, %s", q, code, errOut)
		}
	}
	if code, _, _ := search("--role", "robot", "x"); code != exitUsage {
		t.Errorf("--role robot: exit %d", code)
	}
	// A rebuild answers the same.
	if code, out, errOut := trove(t, "", "--store", store, "catalog", "rebuild"); code != exitOK || !strings.Contains(out, "rebuilt") {
		t.Fatalf("rebuild: %s %s", out, errOut)
	}
	if _, again, _ := search("screenshot", "shows"); len(again) != len(hits) {
		t.Errorf("after rebuild: %+v", again)
	}
}

func TestStatsCommand(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if code, out, errOut := trove(t, "", "--store", store, "demo"); code != exitOK {
		t.Fatalf("demo: %s %s", errOut, out)
	}
	code, out, errOut := trove(t, "", "--store", store, "--json", "stats", "--by", "tool")
	if code != exitOK {
		t.Fatalf("stats: %s", errOut)
	}
	var st struct {
		Groups []struct {
			Key       string `json:"key"`
			ToolCalls int64  `json:"tool_calls"`
			Failures  int64  `json:"tool_failures"`
		} `json:"groups"`
		Total struct {
			Sessions int64   `json:"sessions"`
			Input    int64   `json:"input_tokens"`
			Cost     float64 `json:"cost_usd"`
		} `json:"total"`
		BlobOriginal int64 `json:"blob_original_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	// The demo: two sessions (one a fork), an edit that failed, a tool
	// output of 99,000 bytes and a screenshot kept as blobs.
	if st.Total.Sessions != 2 || st.Total.Input == 0 || st.Total.Cost == 0 || st.BlobOriginal < 99000 {
		t.Errorf("stats %+v", st)
	}
	edit := false
	for _, g := range st.Groups {
		if g.Key == "edit" {
			edit = g.ToolCalls >= 1 && g.Failures == 1
		}
	}
	if !edit {
		t.Errorf("by tool: %+v", st.Groups)
	}
	if code, _, _ := trove(t, "", "--store", store, "stats", "--by", "planet"); code != exitUsage {
		t.Errorf("--by planet: exit %d", code)
	}
	if code, out, _ := trove(t, "", "--store", store, "stats"); code != exitOK || !strings.Contains(out, "saved by storing each once") {
		t.Errorf("stats: %d %s", code, out)
	}
}

// TestSearchProcessSkipsTeardown: a trove process that only searched
// leaves the catalog's empty WAL to its exit (catalog.WithExitAfterClose)
// and the next process answers the same; in-process runs close fully.
func TestSearchProcessSkipsTeardown(t *testing.T) {
	bin := buildTrove(t)
	home := t.TempDir()
	search := func() string {
		t.Helper()
		cmd := exec.Command(bin, "--store", home, "search", "--all", "--json", "greeting")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		return string(out)
	}
	if code, _, errOut := trove(t, "", "--store", home, "demo"); code != exitOK {
		t.Fatalf("demo: %s", errOut)
	}
	// Directories changed in the last seconds are read again by every
	// query (their times cannot yet prove them unchanged): age them.
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Chtimes(p, old, old)
		}
		return err
	})
	first := search() // indexes what the demo wrote: a full close
	second := search()
	if first == "" || first != second {
		t.Fatalf("two searches answered\n%s\nand\n%s", first, second)
	}
	wal := filepath.Join(home+".catalog", "catalog.db-wal")
	if fi, err := os.Stat(wal); err != nil || fi.Size() != 0 {
		t.Fatalf("after a search process that only read, the WAL: %v %v; want it left empty", fi, err)
	}
	if third := search(); third != first {
		t.Fatalf("the search after an exit without teardown:\n%s", third)
	}
}
