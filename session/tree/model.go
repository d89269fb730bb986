package tree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trovekit/trove/internal/jsonscan"
	"github.com/trovekit/trove/internal/jsonw"
)

// CurrentVersion is the session format version trove writes (pi session v3).
const CurrentVersion = 3

// Entry types of pi session v3.
const (
	TypeSession             = "session" // the header line
	TypeMessage             = "message"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeModelChange         = "model_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeTtsrInjection       = "ttsr_injection"
	TypeSessionInit         = "session_init"
	TypeModeChange          = "mode_change"
)

// Header is the first line of a session file (pi session v3 SessionHeader).
type Header struct {
	Version       float64 // 1 when the file has none
	ID            string
	Timestamp     string // ISO 8601, as written
	Cwd           string
	Title         string
	ParentSession string // opaque lineage: a session id or a path
}

// parseHeader reads a header from its members; ok is false unless type is
// "session" and id is a string (the reference's validity rule).
func parseHeader(ms jsonscan.Members) (Header, bool) {
	if t, _ := ms.Str("type"); t != TypeSession {
		return Header{}, false
	}
	id, ok := ms.Str("id")
	if !ok {
		return Header{}, false
	}
	h := Header{ID: id, Version: 1}
	if v := ms.Get("version"); !jsonscan.IsNull(v) {
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			h.Version = f
		} else {
			// Not a number: the reference skips every migration step.
			h.Version = CurrentVersion
		}
	}
	h.Timestamp, _ = ms.Str("timestamp")
	h.Cwd, _ = ms.Str("cwd")
	h.Title, _ = ms.Str("title")
	h.ParentSession, _ = ms.Str("parentSession")
	return h, true
}

// EncodeHeader writes a new header line in the reference's key order.
func EncodeHeader(h Header) []byte {
	var o jsonscan.ObjectBuilder
	o.Add("type", jsonscan.Quote(TypeSession))
	o.Add("version", []byte(strconv.FormatFloat(h.Version, 'g', -1, 64)))
	o.Add("id", jsonscan.Quote(h.ID))
	o.Add("timestamp", jsonscan.Quote(h.Timestamp))
	o.Add("cwd", jsonscan.Quote(h.Cwd))
	if h.Title != "" {
		o.Add("title", jsonscan.Quote(h.Title))
	}
	if h.ParentSession != "" {
		o.Add("parentSession", jsonscan.Quote(h.ParentSession))
	}
	return o.Bytes()
}

// Entry is one line after the header: a node of the session tree. Entries
// are immutable; the JSON they hold must not be modified.
type Entry struct {
	typ       string
	id        string
	parentID  string
	timestamp string
	role      string // message.role of a message entry
	line      int    // line in the file it was loaded from, 0 for new entries
	object    bool   // the line is a JSON object (any JSON value is kept)
	walk      uint8  // findCycles' state (the session's lock held)

	// view is the entry as callers see it, blob refs resolved. raw is the
	// entry as stored, refs in place; nil until a new entry is persisted.
	view  []byte
	raw   []byte
	msg   []byte   // the message object within view, when known (else nil)
	usage *Usage   // a message's totals, when known (appended entries)
	keys  keysSeen // an appended message's keys the preparer acts on
}

// keysSeen is what PrepareMessage saw of the keys the preparer acts on.
type keysSeen uint8

const (
	keysUnknown keysSeen = iota // not looked at: mayNeedPrepare decides
	keysNone                    // none: written as it is
	keysSome                    // some, or an escaped key: walked
)

// Type is the entry's "type" ("" when the line has none).
func (e *Entry) Type() string { return e.typ }

// ID is the entry's "id" ("" when it has none: such entries are kept but are
// not part of the tree).
func (e *Entry) ID() string { return e.id }

// ParentID is the entry's "parentId"; "" for a root (null or absent).
func (e *Entry) ParentID() string { return e.parentID }

// Timestamp is the entry's ISO 8601 "timestamp", as stored.
func (e *Entry) Timestamp() string { return e.timestamp }

// Role is message.role of a message entry, "" for other entries.
func (e *Entry) Role() string { return e.role }

// Line is the 1-based line the entry was loaded from; 0 for an entry
// appended in this process.
func (e *Entry) Line() int { return e.line }

// JSON is the whole entry as one JSON value, blob refs resolved. Unknown
// fields are there unchanged. The slice must not be modified.
func (e *Entry) JSON() json.RawMessage { return e.view }

