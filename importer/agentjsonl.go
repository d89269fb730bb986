package importer

import (
	"encoding/json"
)

type agentLine struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	ParentID  string        `json:"parent_id"`
	Timestamp string        `json:"timestamp"`
	Cwd       string        `json:"cwd"`
	Message   *agentMessage `json:"message"`
	// compaction
	Summary          string `json:"summary"`
	FirstKeptEntryID string `json:"first_kept_entry_id"`
	TokensBefore     int64  `json:"tokens_before"`
	// branch
	ParentSessionPath string `json:"parent_session_path"`
	BranchSummary     string `json:"branch_summary"`
	ForkEntryID       string `json:"fork_entry_id"`
}

type agentMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	Provider   string          `json:"provider"`
	StopReason string          `json:"stop_reason"`
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	IsError    bool            `json:"is_error"`
	Timestamp  int64           `json:"timestamp"`
	Usage      struct {
		Input       int64 `json:"input"`
		Output      int64 `json:"output"`
		CacheRead   int64 `json:"cache_read"`
		CacheWrite  int64 `json:"cache_write"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

// parseAgentJSONL reads an agent JSONL session: message entries in a
// parent_id tree with snake_case messages, turned into pi session v3
// messages; compaction entries become v3 compactions, and a branch entry (the start of a
// fork) records its parent session as the lineage and its summary, if any,
// as a branch summary.
func parseAgentJSONL(data []byte) (*conversation, error) {
	p := &agentParser{c: &conversation{alias: map[string]string{}}, known: map[string]bool{}}
	if err := eachLine(data, p.line); err != nil {
		return nil, err
	}
	return p.c, nil
}

// agentParser is parseAgentJSONL's state between lines.
type agentParser struct {
	c     *conversation
	known map[string]bool // ids of the entries kept so far
}

func (p *agentParser) line(b []byte) error {
	c := p.c
	var l agentLine
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
	if l.Type == "session" {
		if c.cwd == "" {
			c.cwd, c.created, c.srcID = l.Cwd, millis(l.Timestamp), l.ID
		}
		return nil
	}
	if l.ID == "" {
		return nil
	}
	switch l.Type {
	case "compaction":
		if !p.known[l.FirstKeptEntryID] {
			// It names no entry before it: a strict reader could not follow it.
			c.damaged++
			c.alias[l.ID] = l.ParentID
			return nil
		}
		c.msgs = append(c.msgs, srcMsg{id: l.ID, parent: l.ParentID, at: millis(l.Timestamp), kind: kindCompaction,
			summary: l.Summary, firstKept: l.FirstKeptEntryID, tokens: l.TokensBefore})
		p.known[l.ID] = true
		return nil
	case "branch":
		if c.parent == "" {
			c.parent = l.ParentSessionPath
		}
		if l.BranchSummary == "" {
			c.alias[l.ID] = l.ParentID
			return nil
		}
		c.msgs = append(c.msgs, srcMsg{id: l.ID, parent: l.ParentID, at: millis(l.Timestamp), kind: kindBranchSummary, summary: l.BranchSummary,
			details: map[string]string{"parent_session_path": l.ParentSessionPath, "fork_entry_id": l.ForkEntryID}})
		p.known[l.ID] = true
		return nil
	}
	if l.Type != "message" || l.Message == nil {
		return nil
	}
	m := l.Message
	var blocks []map[string]any
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		blocks = []map[string]any{{"type": "text", "text": text}}
	} else {
		json.Unmarshal(m.Content, &blocks)
	}
	var msg json.RawMessage
	switch m.Role {
	case "user":
		msg, _ = json.Marshal(map[string]any{"role": "user", "content": blocks, "timestamp": m.Timestamp})
	case "assistant":
		var content []any
		for _, b := range blocks {
			if b["type"] == "tool_call" {
				b["type"] = "toolCall"
			}
			content = append(content, b)
		}
		stop := "stop"
		if m.StopReason == "tool_use" {
			stop = "toolUse"
		}
		if c.model == "" {
			c.model = m.Model
		}
		msg = assistant(content, m.Model, m.Provider, m.Timestamp, stop, tokens{Input: m.Usage.Input, Output: m.Usage.Output,
			CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite, Total: m.Usage.TotalTokens})
	case "tool_result":
		msg, _ = json.Marshal(map[string]any{"role": "toolResult", "toolCallId": m.ToolCallID, "toolName": m.ToolName,
			"content": blocks, "isError": m.IsError, "timestamp": m.Timestamp})
	default:
		return nil
	}
	c.msgs = append(c.msgs, srcMsg{id: l.ID, parent: l.ParentID, at: millis(l.Timestamp), msg: msg})
	p.known[l.ID] = true
	return nil
}
