package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/runlog"
)

func TestRunsLsShow(t *testing.T) {
	root := t.TempDir()
	store := "file://" + root
	example, err := os.ReadFile("../../../runlog/testdata/runlog-example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const id = "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a"
	name := runlog.RunPath(id, time.Date(2026, 2, 3, 12, 0, 0, 0, time.UTC))
	if code, _, errOut := trove(t, string(example), "--store", store, "files", "put", name); code != exitOK {
		t.Fatalf("put: %s", errOut)
	}
	code, out, errOut := trove(t, "", "--store", store, "runs", "ls")
	if code != exitOK || !strings.Contains(out, id) {
		t.Fatalf("runs ls: %d %s %s", code, out, errOut)
	}
	code, out, errOut = trove(t, "", "--store", store, "--json", "runs", "show", id[:8])
	var sum runlog.Summary
	if code != exitOK || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("runs show --json: %d %s %s", code, out, errOut)
	}
	if sum.RunID != id || !sum.Complete || sum.LLMCalls == 0 {
		t.Fatalf("summary: %+v", sum)
	}
	if code, _, _ = trove(t, "", "--store", store, "runs", "show", "nosuchrun"); code == exitOK {
		t.Fatal("show of a missing run succeeded")
	}
}
