package tree

import (
	"encoding/json"
	"strconv"

	"github.com/trovekit/trove/internal/jsonscan"
)

// Context is what is sent to the model at one leaf: pi session v3
// buildSessionContext. Messages hold AgentMessage JSON objects: stored
// messages unchanged (blob refs resolved), and custom, branchSummary and
// compactionSummary messages shaped as the reference's create functions
// shape them.
type Context struct {
	LeafID            string // "" when the leaf is null (nothing before it)
	Messages          []json.RawMessage
	ThinkingLevel     string // "off" when never set
	Models            Models
	InjectedTtsrRules []string
	Mode              string          // "none" when never set
	ModeData          json.RawMessage // nil when the last mode_change had none
	// modeRaw is the last mode as written when it is not a string (the
	// reference passes it through; Mode holds its text).
	modeRaw json.RawMessage
	// Path is the entries from the root to the leaf.
	Path []*Entry
}

// Models maps a model role ("default", "smol", ...) to a model, keeping
// the order roles were first set in. Values stay as written: a
// model_change whose model is the number 5 gives 5, not "5" (the
// reference passes the value through).
type Models struct {
	roles  []string
	models map[string][]byte // JSON values
}

// Get returns the model of role as text ("" when unset).
func (m Models) Get(role string) string {
	v, ok := m.models[role]
	if !ok {
		return ""
	}
	return jsonscan.Text(v)
}

// Roles returns the roles in the order they were first set.
func (m Models) Roles() []string { return append([]string(nil), m.roles...) }

// Len is the number of roles set.
func (m Models) Len() int { return len(m.roles) }

func (m *Models) set(role string, model []byte) {
	if m.models == nil {
		m.models = make(map[string][]byte)
	}
	if _, ok := m.models[role]; !ok {
		m.roles = append(m.roles, role)
	}
	m.models[role] = model
}

// MarshalJSON writes the roles as one object, in order, values as written.
func (m Models) MarshalJSON() ([]byte, error) {
	var o jsonscan.ObjectBuilder
	for _, r := range m.roles {
		o.Add(r, m.models[r])
	}
	return o.Bytes(), nil
}

// MarshalJSON writes the context with the names pi session v3 uses.
func (c *Context) MarshalJSON() ([]byte, error) {
	var o jsonscan.ObjectBuilder
	if c.LeafID == "" {
		o.Add("leafId", []byte("null"))
	} else {
		o.Add("leafId", jsonscan.Quote(c.LeafID))
	}
	msgs := make([][]byte, len(c.Messages))
	for i, m := range c.Messages {
		msgs[i] = jsonscan.ToValidUTF8(m)
	}
	o.Add("messages", joinArray(msgs))
	o.Add("thinkingLevel", jsonscan.Quote(c.ThinkingLevel))
	models, _ := c.Models.MarshalJSON()
	o.Add("models", models)
	rules := make([][]byte, len(c.InjectedTtsrRules))
	for i, r := range c.InjectedTtsrRules {
		rules[i] = jsonscan.Quote(r)
	}
	o.Add("injectedTtsrRules", joinArray(rules))
	if c.modeRaw != nil {
		o.Add("mode", jsonscan.ToValidUTF8(c.modeRaw))
	} else {
		o.Add("mode", jsonscan.Quote(c.Mode))
	}
	if c.ModeData != nil {
		o.Add("modeData", jsonscan.ToValidUTF8(c.ModeData))
	}
	return o.Bytes(), nil
}

func emptyContext() *Context {
	return &Context{Messages: []json.RawMessage{}, ThinkingLevel: "off", Mode: "none", InjectedTtsrRules: []string{}}
}

