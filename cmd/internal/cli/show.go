package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

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

func newShowCmd(a *app) *cobra.Command {
	var leaf string
	cmd := &cobra.Command{
		Use:   "show ID-OR-PREFIX",
		Short: "Show a session: its metadata and the conversation at its leaf (or --leaf ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			meta, err := s.Metadata(ctx, args[0])
			if id, ok := a.agentRef(ctx, args[0], err); ok {
				meta, err = s.Metadata(ctx, id)
			}
			if err != nil {
				return storeErr(err)
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			sess, err := tree.Open(ctx, ts.Storage(), meta.Path, tree.ReadOnly(), tree.WithReport(func(tree.Problem) {}),
				tree.WithBlobStore(ts.Blobs()))
			if err != nil {
				return err
			}
			if err := sess.Err(); err != nil {
				return err
			}
			var path []*tree.Entry
			if leaf == "" && sess.Leaf() != nil {
				leaf = sess.Leaf().ID()
			}
			if leaf != "" {
				if path, err = sess.Path(leaf); err != nil {
					return usageErr("--leaf %s: %v", leaf, err)
				}
			}
			if a.jsonOut {
				// The messages are the stored format, passed through as is.
				m, err := normalize(meta)
				if err != nil {
					return err
				}
				msgs := []json.RawMessage{}
				for _, e := range path {
					if e.Type() == tree.TypeMessage {
						msgs = append(msgs, e.JSON())
					}
				}
				return a.printRawJSON(map[string]any{"metadata": m, "messages": msgs})
			}
			onPath := 0
			for _, e := range path {
				if e.Type() == tree.TypeMessage {
					onPath++
				}
			}
			a.printf("session %s  cwd %s  model %s\n", meta.ID, clean(meta.Cwd, 200), clean(meta.Model, 80))
			if meta.Title != "" {
				a.printf("title: %s\n", clean(meta.Title, 200))
			}
			a.printf("%d messages on this path, %d in the session (%d entries), %d turns, %d tokens, $%.4f",
				onPath, meta.MessageCount, sess.Len(), meta.TurnCount, meta.TotalTokens, meta.CostUSD)
			if meta.ParentID != "" {
				a.printf(", forked from %s", meta.ParentID)
			}
			a.printf("\n\n")
			renderPath(a.stdout, sess, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&leaf, "leaf", "", "show the path to this entry instead of the session's leaf")
	return cmd
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
