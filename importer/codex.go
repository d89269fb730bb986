package importer

import (
	"encoding/json"
	"fmt"
	"strings"
)

type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	ID        string          `json:"id"` // session_meta's
	Cwd       string          `json:"cwd"`
	Model     string          `json:"model"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"` // parts in reasoning, a string in turn_context
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`   // a custom (freeform) tool call's
	Action    json.RawMessage `json:"action"`  // a local_shell_call's
	Message   string          `json:"message"` // a compacted line's summary
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

type codexPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

// parseCodex reads a Codex rollout: response_items make the conversation
// (event_msg lines repeat them for the UI and are skipped). Consecutive
// reasoning, assistant text and function calls make one assistant message.
func parseCodex(data []byte) (*conversation, error) {
	p := newCodexParser()
	if err := eachLine(data, p.line); err != nil {
		return nil, err
	}
	p.flush()
	return p.c, nil
}

// codexParser is parseCodex's state between lines, so a file that grows
// is parsed a line at a time (Follower).
type codexParser struct {
	c         *conversation
	tools     map[string]string
	pending   []any // blocks of the assistant message being gathered
	pendingTS int64
	n         int
}

func newCodexParser() *codexParser {
	return &codexParser{c: &conversation{alias: map[string]string{}}, tools: map[string]string{}}
}

func (p *codexParser) add(m json.RawMessage) {
	parent := ""
	if p.n > 0 {
		parent = fmt.Sprint(p.n - 1)
	}
	p.c.msgs = append(p.c.msgs, srcMsg{id: fmt.Sprint(p.n), parent: parent, msg: m})
	p.n++
}

// gathered is the assistant message the pending blocks make.
func (p *codexParser) gathered() json.RawMessage {
	stop := "stop"
	if b, ok := p.pending[len(p.pending)-1].(map[string]any); ok && b["type"] == "toolCall" {
		stop = "toolUse"
	}
	return assistant(p.pending, p.c.model, "openai", p.pendingTS, stop, tokens{})
}

func (p *codexParser) flush() {
	if len(p.pending) == 0 {
		return
	}
	p.add(p.gathered())
	p.pending = nil
}

// unflushed is the message the end of the file would flush, if any.
func (p *codexParser) unflushed() []srcMsg {
	if len(p.pending) == 0 {
		return nil
	}
	parent := ""
	if p.n > 0 {
		parent = fmt.Sprint(p.n - 1)
	}
	return []srcMsg{{id: fmt.Sprint(p.n), parent: parent, msg: p.gathered()}}
}

func (p *codexParser) line(b []byte) error {
	c := p.c
	var l codexLine
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
	var it codexItem
	ts := millis(l.Timestamp)
	switch {
	case l.Payload != nil:
		if json.Unmarshal(l.Payload, &it) != nil {
			return nil
		}
	case json.Unmarshal(b, &it) != nil:
		return nil
	case l.Type == "" && it.ID != "" && l.Timestamp != "" && c.srcID == "":
		// A rollout of Codex before session_meta (mid-2025): the
		// session's {id, timestamp, instructions, git} first, ...
		l.Type = "session_meta"
	case l.Type != "":
		// ... then the items bare, without times, between
		// {"record_type": "state"} lines.
		l.Type, ts = "response_item", c.created
	}
	switch l.Type {
	case "session_meta":
		if c.cwd == "" {
			c.cwd, c.created, c.srcID = it.Cwd, ts, it.ID
		}
		return nil
	case "turn_context":
		if it.Model != "" {
			c.model = it.Model
		}
		if c.cwd == "" {
			c.cwd = it.Cwd
		}
		return nil
	case "compacted":
		// The history so far was replaced by this summary: a
		// compaction keeping the last message.
		p.flush()
		if p.n > 0 && it.Message != "" {
			c.msgs = append(c.msgs, srcMsg{id: fmt.Sprint(p.n), parent: fmt.Sprint(p.n - 1), at: ts, kind: kindCompaction,
				summary: it.Message, firstKept: fmt.Sprint(p.n - 1)})
			p.n++
		}
		return nil
	case "response_item":
	default:
		return nil
	}
	switch it.Type {
	case "message":
		var parts []codexPart
		json.Unmarshal(it.Content, &parts)
		if it.Role == "developer" || it.Role == "system" || harnessContext(parts) {
			if c.cwd == "" {
				// Rollouts before session_meta name it only here.
				c.cwd = contextCwd(parts)
			}
			return nil // instructions and context the harness injects, not a turn
		}
		if it.Role == "assistant" {
			for _, part := range parts {
				if part.Text != "" {
					p.pending = append(p.pending, map[string]any{"type": "text", "text": part.Text})
				}
			}
			p.pendingTS = ts
			return nil
		}
		p.flush()
		var content []any
		for _, part := range parts {
			switch {
			case part.Type == "input_image":
				if mime, data, ok := dataURL(part.ImageURL); ok {
					content = append(content, map[string]any{"type": "image", "data": data, "mimeType": mime})
				}
			case part.Text != "":
				content = append(content, map[string]any{"type": "text", "text": part.Text})
			}
		}
		if len(content) > 0 {
			m, _ := json.Marshal(map[string]any{"role": "user", "content": content, "timestamp": ts})
			p.add(m)
		}
	case "reasoning":
		var parts []codexPart
		json.Unmarshal(it.Summary, &parts)
		var text []string
		for _, part := range parts {
			text = append(text, part.Text)
		}
		if len(text) > 0 {
			p.pending = append(p.pending, map[string]any{"type": "thinking", "thinking": strings.Join(text, "\n\n")})
			p.pendingTS = ts
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		args := json.RawMessage(it.Arguments)
		switch {
		case it.Type == "local_shell_call":
			args, it.Name = it.Action, "local_shell"
		case it.Type == "custom_tool_call":
			args, _ = json.Marshal(map[string]string{"input": it.Input})
		case !json.Valid(args):
			args, _ = json.Marshal(map[string]string{"input": it.Arguments})
		}
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		p.tools[it.CallID] = it.Name
		p.pending = append(p.pending, map[string]any{"type": "toolCall", "id": it.CallID, "name": it.Name, "arguments": args})
		p.pendingTS = ts
	case "function_call_output", "custom_tool_call_output":
		p.flush()
		out := codexOutput(it.Output)
		m, _ := json.Marshal(map[string]any{"role": "toolResult", "toolCallId": it.CallID, "toolName": p.tools[it.CallID],
			"content": []any{map[string]any{"type": "text", "text": out}}, "isError": false, "timestamp": ts})
		p.add(m)
	}
	return nil
}

// harnessContext reports whether a user message is only what Codex
// injects at the start of a session (environment, AGENTS.md instructions).
func harnessContext(parts []codexPart) bool {
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		t := strings.TrimSpace(p.Text)
		if !strings.HasPrefix(t, "<environment_context>") && !strings.HasPrefix(t, "<user_instructions>") &&
			!strings.HasPrefix(t, "# AGENTS.md instructions") {
			return false
		}
	}
	return true
}

// contextCwd is the working directory an <environment_context> names
// (<cwd>/path</cwd>), taken as session_meta's is, or "" when it names none.
func contextCwd(parts []codexPart) string {
	for _, p := range parts {
		t := strings.TrimSpace(p.Text)
		if !strings.HasPrefix(t, "<environment_context>") {
			continue
		}
		_, rest, ok := strings.Cut(t, "<cwd>")
		cwd, _, closed := strings.Cut(rest, "</cwd>")
		if cwd = strings.TrimSpace(cwd); ok && closed && cwd != "" && !strings.ContainsAny(cwd, "<>\n") {
			return cwd
		}
	}
	return ""
}

// codexOutput is a function output: a string, or an object with "content".
func codexOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var inner struct {
			Output *string `json:"output"`
		}
		if json.Unmarshal([]byte(s), &inner) == nil && inner.Output != nil {
			return *inner.Output // the shell tool's {"output", "metadata"}
		}
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != "" {
		return o.Content
	}
	return string(raw)
}

// dataURL splits "data:image/png;base64,AAAA".
func dataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(head, ";base64")
	return mime, data, found && isB64
}
