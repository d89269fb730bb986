package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/trovekit/trove/session/tree"
)

// block is the part of a content block show renders.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	MimeType  string          `json:"mimeType"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolName   string          `json:"toolName"`
	IsError    bool            `json:"isError"`
	CustomType string          `json:"customType"`
}

// clean makes stored text safe for a terminal and one line long: control
// characters (escape sequences included) become '?', whitespace runs one
// space, and the text is cut at n bytes.
func clean(s string, n int) string {
	return sanitizeLine(oneLine(s, n))
}

// blocks decodes content: a string or an array of blocks.
func blocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// renderMessage writes one message entry: its text, then one line per
// thinking block (folded), tool call and image.
func renderMessage(w io.Writer, id string, raw json.RawMessage, label string) {
	var m message
	_ = json.Unmarshal(raw, &m)
	role := m.Role
	switch {
	case m.Role == "toolResult" && m.IsError:
		role = "toolResult " + m.ToolName + " (error)"
	case m.Role == "toolResult":
		role = "toolResult " + m.ToolName
	case m.CustomType != "":
		role = m.Role + " " + m.CustomType
	}
	var text []string
	var extra []string
	for _, b := range blocks(m.Content) {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				text = append(text, b.Text)
			}
		case "thinking":
			extra = append(extra, "thinking: "+clean(b.Thinking, 120))
		case "toolCall", "tool_call", "tool_use":
			extra = append(extra, fmt.Sprintf("tool call %s %s", clean(b.Name, 60), clean(string(b.Arguments), 160)))
		case "image":
			extra = append(extra, "image "+clean(b.MimeType, 40))
		case "":
		default:
			extra = append(extra, "["+clean(b.Type, 40)+"]")
		}
	}
	line := clean(strings.Join(text, " "), 200)
	if line == "" && len(extra) > 0 {
		line = extra[0]
		extra = extra[1:]
	}
	fmt.Fprintf(w, "[%s] %s%s: %s\n", id, clean(role, 60), label, line)
	for _, e := range extra {
		fmt.Fprintf(w, "    %s\n", e)
	}
}

// renderPath writes the entries on the path to leaf, with what branches
// off it, labels, compactions and summaries.
func renderPath(w io.Writer, sess *tree.Session, path []*tree.Entry) {
	labels := sess.Labels()
	onPath := map[string]bool{}
	for _, e := range path {
		onPath[e.ID()] = true
	}
	for _, e := range path {
		label := ""
		if l := labels[e.ID()]; l != "" {
			label = fmt.Sprintf(" (label %q)", clean(l, 60))
		}
		d, _ := e.Data()
		switch v := d.(type) {
		case *tree.Message:
			renderMessage(w, e.ID(), v.Message, label)
		case *tree.Compaction:
			fmt.Fprintf(w, "[%s] compaction%s (keeps from %s): %s\n", e.ID(), label, clean(v.FirstKeptEntryID, 40), clean(v.Summary, 200))
		case *tree.BranchSummary:
			fmt.Fprintf(w, "[%s] branch summary%s (of the branch from %s): %s\n", e.ID(), label, clean(v.FromID, 40), clean(v.Summary, 200))
		case *tree.CustomMessage:
			msg, _ := json.Marshal(map[string]any{"role": "custom", "customType": v.CustomType, "content": v.Content})
			renderMessage(w, e.ID(), msg, label)
		case *tree.ModelChange:
			role := v.Role
			if role == "" {
				role = "default"
			}
			fmt.Fprintf(w, "[%s] model %s: %s\n", e.ID(), clean(role, 40), clean(v.Model, 80))
		case *tree.ThinkingLevelChange:
			fmt.Fprintf(w, "[%s] thinking level: %s\n", e.ID(), clean(v.ThinkingLevel, 40))
		case *tree.Label:
			fmt.Fprintf(w, "[%s] label %q on %s\n", e.ID(), clean(v.Label, 60), clean(v.TargetID, 40))
		case *tree.ModeChange:
			fmt.Fprintf(w, "[%s] mode: %s\n", e.ID(), clean(v.Mode, 40))
		default:
			fmt.Fprintf(w, "[%s] %s%s\n", e.ID(), clean(e.Type(), 40), label)
		}
		var others []string
		for _, c := range sess.Children(e.ID()) {
			if !onPath[c.ID()] {
				others = append(others, c.ID())
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(w, "  ↳ %d other branch(es) start here: %s (trove show --leaf ID)\n", len(others), strings.Join(others, ", "))
		}
	}
}
