package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/runlog"
)

// TestRuns: a run log's input, answers, tool outputs (a large one kept
// as a blob) and final answer are found, with the run's id, as they are
// synced; stats leave runs out; an ended run's file is not looked at
// again while its day directory is unchanged.
func TestRuns(t *testing.T) {
	ctx := context.Background()
	st := spiedOS(t)
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := runlog.New(st, runlog.WithBlobs(blobs), runlog.WithOutputThreshold(1024))
	if err != nil {
		t.Fatal(err)
	}
	w, err := runs.Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: "sess-1", Runtime: &runlog.Runtime{Cwd: "/w/a"}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "deploy the zanzibar service"}}))
	seq, err := w.Request(ctx, &runlog.LLMRequest{Input: runlog.LLMInput{Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"requests are not indexed: wombat"}`)}}})
	must(err)
	must(w.Append(ctx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{
		Messages: []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"an answer about quokka"}`)},
		Usage:    &runlog.Usage{Model: "m1", InputTokens: 10, OutputTokens: 5}}}))
	must(w.Append(ctx, &runlog.ToolOutput{Tool: "bash", ToolCallID: "c1", ResultRaw: "short output kumquat"}))
	must(w.Append(ctx, &runlog.ToolOutput{Tool: "bash", ToolCallID: "c2", ResultRaw: strings.Repeat("filler ", 400) + "deep in a blob: axolotl"}))
	must(w.Sync(ctx))

	c, err := Open(ctx, t.TempDir(), st, blobs, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	must(err)
	defer c.Close()
	find := func(q Query) []Hit {
		t.Helper()
		var hits []Hit
		for h, err := range c.Search(ctx, q) {
			must(err)
			hits = append(hits, h)
		}
		return hits
	}
	for _, tc := range []struct{ word, role, tool string }{
		{"zanzibar", RoleUser, ""}, {"quokka", RoleAssistant, ""}, {"kumquat", RoleTool, "bash"}, {"axolotl", RoleTool, "bash"},
	} {
		hits := find(Query{Text: tc.word, Cwd: "/w/a"})
		if len(hits) != 1 {
			t.Fatalf("%s: %d hits, want 1", tc.word, len(hits))
		}
		h := hits[0]
		if h.RunID != w.RunID() || h.SessionID != "sess-1" || h.Role != tc.role || h.Path != w.Path() ||
			!strings.HasPrefix(h.EntryID, "@") || !strings.Contains(h.Snippet, MarkOpen+tc.word+MarkClose) ||
			(tc.tool != "" && (len(h.Tools) != 1 || h.Tools[0] != tc.tool)) {
			t.Errorf("%s: hit %+v", tc.word, h)
		}
		if hits := find(Query{Text: tc.word, Role: tc.role}); len(hits) != 1 {
			t.Errorf("%s with role %s: %d hits", tc.word, tc.role, len(hits))
		}
	}
	if hits := find(Query{Text: "wombat"}); len(hits) != 0 {
		t.Errorf("a request's text found: %+v", hits)
	}
	stats, err := c.Stats(ctx, StatsQuery{})
	must(err)
	if stats.Total.Messages != 0 || stats.Total.Sessions != 0 || stats.SessionBytes != 0 {
		t.Errorf("stats count a run: %+v, %d session bytes", stats.Total, stats.SessionBytes)
	}

	// Synced later: found at the next query; then ended.
	must(w.Append(ctx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted, Final: "finished with marmot"}))
	must(w.Sync(ctx))
	if hits := find(Query{Text: "marmot", Role: RoleAssistant}); len(hits) != 1 || hits[0].RunID != w.RunID() {
		t.Fatalf("marmot: %+v", hits)
	}
	must(w.Close())
	st.Reset()
	if hits := find(Query{Text: "zanzibar", Cwd: "/w/b"}); len(hits) != 0 {
		t.Errorf("zanzibar found in another cwd: %+v", hits)
	}
	for _, call := range st.Calls() {
		if call.Name == w.Path() {
			t.Errorf("an ended run's file looked at again: %s", call)
		}
	}
}

// TestOpenRunsIndexed: the query for the runs without an end reads an
// index, never every file's row.
func TestOpenRunsIndexed(t *testing.T) {
	c := openCatalog(t, t.TempDir(), newMem())
	rows, err := c.db.Query("EXPLAIN QUERY PLAN " + openRunsQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "files_open_runs") {
		t.Errorf("plan %q, want the files_open_runs index", plan)
	}
}
