package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/trovekit/trove/session/tree"
)

// foldBytes and foldLines decide when a tool output is folded.
const (
	foldBytes = 1500
	foldLines = 20
)

// block is one piece of a rendered entry.
type block struct {
	Kind  string // text, thinking, toolCall, toolOutput, image, note
	Text  string
	Name  string // tool name
	Args  string // tool call arguments, indented JSON
	Mime  string
	Size  int
	Image template.URL // data: URI of a known raster type, else ""
	Long  bool         // folded
	Error bool
}

// item is one entry as rendered.
type item struct {
	ID     string
	Parent string
	Kind   string // user, assistant, toolResult, compaction, ...
	Title  string // short heading
	Time   string
	Label  string
	OnPath bool
	Blocks []block
}

// branch is a run of entries off the leaf path, starting after From.
type branch struct {
	From  string
	Items []*item
}

// node is the branch tree for the sidebar.
type node struct {
	ID      string
	Summary string
	Kind    string
	Label   string
	OnPath  bool
	Leaf    bool
	Forks   [][]*node // the branches starting after this entry, when it has several children
}

// page is everything the templates need.
type page struct {
	Title    string
	ID       string
	Cwd      string
	Created  string
	Path     []*item
	Branches []*branch // off-path runs of entries, each from a branch point
	Tree     [][]*node // one chain per root
	Entries  int
	Embedded bool   // inside the viewer: a link back to the list
	Links    []Link // viewer links under the title
}

// build turns a session into a page: the leaf path, every other branch and
// the tree.
func build(sess *tree.Session) *page {
	h := sess.Header()
	p := &page{Title: h.Title, ID: h.ID, Cwd: h.Cwd, Created: h.Timestamp}
	if p.Title == "" {
		p.Title = "Session " + h.ID
	}
	onPath := map[string]bool{}
	leaf := ""
	if l := sess.Leaf(); l != nil {
		leaf = l.ID()
		if path, err := sess.Path(leaf); err == nil {
			for _, e := range path {
				onPath[e.ID()] = true
			}
		}
	}
	labels := sess.Labels()
	items := map[string]*item{}
	for _, e := range sess.Entries() {
		if e.ID() == "" {
			continue
		}
		it := render(e)
		it.OnPath = onPath[e.ID()]
		it.Label = labels[e.ID()]
		items[e.ID()] = it
		p.Entries++
	}
	if l := sess.Leaf(); l != nil {
		if path, err := sess.Path(l.ID()); err == nil {
			for _, e := range path {
				if it := items[e.ID()]; it != nil {
					p.Path = append(p.Path, it)
				}
			}
		}
	}
	// Walk the tree for the sidebar: a chain of single children stays one
	// flat list and only forks nest, so a long session is not a deep one.
	// Off-path entries are grouped in runs that each start at a fork.
	seen := map[string]bool{}
	kids := func(id string) []*item {
		var out []*item
		for _, c := range sess.Children(id) {
			if it := items[c.ID()]; it != nil && !seen[c.ID()] {
				seen[c.ID()] = true
				out = append(out, it)
			}
		}
		return out
	}
	var chain func(it *item, run *branch) []*node
	chain = func(it *item, run *branch) []*node {
		var out []*node
		for {
			if it.OnPath {
				run = nil
			} else if run == nil {
				run = &branch{From: it.Parent}
				p.Branches = append(p.Branches, run)
			}
			if run != nil {
				run.Items = append(run.Items, it)
			}
			n := &node{ID: it.ID, Kind: it.Kind, Summary: it.summary(), Label: it.Label, OnPath: it.OnPath, Leaf: it.ID == leaf}
			out = append(out, n)
			next := kids(it.ID)
			if len(next) == 1 {
				it = next[0]
				continue
			}
			for _, k := range next {
				n.Forks = append(n.Forks, chain(k, nil))
			}
			return out
		}
	}
	for _, root := range kids("") {
		p.Tree = append(p.Tree, chain(root, nil))
	}
	return p
}

func (it *item) summary() string {
	s := it.Title
	for _, b := range it.Blocks {
		if (b.Kind == "text" || b.Kind == "note") && strings.TrimSpace(b.Text) != "" {
			s = b.Text
			break
		}
		if b.Kind == "toolCall" {
			s = "→ " + b.Name
			break
		}
	}
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}