// path walks parentId links from leaf to the root and returns the entries
// root first. A parentId naming no entry ends the walk, and so does a link
// back to an entry already on the path (a cycle, where the reference loops
// forever).
func path(byID map[string]*Entry, leaf *Entry) []*Entry {
	// Without a cycle the walk ends within len(byID)+1 steps; only a walk
	// that does not pays for remembering what it saw.
	var rev []*Entry
	for e := leaf; e != nil; {
		if len(rev) > len(byID) {
			return pathSeen(byID, leaf)
		}
		rev = append(rev, e)
		if e.parentID == "" {
			break
		}
		e = byID[e.parentID]
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

func pathSeen(byID map[string]*Entry, leaf *Entry) []*Entry {
	var rev []*Entry
	seen := make(map[*Entry]bool)
	for e := leaf; e != nil && !seen[e]; {
		seen[e] = true
		rev = append(rev, e)
		if e.parentID == "" {
			break
		}
		e = byID[e.parentID]
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// buildContext is pi session v3 buildSessionContext at leaf (nil: empty), with
// the reference's behaviour where the text is silent.
func buildContext(byID map[string]*Entry, leaf *Entry) *Context {
	c := emptyContext()
	if leaf == nil {
		return c
	}
	c.LeafID = leaf.id
	c.Path = path(byID, leaf)

	// Settings come from the whole path; only the last compaction counts.
	compaction := -1
	seenRule := map[string]bool{}
	// The default model a later assistant message sets: computed once, for
	// the last one (the value set before it is overwritten anyway).
	var lastAssistant *Entry
	for i, e := range c.Path {
		switch e.typ {
		case TypeThinkingLevelChange:
			c.ThinkingLevel = "off"
			if s, ok := jsonscan.String(e.Field("thinkingLevel")); ok {
				c.ThinkingLevel = s
			}
		case TypeModelChange:
			ms, _ := jsonscan.SplitObject(e.view)
			if model := ms.Get("model"); jsonscan.Truthy(model) {
				role := "default"
				if r := ms.Get("role"); !jsonscan.IsNull(r) {
					role = jsonscan.Text(r)
				}
				c.Models.set(role, model)
				if role == "default" {
					lastAssistant = nil
				}
			}
		case TypeMessage:
			// Every assistant message sets the default model, even after
			// an explicit model_change (reference behaviour).
			if e.role == "assistant" {
				c.Models.set("default", nil)
				lastAssistant = e
			}
		case TypeCompaction:
			compaction = i
		case TypeTtsrInjection:
			rules, _ := jsonscan.SplitArray(e.Field("injectedRules"))
			for _, r := range rules {
				s := jsonscan.Text(r)
				if !seenRule[s] {
					seenRule[s] = true
					c.InjectedTtsrRules = append(c.InjectedTtsrRules, s)
				}
			}
		case TypeModeChange:
			ms, _ := jsonscan.SplitObject(e.view)
			c.Mode, c.modeRaw = "none", nil
			if m := ms.Get("mode"); !jsonscan.IsNull(m) {
				c.Mode = jsonscan.Text(m)
				if m[0] != '"' {
					c.modeRaw = json.RawMessage(m)
				}
			}
			c.ModeData = nil
			if d := ms.Get("data"); d != nil {
				c.ModeData = json.RawMessage(d)
			}
		}
	}

	if lastAssistant != nil {
		msg, _ := jsonscan.SplitObject(lastAssistant.Field("message"))
		c.Models.set("default", jsonscan.Quote(jsonscan.Text(msg.Get("provider"))+"/"+jsonscan.Text(msg.Get("model"))))
	}

	if compaction < 0 {
		for _, e := range c.Path {
			c.appendMessage(e)
		}
		return c
	}
	comp := c.Path[compaction]
	c.Messages = append(c.Messages, compactionSummaryMessage(comp))
	firstKept, _ := jsonscan.String(comp.Field("firstKeptEntryId"))
	found := false
	for _, e := range c.Path[:compaction] {
		if !found && firstKept != "" && e.id == firstKept {
			found = true
		}
		if found {
			c.appendMessage(e)
		}
	}
	for _, e := range c.Path[compaction+1:] {
		c.appendMessage(e)
	}
	return c
}

func (c *Context) appendMessage(e *Entry) {
	switch e.typ {
	case TypeMessage:
		m := e.Field("message")
		if m == nil {
			m = json.RawMessage("null") // undefined in a JS array
		}
		c.Messages = append(c.Messages, m)
	case TypeCustomMessage:
		c.Messages = append(c.Messages, customMessage(e))
	case TypeBranchSummary:
		if jsonscan.Truthy(e.Field("summary")) {
			c.Messages = append(c.Messages, branchSummaryMessage(e))
		}
	}
}

// The create functions of pi session v3 (messages.ts): fields the entry lacks are
// left out, as JSON.stringify leaves out undefined.

func customMessage(e *Entry) json.RawMessage {
	ms, _ := jsonscan.SplitObject(e.view)
	var o jsonscan.ObjectBuilder
	o.Add("role", jsonscan.Quote("custom"))
	copyMembers(&o, ms, "customType", "content", "display", "details")
	addMillis(&o, ms.Get("timestamp"))
	return o.Bytes()
}

func branchSummaryMessage(e *Entry) json.RawMessage {
	ms, _ := jsonscan.SplitObject(e.view)
	var o jsonscan.ObjectBuilder
	o.Add("role", jsonscan.Quote("branchSummary"))
	copyMembers(&o, ms, "summary", "fromId")
	addMillis(&o, ms.Get("timestamp"))
	return o.Bytes()
}

func compactionSummaryMessage(e *Entry) json.RawMessage {
	ms, _ := jsonscan.SplitObject(e.view)
	var o jsonscan.ObjectBuilder
	o.Add("role", jsonscan.Quote("compactionSummary"))
	copyMembers(&o, ms, "summary", "shortSummary", "tokensBefore")
	addMillis(&o, ms.Get("timestamp"))
	return o.Bytes()
}

func copyMembers(o *jsonscan.ObjectBuilder, ms jsonscan.Members, keys ...string) {
	for _, k := range keys {
		if v := ms.Get(k); v != nil {
			o.Add(k, v)
		}
	}
}

// addMillis writes "timestamp" as new Date(ts).getTime(): epoch
// milliseconds, null where JavaScript gets NaN.
func addMillis(o *jsonscan.ObjectBuilder, ts []byte) {
	if ms, ok := epochMillis(ts); ok {
		o.Add("timestamp", strconv.AppendInt(nil, ms, 10))
	} else {
		o.Add("timestamp", []byte("null"))
	}
}
