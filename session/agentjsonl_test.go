package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/trovekit/trove/session/tree"
)

// An agent JSONL file loads into the v3 model and rebuilds the context
// its spec's ParseMessages defines (docs/formats.md): the compaction summary, then the messages
// from first_kept_entry_id on; tool_call blocks, tool_result messages and
// snake_case usage in their v3 forms. Written back, it is v3.
func TestAgentJSONLFile(t *testing.T) {
	data, err := os.ReadFile("testdata/agent-jsonl.jsonl")
	must(t, err)
	st := newMem(t)
	must(t, st.WriteFile(t.Context(), "s.jsonl", data))
	var problems []tree.Problem
	sess, err := tree.Open(t.Context(), st, "s.jsonl", tree.ReadOnly(),
		tree.WithReport(func(p tree.Problem) { problems = append(problems, p) }))
	must(t, err)
	h := sess.Header()
	if h.ID != "a3f7c901-0000-4000-8000-000000000001" || h.Cwd != "/home/user/project" || h.Version != 3 ||
		h.ParentSession != "/home/user/.config/agent/sessions/20260226-143012-a3f7c900.jsonl" {
		t.Fatalf("header %+v", h)
	}
	c := sess.Context()
	var roles []string
	for _, m := range c.Messages {
		var v struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m, &v)
		roles = append(roles, v.Role)
	}
	// The summary of what was compacted, then f6a7b8c9 on.
	if !slices.Equal(roles, []string{"compactionSummary", "toolResult", "assistant", "user"}) {
		t.Fatalf("context roles %v", roles)
	}
	var tr struct {
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		IsError    *bool  `json:"isError"`
	}
	must(t, json.Unmarshal(c.Messages[1], &tr))
	if tr.ToolCallID != "call_abc" || tr.ToolName != "bash" || tr.IsError == nil {
		t.Fatalf("tool result %s", c.Messages[1])
	}
	asst := sess.Entry("e5f6a7b8")
	var am struct {
		Content []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"content"`
		Usage struct {
			CacheRead   int `json:"cacheRead"`
			TotalTokens int `json:"totalTokens"`
		} `json:"usage"`
		StopReason string `json:"stopReason"`
	}
	must(t, json.Unmarshal(asst.Field("message"), &am))
	if am.Content[1].Type != "toolCall" || am.Content[1].Name != "bash" || am.Usage.CacheRead != 80 ||
		am.Usage.TotalTokens != 20 || am.StopReason != "tool_use" {
		t.Fatalf("assistant message %s", asst.Field("message"))
	}
	migrated := false
	for _, p := range problems {
		migrated = migrated || errors.Is(p, tree.ErrMigrated)
	}
	if !migrated {
		t.Fatalf("no migration reported: %v", problems)
	}
	// Opened for writing, the file becomes v3 once.
	_, err = tree.Open(t.Context(), st, "s.jsonl")
	must(t, err)
	again, err := st.ReadFile(t.Context(), "s.jsonl")
	must(t, err)
	if bytes.Contains(again, []byte(`"parent_id"`)) || !bytes.Contains(again, []byte(`"parentId"`)) {
		t.Fatalf("rewritten file still agent JSONL:\n%s", again)
	}
	sess2, err := tree.Open(t.Context(), st, "s.jsonl", tree.ReadOnly())
	must(t, err)
	if len(sess2.Context().Messages) != 4 {
		t.Fatalf("the v3 rewrite rebuilds %d messages, want 4", len(sess2.Context().Messages))
	}
}