// render decodes one entry; anything it does not know is shown as its type.
func render(e *tree.Entry) *item {
	it := &item{ID: e.ID(), Parent: e.ParentID(), Kind: e.Type(), Title: e.Type(), Time: e.Timestamp()}
	d, err := e.Data()
	if err != nil {
		it.Blocks = append(it.Blocks, block{Kind: "note", Text: err.Error()})
	}
	switch d := d.(type) {
	case *tree.Message:
		renderMessage(it, d.Message)
	case *tree.Compaction:
		it.Title = fmt.Sprintf("compaction (%d tokens before)", d.TokensBefore)
		it.Blocks = append(it.Blocks, block{Kind: "text", Text: d.Summary})
	case *tree.BranchSummary:
		it.Title = "branch summary (from " + d.FromID + ")"
		it.Blocks = append(it.Blocks, block{Kind: "text", Text: d.Summary})
	case *tree.Label:
		it.Title = "label"
		if d.Label == "" {
			it.Blocks = append(it.Blocks, block{Kind: "note", Text: "label cleared on " + d.TargetID})
		} else {
			it.Blocks = append(it.Blocks, block{Kind: "note", Text: fmt.Sprintf("label %q on %s", d.Label, d.TargetID)})
		}
	case *tree.ModelChange:
		it.Title = "model change"
		it.Blocks = append(it.Blocks, block{Kind: "note", Text: strings.TrimSpace(d.Role + " " + d.Model)})
	case *tree.ThinkingLevelChange:
		it.Title = "thinking level"
		it.Blocks = append(it.Blocks, block{Kind: "note", Text: d.ThinkingLevel})
	case *tree.ModeChange:
		it.Title = "mode change"
		it.Blocks = append(it.Blocks, block{Kind: "note", Text: d.Mode})
	case *tree.CustomMessage:
		it.Kind, it.Title = "custom", "custom message: "+d.CustomType
		renderContent(it, d.Content)
	case *tree.Custom:
		it.Title = "custom: " + d.CustomType
		if len(d.Data) > 0 {
			it.Blocks = append(it.Blocks, fold(block{Kind: "toolOutput", Text: indent(d.Data)}))
		}
	case *tree.SessionInit:
		it.Title = "session init"
		if d.Task != "" {
			it.Blocks = append(it.Blocks, block{Kind: "text", Text: d.Task})
		}
		if d.SystemPrompt != "" {
			it.Blocks = append(it.Blocks, block{Kind: "thinking", Name: "system prompt", Text: d.SystemPrompt})
		}
	case *tree.TtsrInjection:
		it.Title = "rules injected"
		it.Blocks = append(it.Blocks, block{Kind: "note", Text: strings.Join(d.InjectedRules, ", ")})
	}
	return it
}

func renderMessage(it *item, raw json.RawMessage) {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolName   string          `json:"toolName"`
		IsError    bool            `json:"isError"`
		Model      string          `json:"model"`
		CustomType string          `json:"customType"`
		Summary    string          `json:"summary"`
	}
	_ = json.Unmarshal(raw, &m) // unknown shapes render as far as they decode
	it.Kind, it.Title = m.Role, m.Role
	switch m.Role {
	case "assistant":
		if m.Model != "" {
			it.Title = "assistant · " + m.Model
		}
	case "toolResult":
		it.Title = "tool result · " + m.ToolName
	case "branchSummary", "compactionSummary":
		it.Blocks = append(it.Blocks, block{Kind: "text", Text: m.Summary})
	case "":
		it.Kind, it.Title = "message", "message"
	}
	n := len(it.Blocks)
	renderContent(it, m.Content)
	if m.Role == "toolResult" {
		for i := n; i < len(it.Blocks); i++ {
			if it.Blocks[i].Kind == "text" {
				it.Blocks[i] = fold(block{Kind: "toolOutput", Text: it.Blocks[i].Text, Error: m.IsError})
			}
		}
	}
}

func renderContent(it *item, content json.RawMessage) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		it.Blocks = append(it.Blocks, block{Kind: "text", Text: s})
		return
	}
	var blocks []json.RawMessage
	_ = json.Unmarshal(content, &blocks)
	for _, raw := range blocks {
		var b struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Data      string          `json:"data"`
			MimeType  string          `json:"mimeType"`
		}
		_ = json.Unmarshal(raw, &b)
		switch b.Type {
		case "text":
			it.Blocks = append(it.Blocks, block{Kind: "text", Text: b.Text})
		case "thinking":
			it.Blocks = append(it.Blocks, block{Kind: "thinking", Name: "thinking", Text: b.Thinking})
		case "toolCall":
			it.Blocks = append(it.Blocks, block{Kind: "toolCall", Name: b.Name, Args: indent(b.Arguments)})
		case "image":
			it.Blocks = append(it.Blocks, imageBlock(b.MimeType, b.Data))
		default:
			it.Blocks = append(it.Blocks, fold(block{Kind: "toolOutput", Name: b.Type, Text: indent(raw)}))
		}
	}
}

// rasterTypes are the image types shown inline; others (SVG can hold
// script) are only described.
var rasterTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func imageBlock(mime, data string) block {
	b := block{Kind: "image", Mime: mime}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		b.Text = "image data is not valid base64"
		return b
	}
	b.Size = len(raw)
	if rasterTypes[mime] {
		// The data was just decoded, so the URI holds only base64 characters.
		b.Image = template.URL("data:" + mime + ";base64," + data)
	}
	return b
}

func fold(b block) block {
	b.Long = len(b.Text) > foldBytes || strings.Count(b.Text, "\n") > foldLines
	return b
}

func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
