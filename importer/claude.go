package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trovekit/trove/session/tree"
)

type claudeLine struct {
	Type        string `json:"type"`
	UUID        string `json:"uuid"`
	ParentUUID  string `json:"parentUuid"`
	IsSidechain bool   `json:"isSidechain"`
	Cwd         string `json:"cwd"`
	Timestamp   string `json:"timestamp"`
	Summary     string `json:"summary"`
	Message     *struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
	} `json:"message"`
}

// lastAssistant is the assistant message the next line may continue.
type lastAssistant struct {
	apiID, uuid string
	index       int
	content     []any
	ts          int64
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// parseClaude reads a Claude Code project session: user and assistant lines
// in a uuid/parentUuid tree. A user line of tool_result blocks becomes one
// toolResult message per block, chained.
func parseClaude(data []byte) (*conversation, error) {
	c := &conversation{alias: map[string]string{}}
	tools := map[string]string{} // tool_use id -> name
	var last lastAssistant
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var l claudeLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.Type == "summary" && l.Summary != "" && c.title == "" {
			c.title = l.Summary
		}
		if l.Message == nil || l.UUID == "" {
			continue // summaries, system lines and damaged lines carry no message
		}
		if l.IsSidechain {
			c.sidechain++ // a subagent's conversation, rooted apart from the main one
			continue
		}
		if c.cwd == "" {
			c.cwd = l.Cwd
		}
		ts := millis(l.Timestamp)
		var blocks []claudeBlock
		var text string
		if json.Unmarshal(l.Message.Content, &text) != nil {
			if json.Unmarshal(l.Message.Content, &blocks) != nil {
				c.damaged++ // lenient, as for any line that does not parse
				continue
			}
		} else {
			blocks = []claudeBlock{{Type: "text", Text: text}}
		}
		switch l.Type {
		case "assistant":
			if c.model == "" {
				c.model = l.Message.Model
			}
			var content []any
			for _, b := range blocks {
				switch b.Type {
				case "text":
					content = append(content, map[string]any{"type": "text", "text": b.Text})
				case "thinking":
					content = append(content, map[string]any{"type": "thinking", "thinking": b.Thinking})
				case "tool_use":
					tools[b.ID] = b.Name
					args := b.Input
					if len(args) == 0 {
						args = json.RawMessage("{}")
					}
					content = append(content, map[string]any{"type": "toolCall", "id": b.ID, "name": b.Name, "arguments": args})
				}
			}
			stop := "stop"
			if l.Message.StopReason == "tool_use" {
				stop = "toolUse"
			}
			if last.apiID != "" && last.apiID == l.Message.ID && last.uuid == l.ParentUUID {
				// Claude Code writes one API message as one line per block,
				// chained: they make one assistant message again.
				last.content = append(last.content, content...)
				last.uuid = l.UUID
				c.alias[l.UUID] = c.msgs[last.index].id
				c.msgs[last.index].msg = assistant(last.content, l.Message.Model, last.ts, stop)
				continue
			}
			c.msgs = append(c.msgs, srcMsg{id: l.UUID, parent: l.ParentUUID, msg: assistant(content, l.Message.Model, ts, stop)})
			last = lastAssistant{apiID: l.Message.ID, uuid: l.UUID, index: len(c.msgs) - 1, content: content, ts: ts}
		case "user":
			last = lastAssistant{}
			var content []any
			parent, id := l.ParentUUID, l.UUID
			for i, b := range blocks {
				switch b.Type {
				case "text":
					content = append(content, map[string]any{"type": "text", "text": b.Text})
				case "image":
					if b.Source != nil && b.Source.Type == "base64" {
						content = append(content, map[string]any{"type": "image", "data": b.Source.Data, "mimeType": b.Source.MediaType})
					}
				case "tool_result":
					res := toolResultContent(b.Content)
					m, _ := json.Marshal(map[string]any{"role": "toolResult", "toolCallId": b.ToolUseID, "toolName": tools[b.ToolUseID],
						"content": res, "isError": b.IsError, "timestamp": ts})
					sub := fmt.Sprintf("%s#%d", l.UUID, i)
					c.msgs = append(c.msgs, srcMsg{id: sub, parent: parent, msg: m})
					parent, id = sub, sub
				}
			}
			if len(content) > 0 {
				m, _ := json.Marshal(map[string]any{"role": "user", "content": content, "timestamp": ts})
				c.msgs = append(c.msgs, srcMsg{id: l.UUID, parent: parent, msg: m})
				id = l.UUID
			}
			if id != l.UUID {
				// Children name the line's uuid: alias it to the last message made from it.
				c.alias[l.UUID] = id
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", tree.ErrInvalid, err)
	}
	return c, nil
}

func toolResultContent(raw json.RawMessage) []any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []any{map[string]any{"type": "text", "text": s}}
	}
	var blocks []claudeBlock
	json.Unmarshal(raw, &blocks)
	var out []any
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, map[string]any{"type": "text", "text": b.Text})
		case "image":
			if b.Source != nil {
				out = append(out, map[string]any{"type": "image", "data": b.Source.Data, "mimeType": b.Source.MediaType})
			}
		}
	}
	if out == nil {
		out = []any{map[string]any{"type": "text", "text": strings.TrimSpace(string(raw))}}
	}
	return out
}
