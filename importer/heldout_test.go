package importer_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/importer"
)

// Held-out fixtures, written from each agent's own format rather than from
// this importer (testdata/heldout): message counts, text, tool calls,
// images, compactions and branches come through; the images land once in
// the blob store though three sessions carry the same screenshot; a second
// import adds nothing and the sources are unchanged.
func TestImportHeldOut(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "heldout")
	s, res, before := importFresh(t, src, importer.Options{})
	byFormat := map[string]importer.Result{}
	for _, r := range res {
		if !r.Imported {
			t.Errorf("not imported: %+v", r)
		}
		if r.Format == "pi" && r.Messages == 3 {
			r.Format = "pi-v2"
		}
		byFormat[r.Format] = r
	}
	cases := []struct {
		format   string
		messages int    // in the file, every branch
		times    string // created and updated, as the source says
		path     string // entry types and roles from the root to the leaf
		context  string // roles of the context rebuilt at the leaf
		want     []string
	}{
		{"claude", 14, "2026-11-22T10:00:01Z 2026-11-22T10:00:18Z",
			"user assistant toolResult assistant toolResult assistant toolResult assistant compaction user assistant toolResult assistant",
			"compactionSummary assistant user assistant toolResult assistant",
			[]string{"off by a cent", `"name":"Bash"`, `"name":"Read"`, `"name":"Edit"`, `"name":"Write"`, `"toolName":"Edit"`, `"isError":true`,
				`"thinking":"Probably float rounding in the total."`, "I'll look for where the total is computed.", "summed in cents now", "The test passes.",
				`"image/png"`, "off-by-a-cent cart total", `"cacheRead":4000`, `"provider":"anthropic"`}},
		{"codex", 10, "2026-11-22T11:00:00Z 2026-11-22T11:00:12Z",
			"user assistant toolResult assistant toolResult assistant toolResult assistant compaction user assistant",
			"compactionSummary assistant user assistant",
			[]string{"returns 500, see screenshot", `"name":"shell"`, `"name":"apply_patch"`, "*** Begin Patch", `"name":"local_shell"`, `"cargo"`,
				"src/health.rs:9:", "Success. Updated", "3 passed", "**Inspecting the handler**", `"model":"gpt-5.1-codex"`, "logs x-request-id",
				`"image/png"`, "handler now returns 200"}},
		{"pi", 8, "2026-11-22T12:00:00Z 2026-11-22T12:00:11Z",
			"model_change thinking_level_change user assistant toolResult assistant branch_summary user assistant label",
			"user assistant toolResult assistant branchSummary user assistant",
			[]string{"why does the header overlap?", `"name":"read"`, `"toolName":"read"`, "Margin works too.", `"image/png"`, `"total":0.0006`}},
		{"pi-v2", 3, "2026-11-21T12:00:00Z 2026-11-21T12:00:03Z", "user custom assistant", "user custom assistant", []string{"hello v2", "v2 reply"}},
		{"agent-jsonl", 5, "2026-02-26T14:30:12Z 2026-02-26T15:00:01Z",
			"user user assistant toolResult compaction assistant",
			"compactionSummary toolResult assistant",
			[]string{"Refactor the auth module", `"type":"toolCall"`, `"cacheRead":80`, "Hello! How can I help?", "## Goal"}},
	}
	for _, c := range cases {
		r, ok := byFormat[c.format]
		if !ok {
			t.Errorf("%s: not imported: %+v", c.format, res)
			continue
		}
		if r.Messages != c.messages {
			t.Errorf("%s: %d messages, want %d", c.format, r.Messages, c.messages)
		}
		meta, err := s.Sessions().Metadata(ctx, r.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if got := meta.CreatedAt.Format(time.RFC3339) + " " + meta.UpdatedAt.Format(time.RFC3339); got != c.times {
			t.Errorf("%s: times %s, want %s", c.format, got, c.times)
		}
		h, err := s.Sessions().Load(ctx, r.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		sess := h.Session()
		cx := sess.Context()
		var path, all []string
		for _, e := range cx.Path {
			what := e.Type()
			if what == "message" {
				what = e.Role()
			}
			path = append(path, what)
		}
		for _, e := range sess.Entries() {
			all = append(all, string(e.JSON()))
		}
		var roles []string
		for _, m := range cx.Messages {
			roles = append(roles, roleOf(m))
		}
		if got := strings.Join(path, " "); got != c.path {
			t.Errorf("%s: path\n%s\nwant\n%s", c.format, got, c.path)
		}
		if got := strings.Join(roles, " "); got != c.context {
			t.Errorf("%s: context %s, want %s", c.format, got, c.context)
		}
		text := strings.Join(all, "\n")
		if strings.Contains(text, `"image/png"`) {
			raw, err := s.Storage().ReadFile(ctx, h.Path())
			if err != nil || !strings.Contains(string(raw), `"data":"blob:sha256:`) || strings.Contains(string(raw), "iVBORw0KGgo") {
				t.Errorf("%s: the session file does not hold its images as blob refs (%v)", c.format, err)
			}
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: lacks %s", c.format, w)
			}
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep.Problems, err)
	}
	if rep.Blobs != 2 {
		t.Errorf("%d blobs, want 2 (two screenshots, each once)", rep.Blobs)
	}
	reimportAddsNothing(t, s, src, before)
}

func roleOf(m []byte) string {
	var v struct{ Role string }
	json.Unmarshal(m, &v)
	return v.Role
}
