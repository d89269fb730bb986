package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type claudeLine struct {
	Type        string `json:"type"`
	UUID        string `json:"uuid"`
	ParentUUID  string `json:"parentUuid"`
	IsSidechain bool   `json:"isSidechain"`
	Cwd         string `json:"cwd"`
	Timestamp   string `json:"timestamp"`
	Summary     string `json:"summary"`
	// IsMeta marks text the harness injected (caveats, command output).
	IsMeta bool `json:"isMeta"`
	// A compaction: a system line of subtype compact_boundary (a new root
	// naming the entry before it as its logical parent) followed by a user
	// line holding the summary.
	Subtype           string `json:"subtype"`
	LogicalParentUUID string `json:"logicalParentUuid"`
	IsCompactSummary  bool   `json:"isCompactSummary"`
	CompactMetadata   struct {
		PreTokens int64 `json:"preTokens"`
	} `json:"compactMetadata"`
	Message *struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// usage is the line's API usage: the lines of one API message repeat it.
func (l claudeLine) usage() tokens {
	u := l.Message.Usage
	return tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
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

// content converts a text, thinking or base64 image block; nil for others.
func (b claudeBlock) content() map[string]any {
	switch {
	case b.Type == "text":
		return map[string]any{"type": "text", "text": b.Text}
	case b.Type == "thinking":
		return map[string]any{"type": "thinking", "thinking": b.Thinking}
	case b.Type == "image" && b.Source != nil && b.Source.Type == "base64":
		return map[string]any{"type": "image", "data": b.Source.Data, "mimeType": b.Source.MediaType}
	}
	return nil
}

// claudeConv is one conversation of a Claude Code file being parsed: the
// main one or a subagent's.
type claudeConv struct {
	*conversation
	last      lastAssistant
	preTokens int64 // of the compaction whose summary comes next
}

// parseClaude reads a Claude Code project session: user and assistant lines
// in a uuid/parentUuid tree. A user line of tool_result blocks becomes one
// toolResult message per block, chained. Sidechain lines (a subagent's
// conversation, rooted apart from the main one) make sub-conversations, one
// per sidechain root.
func parseClaude(data []byte) (*conversation, error) {
	p := newClaudeParser()
	if err := eachLine(data, p.line); err != nil {
		return nil, err
	}
	nameSubagents(p.main.conversation, p.tasks)
	return p.main.conversation, nil
}

// claudeParser is parseClaude's state between lines, so a file that grows
// is parsed a line at a time (Follower).
type claudeParser struct {
	main  *claudeConv
	owner map[string]*claudeConv // uuid of a sidechain line -> its conversation
	tools map[string]string      // tool_use id -> name
	tasks map[string]string      // a Task call's prompt -> its description
	subs  map[*conversation]*claudeConv
}

func newClaudeParser() *claudeParser {
	p := &claudeParser{main: &claudeConv{conversation: &conversation{alias: map[string]string{}}},
		owner: map[string]*claudeConv{}, tools: map[string]string{}, tasks: map[string]string{}, subs: map[*conversation]*claudeConv{}}
	p.main.tasks = p.tasks
	return p
}

func (p *claudeParser) line(b []byte) error {
	var l claudeLine
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
	main := p.main
	if l.Type == "summary" && l.Summary != "" && main.title == "" {
		main.title = l.Summary
	}
	c := main
	if l.IsSidechain && p.owner[l.ParentUUID] != nil {
		c = p.owner[l.ParentUUID]
	}
	switch {
	case l.UUID == "":
		return nil // summaries and damaged lines
	case l.Type == "system" && l.Subtype == "compact_boundary":
		c.alias[l.UUID] = l.LogicalParentUUID
		c.preTokens = l.CompactMetadata.PreTokens
		if l.IsSidechain {
			p.owner[l.UUID] = c
		}
		return nil
	case l.Message == nil || l.IsMeta:
		// Other system lines and what the harness injected: their
		// children hang from their parent.
		c.alias[l.UUID] = l.ParentUUID
		if l.IsSidechain {
			p.owner[l.UUID] = c
		}
		return nil
	}
	if l.IsSidechain {
		if c == main {
			c = &claudeConv{conversation: &conversation{alias: map[string]string{}, key: l.UUID}}
			main.subs = append(main.subs, c.conversation)
			p.subs[c.conversation] = c
			l.ParentUUID = "" // its root, whatever it names outside the sidechain
		}
		p.owner[l.UUID] = c
	}
	if c.cwd == "" {
		c.cwd = l.Cwd
	}
	if !c.add(l, p.tools, p.tasks) {
		main.damaged++ // lenient, as for any line that does not parse
	}
	return nil
}

// frontier is the index of the first message of c a later line may still
// change: the assistant message the next line may continue.
func (p *claudeParser) frontier(c *conversation) int {
	cc := p.main
	if c != p.main.conversation {
		cc = p.subs[c]
	}
	if cc.last.apiID != "" {
		return cc.last.index
	}
	return len(c.msgs)
}

// nameSubagents titles each subagent conversation of c with the
// description of the Task call whose prompt started it.
func nameSubagents(c *conversation, tasks map[string]string) {
	for _, sub := range c.subs {
		sub.title = "subagent"
		if len(sub.msgs) > 0 {
			if d := tasks[firstText(sub.msgs[0].msg)]; d != "" {
				sub.title = "subagent: " + d
			}
		}
	}
}

// mainSize is the size of the main session file of a subagent file, -1
// if it has none.
func mainSize(path string) int64 {
	dir := filepath.Dir(path)
	if filepath.Base(dir) != "subagents" {
		return -1
	}
	fi, err := os.Stat(filepath.Dir(dir) + ".jsonl")
	if err != nil {
		return -1
	}
	return fi.Size()
}

// mainTasks returns the Task calls (prompt -> description) of the main
// session of a subagent file, read once per import run.
func mainTasks(path string, cache map[string]map[string]string) map[string]string {
	dir := filepath.Dir(path)
	if filepath.Base(dir) != "subagents" {
		return nil
	}
	main := filepath.Dir(dir) + ".jsonl"
	if t, ok := cache[main]; ok {
		return t
	}
	var tasks map[string]string
	if data, err := os.ReadFile(main); err == nil {
		if c, err := parseClaude(data); err == nil {
			tasks = c.tasks
		}
	}
	cache[main] = tasks
	return tasks
}

// firstText is the text of a user message's first text block.
func firstText(msg json.RawMessage) string {
	var m struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.Content) == 0 {
		return ""
	}
	return m.Content[0].Text
}

// add appends the messages of one line, reporting false for a line whose
// content does not parse.
func (c *claudeConv) add(l claudeLine, tools, tasks map[string]string) bool {
	ts := millis(l.Timestamp)
	var blocks []claudeBlock
	var text string
	if json.Unmarshal(l.Message.Content, &text) != nil {
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			return false
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
			if blk := b.content(); blk != nil {
				content = append(content, blk)
				continue
			}
			switch b.Type {
			case "tool_use":
				tools[b.ID] = b.Name
				args := b.Input
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				var task struct{ Prompt, Description string }
				if json.Unmarshal(args, &task) == nil && task.Prompt != "" {
					tasks[task.Prompt] = task.Description
				}
				content = append(content, map[string]any{"type": "toolCall", "id": b.ID, "name": b.Name, "arguments": args})
			}
		}
		stop := "stop"
		if l.Message.StopReason == "tool_use" {
			stop = "toolUse"
		}
		last := &c.last
		if last.apiID != "" && last.apiID == l.Message.ID && last.uuid == l.ParentUUID {
			// Claude Code writes one API message as one line per block,
			// chained: they make one assistant message again.
			last.content = append(last.content, content...)
			last.uuid = l.UUID
			c.alias[l.UUID] = c.msgs[last.index].id
			c.msgs[last.index].msg = assistant(last.content, l.Message.Model, "anthropic", last.ts, stop, l.usage())
			return true
		}
		c.msgs = append(c.msgs, srcMsg{id: l.UUID, parent: l.ParentUUID, msg: assistant(content, l.Message.Model, "anthropic", ts, stop, l.usage())})
		c.last = lastAssistant{apiID: l.Message.ID, uuid: l.UUID, index: len(c.msgs) - 1, content: content, ts: ts}
	case "user":
		c.last = lastAssistant{}
		if l.IsCompactSummary && l.ParentUUID != "" {
			// The summary replacing what came before, which is kept from
			// its last message on (a compaction names one).
			var text []string
			for _, b := range blocks {
				text = append(text, b.Text)
			}
			c.msgs = append(c.msgs, srcMsg{id: l.UUID, parent: l.ParentUUID, at: ts, kind: kindCompaction,
				summary: strings.Join(text, "\n"), firstKept: l.ParentUUID, tokens: c.preTokens})
			return true
		}
		var content []any
		parent, id := l.ParentUUID, l.UUID
		for i, b := range blocks {
			if blk := b.content(); blk != nil {
				content = append(content, blk)
				continue
			}
			switch b.Type {
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
	return true
}

// claudeParent names the main session of a subagent file
// (<project>/<session id>/subagents/agent-<id>.jsonl): the id its import
// has, or will have.
func claudeParent(path string) string {
	dir := filepath.Dir(path)
	if filepath.Base(dir) != "subagents" {
		return ""
	}
	return source{}.id("claude", filepath.Base(filepath.Dir(dir)))
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
		if blk := b.content(); blk != nil {
			out = append(out, blk)
		}
	}
	if out == nil {
		out = []any{map[string]any{"type": "text", "text": strings.TrimSpace(string(raw))}}
	}
	return out
}

// claudeID is Claude Code's id of the session in path: the file's name
// (<session id>.jsonl), or for a subagent's file its session's and its own.
func claudeID(path string) string {
	id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if dir := filepath.Dir(path); filepath.Base(dir) == "subagents" {
		id = filepath.Base(filepath.Dir(dir)) + "/" + id
	}
	return id
}