// Field returns the raw JSON of a top-level field, or nil when absent.
func (e *Entry) Field(name string) json.RawMessage {
	if name == "message" && e.msg != nil {
		return e.msg
	}
	ms, _ := jsonscan.SplitObject(e.view)
	return json.RawMessage(ms.Get(name))
}

// Data decodes the entry into the typed value of its type: *Message,
// *ModelChange, ... and *Unknown for types pi session v3 does not define. Fields
// with an unexpected JSON type are left zero and reported in the error.
func (e *Entry) Data() (EntryData, error) {
	var d EntryData
	switch e.typ {
	case TypeMessage:
		d = &Message{}
	case TypeThinkingLevelChange:
		d = &ThinkingLevelChange{}
	case TypeModelChange:
		d = &ModelChange{}
	case TypeCompaction:
		d = &Compaction{}
	case TypeBranchSummary:
		d = &BranchSummary{}
	case TypeCustom:
		d = &Custom{}
	case TypeCustomMessage:
		d = &CustomMessage{}
	case TypeLabel:
		d = &Label{}
	case TypeTtsrInjection:
		d = &TtsrInjection{}
	case TypeSessionInit:
		d = &SessionInit{}
	case TypeModeChange:
		d = &ModeChange{}
	default:
		return &Unknown{Type: e.typ, Fields: e.view}, nil
	}
	if !e.object {
		return d, fmt.Errorf("entry is not an object: %w", ErrCorrupt)
	}
	// Strings decode as the reference reads them (jsonscan.ToValidUTF8),
	// not byte by byte as encoding/json replaces invalid UTF-8.
	if err := json.Unmarshal(jsonscan.ToValidUTF8(e.view), d); err != nil {
		return d, fmt.Errorf("decode %s entry %s: %w", e.typ, e.id, err)
	}
	return d, nil
}

// EntryData is the type-specific part of an entry, for appending and for
// typed reading (Entry.Data).
type EntryData interface {
	EntryType() string
}

// Message stores an AgentMessage (pi session v3 `message`). The message is kept
// as JSON: its shape depends on its role and is passed through verbatim.
type Message struct {
	Message json.RawMessage `json:"message"`
}

// ThinkingLevelChange is pi session v3 `thinking_level_change`.
type ThinkingLevelChange struct {
	ThinkingLevel string `json:"thinkingLevel"`
}

// ModelChange is pi session v3 `model_change`; Role "" means "default".
type ModelChange struct {
	Model string `json:"model"`
	Role  string `json:"role,omitempty"`
}

// Compaction is pi session v3 `compaction`.
type Compaction struct {
	Summary          string          `json:"summary"`
	ShortSummary     string          `json:"shortSummary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int64           `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
	PreserveData     json.RawMessage `json:"preserveData,omitempty"`
	FromExtension    bool            `json:"fromExtension,omitempty"`
}

// BranchSummary is pi session v3 `branch_summary`; FromID is "root" when the
// branch started before the first entry.
type BranchSummary struct {
	FromID        string          `json:"fromId"`
	Summary       string          `json:"summary"`
	Details       json.RawMessage `json:"details,omitempty"`
	FromExtension bool            `json:"fromExtension,omitempty"`
}

