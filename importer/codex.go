package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trovekit/trove/session/tree"
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
	c := &conversation{alias: map[string]string{}}
	tools := map[string]string{}
	var pending []any
	var pendingTS int64
	n := 0
	add := func(m json.RawMessage) {
		parent := ""
		if n > 0 {
			parent = fmt.Sprint(n - 1)
		}
		c.msgs = append(c.msgs, srcMsg{id: fmt.Sprint(n), parent: parent, msg: m})
		n++
	}
	flush := func() {
		if len(pending) == 0 {
			return
		}
		stop := "stop"
		if b, ok := pending[len(pending)-1].(map[string]any); ok && b["type"] == "toolCall" {
			stop = "toolUse"
		}
		add(assistant(pending, c.model, "openai", pendingTS, stop, tokens{}))
		pending = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var l codexLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		var it codexItem
		if json.Unmarshal(l.Payload, &it) != nil {
			continue
		}
		ts := millis(l.Timestamp)
		switch l.Type {
		case "session_meta":
			if c.cwd == "" {
				c.cwd, c.created, c.srcID = it.Cwd, ts, it.ID
			}
			continue
		case "turn_context":
			if it.Model != "" {
				c.model = it.Model
			}
			if c.cwd == "" {
				c.cwd = it.Cwd
			}
			continue
		case "compacted":
			// The history so far was replaced by this summary: a
			// compaction keeping the last message.
			flush()
			if n > 0 && it.Message != "" {
				c.msgs = append(c.msgs, srcMsg{id: fmt.Sprint(n), parent: fmt.Sprint(n - 1), at: ts, kind: kindCompaction,
					summary: it.Message, firstKept: fmt.Sprint(n - 1)})
				n++
			}
			continue
		case "response_item":
		default:
			continue
		}
		switch it.Type {
		case "message":
			var parts []codexPart
			json.Unmarshal(it.Content, &parts)
			if it.Role == "developer" || it.Role == "system" || harnessContext(parts) {
				continue // instructions and context the harness injects, not a turn
			}
			if it.Role == "assistant" {
				for _, p := range parts {
					if p.Text != "" {
						pending = append(pending, map[string]any{"type": "text", "text": p.Text})
					}
				}
				pendingTS = ts
				continue
			}
			flush()
			var content []any
			for _, p := range parts {
				switch {
				case p.Type == "input_image":
					if mime, data, ok := dataURL(p.ImageURL); ok {
						content = append(content, map[string]any{"type": "image", "data": data, "mimeType": mime})
					}
				case p.Text != "":
					content = append(content, map[string]any{"type": "text", "text": p.Text})
				}
			}
			if len(content) > 0 {
				m, _ := json.Marshal(map[string]any{"role": "user", "content": content, "timestamp": ts})
				add(m)
			}
		case "reasoning":
			var parts []codexPart
			json.Unmarshal(it.Summary, &parts)
			var text []string
			for _, p := range parts {
				text = append(text, p.Text)
			}
			if len(text) > 0 {
				pending = append(pending, map[string]any{"type": "thinking", "thinking": strings.Join(text, "\n\n")})
				pendingTS = ts
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
			tools[it.CallID] = it.Name
			pending = append(pending, map[string]any{"type": "toolCall", "id": it.CallID, "name": it.Name, "arguments": args})
			pendingTS = ts
		case "function_call_output", "custom_tool_call_output":
			flush()
			out := codexOutput(it.Output)
			m, _ := json.Marshal(map[string]any{"role": "toolResult", "toolCallId": it.CallID, "toolName": tools[it.CallID],
				"content": []any{map[string]any{"type": "text", "text": out}}, "isError": false, "timestamp": ts})
			add(m)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", tree.ErrInvalid, err)
	}
	return c, nil
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
