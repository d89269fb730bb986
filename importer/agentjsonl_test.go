package importer_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/importer"
)

// TestImportAgentJSONL imports an agent JSONL file told from its lines,
// then again under each name of the format, the old spelling included:
// the same session, already imported.
func TestImportAgentJSONL(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "agent-jsonl")
	s, res, before := importFresh(t, src, importer.Options{})
	if len(res) != 1 || !res[0].Imported || res[0].Format != "agent-jsonl" || res[0].Messages != 4 {
		t.Fatalf("results: %+v", res)
	}
	got, all := sessionPath(t, s, res[0].SessionID)
	if got != "user assistant toolResult assistant" {
		t.Errorf("roles %s", got)
	}
	for _, want := range []string{"List the files", `"type":"toolCall"`, `"arguments":{"command":"ls"}`, `"toolCallId":"call_abc"`,
		`"thinking":"Use bash."`, `"provider":"anthropic"`, `"totalTokens":36`, "main.go and pkg/."} {
		if !strings.Contains(all, want) {
			t.Errorf("imported session lacks %s", want)
		}
	}
	for _, from := range []string{"agent-jsonl", "spec002"} {
		again, err := importer.Import(ctx, s, []string{src}, importer.Options{From: from})
		if err != nil || len(again) != 1 || again[0].Imported || again[0].SessionID != res[0].SessionID || again[0].Format != "agent-jsonl" {
			t.Errorf("import --from %s after the first: %+v %v", from, again, err)
		}
	}
	for p, b := range snapshot(t, src) {
		if string(before[p]) != string(b) {
			t.Errorf("%s changed", p)
		}
	}
}

// A forked agent JSONL file: its branch entry gives the lineage and a branch
// summary, its compaction a pi session v3 compaction; a compaction naming a
// later entry is left out and counted.
func TestImportAgentJSONLForkAndCompaction(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "agent-jsonl-fork")
	s, res, before := importFresh(t, src, importer.Options{})
	if len(res) != 1 || !res[0].Imported || res[0].Messages != 6 || res[0].Reason != "1 damaged lines skipped" ||
		res[0].ParentID != "/home/user/.config/agent/sessions/20261120-143012-a3f7c901.jsonl" {
		t.Fatalf("results: %+v", res)
	}
	h, err := s.Sessions().Load(ctx, res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	sess := h.Session()
	if got := sess.Header().ParentSession; got != res[0].ParentID {
		t.Errorf("parentSession %q", got)
	}
	if bs := string(sess.Context().Path[0].JSON()); !strings.Contains(bs, `"details":{"fork_entry_id":"f6a7b8c9","parent_session_path":"/home/user/.config/agent/sessions/20261120-143012-a3f7c901.jsonl"}`) {
		t.Errorf("the branch summary does not keep the fork point: %s", bs)
	}
	var types []string
	for _, e := range sess.Context().Path {
		types = append(types, e.Type())
	}
	if got := strings.Join(types, " "); got != "branch_summary message message message message compaction message message" {
		t.Errorf("path: %s", got)
	}
	// The context: the compaction summary, then from the first kept entry.
	var ctxt []string
	for _, m := range sess.Context().Messages {
		var v struct{ Role, Summary string }
		json.Unmarshal(m, &v)
		ctxt = append(ctxt, v.Role)
		if v.Summary != "" && !strings.Contains(v.Summary, "42 lines") && !strings.Contains(v.Summary, "main.go and pkg/") {
			t.Errorf("summary %q", v.Summary)
		}
	}
	if got := strings.Join(ctxt, " "); got != "compactionSummary assistant user assistant" {
		t.Errorf("context roles: %s", got)
	}
	if rep, err := s.Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep, err)
	}
	reimportAddsNothing(t, s, src, before)
}