// Custom is pi session v3 `custom`: extension state, not part of the context.
type Custom struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// CustomMessage is pi session v3 `custom_message`: extension content that is part
// of the context. Content is a JSON string or an array of content blocks.
type CustomMessage struct {
	CustomType string          `json:"customType"`
	Content    json.RawMessage `json:"content"`
	Display    bool            `json:"display"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// Label is pi session v3 `label`; an empty Label clears the target's label.
type Label struct {
	TargetID string `json:"targetId"`
	Label    string `json:"label,omitempty"`
}

// TtsrInjection is pi session v3 `ttsr_injection`.
type TtsrInjection struct {
	InjectedRules []string `json:"injectedRules"`
}

// SessionInit is pi session v3 `session_init`.
type SessionInit struct {
	SystemPrompt string          `json:"systemPrompt,omitempty"`
	Task         string          `json:"task,omitempty"`
	Tools        []string        `json:"tools,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ModeChange is pi session v3 `mode_change`.
type ModeChange struct {
	Mode string          `json:"mode"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Unknown is an entry of a type pi session v3 does not define. Fields is the
// whole entry object (or, when appending, the members to write after the
// base fields; type, id, parentId and timestamp in it are ignored).
type Unknown struct {
	Type   string
	Fields json.RawMessage
}

func (*Message) EntryType() string             { return TypeMessage }
func (*ThinkingLevelChange) EntryType() string { return TypeThinkingLevelChange }
func (*ModelChange) EntryType() string         { return TypeModelChange }
func (*Compaction) EntryType() string          { return TypeCompaction }
func (*BranchSummary) EntryType() string       { return TypeBranchSummary }
func (*Custom) EntryType() string              { return TypeCustom }
func (*CustomMessage) EntryType() string       { return TypeCustomMessage }
func (*Label) EntryType() string               { return TypeLabel }
func (*TtsrInjection) EntryType() string       { return TypeTtsrInjection }
func (*SessionInit) EntryType() string         { return TypeSessionInit }
func (*ModeChange) EntryType() string          { return TypeModeChange }
func (u *Unknown) EntryType() string           { return u.Type }

var baseKeys = map[string]bool{"type": true, "id": true, "parentId": true, "timestamp": true}

// encodeEntry writes a new entry: the base fields in spec order, then the
// type's fields.
func encodeEntry(d EntryData, id, parentID, ts string) ([]byte, error) {
	typ := d.EntryType()
	if typ == "" || typ == TypeSession {
		return nil, fmt.Errorf("entry type %q: %w", typ, ErrInvalid)
	}
	if m, ok := d.(*Message); ok {
		return encodeMessage(m.Message, id, parentID, ts)
	}
	var body []byte
	if u, ok := d.(*Unknown); ok {
		body = u.Fields
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		if !json.Valid(body) {
			return nil, fmt.Errorf("fields of %q entry: not valid JSON: %w", typ, ErrInvalid)
		}
	} else {
		var err error
		if body, err = jsonscan.Marshal(d); err != nil {
			return nil, fmt.Errorf("encode %s entry: %w: %w", typ, ErrInvalid, err)
		}
	}
	ms, ok := jsonscan.SplitObject(body)
	if !ok {
		return nil, fmt.Errorf("fields of %q entry: not a JSON object: %w", typ, ErrInvalid)
	}
	var o jsonscan.ObjectBuilder
	o.Add("type", jsonscan.Quote(typ))
	o.Add("id", jsonscan.Quote(id))
	if parentID == "" {
		o.Add("parentId", []byte("null"))
	} else {
		o.Add("parentId", jsonscan.Quote(parentID))
	}
	o.Add("timestamp", jsonscan.Quote(ts))
	for _, m := range ms {
		if !baseKeys[m.Name()] {
			o.RawKey(m.KeyRaw, m.Val)
		}
	}
	return o.Bytes(), nil
}

// encodeMessage writes a message entry line in one pass over the message:
// checked, compacted only when it is not already, an assistant's completed
// (the writing contract), and framed as marshal would frame it.
func encodeMessage(msg []byte, id, parentID, ts string) ([]byte, error) {
	p, err := PrepareMessage(msg)
	if err != nil {
		return nil, err
	}
	b, _ := frameMessage(p, id, parentID, ts)
	return b, nil
}

// frameMessage writes the entry line of a prepared message and returns it
// with the message as it is in the line. A message PrepareMessageCopy
// made is framed in its own buffer, with no copy; it is framed once.
func frameMessage(p *Prepared, id, parentID, ts string) (line, inLine []byte) {
	var pre [128]byte
	prefix := appendPrefix(pre[:0], id, parentID, ts)
	if p.own && p.head >= len(prefix) {
		// The line ends with the message's members, the members to add
		// and two closing braces, where the buffer has room for them.
		end := p.head + len(p.msg) - 1 // the message's closing brace
		tail := len(p.extra) + 2
		if len(p.msg) == 2 && len(p.extra) > 0 {
			tail-- // {} takes no comma
		}
		if end+tail <= cap(p.buf) {
			start := p.head - len(prefix)
			copy(p.buf[start:], prefix)
			b := append(p.appendExtra(p.buf[:end]), '}', '}')
			p.own = false
			p.msg, p.extra = b[p.head:len(b)-1], nil // as it is in the line
			return b[start:], p.msg
		}
	}
	b := make([]byte, 0, len(prefix)+p.Size()+1)
	b = append(b, prefix...)
	start := len(b)
	b = p.appendMessage(b)
	b = append(b, '}')
	return b, b[start : len(b)-1]
}

// appendPrefix writes what comes before the message in its entry line.
func appendPrefix(b []byte, id, parentID, ts string) []byte {
	b = append(b, `{"type":"message","id":`...)
	b = jsonw.AppendString(b, id)
	b = append(b, `,"parentId":`...)
	if parentID == "" {
		b = append(b, "null"...)
	} else {
		b = jsonw.AppendString(b, parentID)
	}
	b = append(b, `,"timestamp":`...)
	b = jsonw.AppendString(b, ts)
	return append(b, `,"message":`...)
}

// newEntry indexes a JSON line (or a new entry) into an Entry. line is 0 for
// new entries. It does not validate: callers pass valid JSON.
func newEntry(b []byte, line int) *Entry {
	e := &Entry{view: b, line: line}
	ms, ok := jsonscan.SplitObject(b)
	if !ok {
		return e
	}
	e.fill(ms)
	return e
}

// setView replaces what callers see (a migration, resolved blobs).
func (e *Entry) setView(v []byte) {
	e.view, e.msg = v, nil
}

// commonString decodes raw, without allocating for the common values.
func commonString(raw []byte) (string, bool) {
	switch string(raw) {
	case `"message"`:
		return TypeMessage, true
	case `"user"`:
		return "user", true
	case `"assistant"`:
		return "assistant", true
	case `"toolResult"`:
		return "toolResult", true
	case `"model_change"`:
		return TypeModelChange, true
	case `"thinking_level_change"`:
		return TypeThinkingLevelChange, true
	case `"compaction"`:
		return TypeCompaction, true
	case `"label"`:
		return TypeLabel, true
	case `"custom"`:
		return TypeCustom, true
	}
	return jsonscan.String(raw)
}

// strArena gathers the short strings of many entries (ids, timestamps)
// into one allocation: set records where each goes, done makes the string
// and hands out the pieces.
type strArena struct {
	buf  []byte
	refs []strRef
}

type strRef struct {
	dst    *string
	off, n int
}

func (a *strArena) set(dst *string, raw []byte) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		*dst, _ = jsonscan.String(raw)
		return
	}
	a.refs = append(a.refs, strRef{dst, len(a.buf), len(raw) - 2})
	a.buf = append(a.buf, raw[1:len(raw)-1]...)
}

func (a *strArena) done() {
	s := string(a.buf)
	for _, r := range a.refs {
		*r.dst = s[r.off : r.off+r.n]
	}
	a.buf, a.refs = nil, nil
}

// fillScanned is fill from what scanLine found in the same pass; the
// entry's strings come from a (the entry must not move before a.done).
func (e *Entry) fillScanned(ms jsonscan.Members, role []byte, a *strArena) {
	e.object = true
	e.typ, _ = commonString(ms.Get("type"))
	a.set(&e.id, ms.Get("id"))
	a.set(&e.parentID, ms.Get("parentId"))
	a.set(&e.timestamp, ms.Get("timestamp"))
	e.role = ""
	if e.typ == TypeMessage {
		if m := ms.Get("message"); len(m) > 0 && m[0] == '{' {
			e.msg = m
			e.role, _ = commonString(role)
		}
	}
}

func (e *Entry) fill(ms jsonscan.Members) {
	e.object = true
	e.typ, _ = ms.Str("type")
	e.id, _ = ms.Str("id")
	e.parentID, _ = ms.Str("parentId")
	e.timestamp, _ = ms.Str("timestamp")
	e.role = ""
	if e.typ == TypeMessage {
		if msg, ok := jsonscan.SplitObject(ms.Get("message")); ok {
			e.role, _ = msg.Str("role")
		}
	}
}

// FormatTime formats t as JavaScript's Date.toISOString does.
func FormatTime(t time.Time) string {
	return string(jsonw.AppendTimeText(make([]byte, 0, 24), t))
}

// epochMillis converts a stored timestamp the way `new Date(ts).getTime()`
// does; ok is false where JavaScript gives NaN (serialized as null).
func epochMillis(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] != '"' {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != f || f > 8.64e15 || f < -8.64e15 {
			return 0, false
		}
		return int64(f), true
	}
	s, _ := jsonscan.String(raw)
	for _, layout := range []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04",
		"2006-01-02",
		"2006-01",
		"2006",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}
