package catalog

import (
	"strconv"
	"strings"
	"time"

	"github.com/trovekit/trove/internal/jsonscan"
)

// Roles an entry is catalogued under (the --role filter takes the first
// three).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // a tool result
	RoleSummary   = "summary"
	RoleLabel     = "label"
	RoleTitle     = "title"
	RoleOther     = "other"
)

// doc is what the catalog keeps of one entry: where it is, what it is, the
// text it indexes and the figures stats add up.
type doc struct {
	id, parent string
	ts         int64 // unix milliseconds; 0 when unknown
	role       string
	tools      []string // tool names called, or the tool of a result
	model      string
	texts      []string // what is indexed, in order
	refs       []string // blob refs of text held in the blob store
	usage      usage
}

// usage is what an entry adds to the stats.
type usage struct {
	messages, toolCalls, toolErrors      int64
	input, output, cacheRead, cacheWrite int64
	cost                                 float64
}

// parseEntry reads one line of a session file: ok false for a line that
// is not an entry (torn, garbage, no id).
func parseEntry(line []byte, buf jsonscan.Members) (d doc, ok bool) {
	return parseEntryOf(line, buf, true)
}

// parseTexts reads what a query checks of an entry read back: its texts
// (and the refs of those in the blob store), not its time and usage,
// which the catalog's row holds: parsing them costs each candidate a
// time.Parse and, for an answer, a strconv.ParseFloat, whose code and
// tables are pages a new process faults in.
func parseTexts(line []byte, buf jsonscan.Members) (d doc, ok bool) {
	return parseEntryOf(line, buf, false)
}

// parseEntryOf is parseEntry, its time and usage read only with stats.
func parseEntryOf(line []byte, buf jsonscan.Members, stats bool) (d doc, ok bool) {
	valid, _, top := jsonscan.ScanObject(line, buf)
	if !valid || top == nil {
		return d, false
	}
	d.id, _ = top.Str("id")
	if d.id == "" {
		return d, false
	}
	d.parent, _ = top.Str("parentId")
	if ts, ok := top.Str("timestamp"); ok && stats {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			d.ts = t.UnixMilli()
		}
	}
	typ, _ := top.Str("type")
	switch typ {
	case "message", "custom_message":
		d.message(top.Get("message"), typ == "custom_message", top, stats)
	case "compaction", "branch_summary":
		d.role = RoleSummary
		d.addString(top.Get("summary"))
	case "label":
		d.role = RoleLabel
		d.addString(top.Get("label"))
	case "session_info":
		d.role = RoleTitle
		d.addString(top.Get("name"))
	default:
		d.role = RoleOther
	}
	return d, true
}

// message reads a message entry's message object (for a custom message,
// the entry itself holds the content), its usage with stats.
func (d *doc) message(raw []byte, custom bool, top jsonscan.Members, stats bool) {
	m := top
	var buf [16]jsonscan.Member // split on the stack, not the heap
	if !custom {
		var ok bool
		if m, ok = jsonscan.SplitObjectInto(raw, buf[:0]); !ok {
			d.role = RoleOther
			return
		}
	}
	role, _ := m.Str("role")
	d.usage.messages = 1
	switch role {
	case "user":
		d.role = RoleUser
	case "assistant":
		d.role = RoleAssistant
		d.model, _ = m.Str("model")
		if stats {
			d.readUsage(m.Get("usage"))
		}
	case "toolResult":
		d.role = RoleTool
		if name, ok := m.Str("toolName"); ok {
			d.tools = append(d.tools, name)
		}
		if jsonscan.Truthy(m.Get("isError")) {
			d.usage.toolErrors = 1
		}
	case "bashExecution":
		d.role = RoleTool
		d.tools = append(d.tools, "bash")
		d.addString(m.Get("command"))
		d.addString(m.Get("output"))
	default:
		d.role = RoleOther
		if custom {
			d.role = RoleUser
		}
	}
	d.content(m.Get("content"))
}

// content reads a message's content: a string or an array of blocks.
func (d *doc) content(raw []byte) {
	if len(raw) > 0 && raw[0] == '"' {
		d.addString(raw)
		return
	}
	blocks, _ := jsonscan.SplitArray(raw)
	var buf [8]jsonscan.Member
	for _, b := range blocks {
		ms, ok := jsonscan.SplitObjectInto(b, buf[:0])
		if !ok {
			continue
		}
		typ, _ := ms.Str("type")
		switch typ {
		case "text":
			if ref, ok := ms.Str("textRef"); ok && strings.HasPrefix(ref, "blob:") {
				d.refs = append(d.refs, ref)
				d.texts = append(d.texts, "") // resolved in its place
				continue
			}
			d.addString(ms.Get("text"))
		case "thinking":
			d.addString(ms.Get("thinking"))
		case "toolCall":
			name, _ := ms.Str("name")
			d.tools = append(d.tools, name)
			d.usage.toolCalls++
			d.texts = append(d.texts, name)
			d.addValues(ms.Get("arguments"))
		}
	}
}

func (d *doc) addString(raw []byte) {
	if s, ok := jsonscan.String(raw); ok && s != "" {
		d.texts = append(d.texts, s)
	}
}

// addValues indexes the strings and numbers of a JSON value (a tool
// call's arguments), not its keys.
func (d *doc) addValues(raw []byte) {
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '"':
		d.addString(raw)
	case '{':
		var buf [8]jsonscan.Member
		ms, _ := jsonscan.SplitObjectInto(raw, buf[:0])
		for _, m := range ms {
			d.addValues(m.Val)
		}
	case '[':
		elems, _ := jsonscan.SplitArray(raw)
		for _, e := range elems {
			d.addValues(e)
		}
	case 't', 'f', 'n':
	default:
		d.texts = append(d.texts, string(raw))
	}
}

func (d *doc) readUsage(raw []byte) {
	var buf [8]jsonscan.Member
	u, ok := jsonscan.SplitObjectInto(raw, buf[:0])
	if !ok {
		return
	}
	num := func(raw []byte) int64 { n, _ := strconv.ParseInt(string(raw), 10, 64); return n }
	d.usage.input = num(u.Get("input"))
	d.usage.output = num(u.Get("output"))
	d.usage.cacheRead = num(u.Get("cacheRead"))
	d.usage.cacheWrite = num(u.Get("cacheWrite"))
	var cbuf [8]jsonscan.Member
	if c, ok := jsonscan.SplitObjectInto(u.Get("cost"), cbuf[:0]); ok {
		d.usage.cost, _ = strconv.ParseFloat(string(c.Get("total")), 64)
	}
}

// header is what the catalog keeps of a session file's first line.
type header struct {
	id, cwd, title, parent string
	version                float64
	ts                     int64
}

// parseHeader reads a session header; ok false when line is not one.
func parseHeader(line []byte) (h header, ok bool) {
	valid, _, top := jsonscan.ScanObject(line, nil)
	if !valid || top == nil {
		return h, false
	}
	if t, _ := top.Str("type"); t != "session" {
		return h, false
	}
	if h.id, ok = top.Str("id"); !ok {
		return h, false
	}
	h.cwd, _ = top.Str("cwd")
	h.title, _ = top.Str("title")
	h.parent, _ = top.Str("parentSession")
	h.version = 1
	if v, err := strconv.ParseFloat(string(top.Get("version")), 64); err == nil {
		h.version = v
	}
	if ts, ok := top.Str("timestamp"); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			h.ts = t.UnixMilli()
		}
	}
	return h, true
}
