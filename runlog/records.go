package runlog

import (
	"bytes"
	"encoding/json"
	"time"
)

// SchemaVersion is the header schema_version trove writes. Readers accept
// other versions in a best-effort mode (the run log spec, section 8).
const SchemaVersion = 1

// Record types of the run log spec, section 3.
const (
	TypeHeader      = "header"
	TypeRunStart    = "run.start"
	TypeRunContext  = "run.context"
	TypeAgentEvent  = "agent.event"
	TypeToolOutput  = "tool.output"
	TypeLLMRequest  = "llm.request"
	TypeLLMResponse = "llm.response"
	TypeRunStatus   = "run.status"
	TypeRunError    = "run.error"
	TypeRunEnd      = "run.end"
)

// Status is a run.status value. Readers keep values they do not know.
type Status string

// Status values of the run log spec.
const (
	StatusRunning    Status = "running"
	StatusAwaitingUI Status = "awaiting_ui"
	StatusCompleted  Status = "completed"
	StatusError      Status = "error"
	StatusCancelled  Status = "cancelled"
)

// Outcome is a run.end outcome. Readers keep values they do not know.
type Outcome string

// Outcome values of the run log spec.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeError     Outcome = "error"
)

// Record is one line of a run log: *Header, *RunStart, *RunContext,
// *AgentEvent, *ToolOutput, *LLMRequest, *LLMResponse, *RunStatus,
// *RunError, *RunEnd, or *Unknown for any other type.
type Record interface {
	RecordType() string
	isRecord()
}

// Time is a record timestamp. It is written in RFC 3339, UTC, with
// milliseconds (2026-02-03T12:34:56.789Z); any RFC 3339 string is read, and
// an unreadable one reads as the zero Time rather than failing the record.
type Time struct{ time.Time }

// TimeOf returns t as a Time.
func TimeOf(t time.Time) Time { return Time{t} }

const tsLayout = "2006-01-02T15:04:05.000Z"

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(tsLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, tsLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	t.Time = time.Time{}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
		t.Time = v
	}
	return nil
}

// Base holds the fields every record but the header has. A Writer fills
// Type, RunID and TS when they are empty.
type Base struct {
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	TS    Time   `json:"ts"`
}

func (b *Base) base() *Base { return b }

// Software names a client or server.
type Software struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Model names the model a run or a request used.
type Model struct {
	Provider  string `json:"provider,omitempty"`
	Name      string `json:"name,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// Prompts are the prompts a run started with.
type Prompts struct {
	System string `json:"system,omitempty"`
}

// Tools are the tool definitions a run started with.
type Tools struct {
	Definitions []json.RawMessage `json:"definitions,omitempty"`
	Source      string            `json:"source,omitempty"`
}

// Runtime describes where a run ran.
type Runtime struct {
	Cwd     string `json:"cwd,omitempty"`
	OS      string `json:"os,omitempty"`
	Arch    string `json:"arch,omitempty"`
	Version string `json:"version,omitempty"`
}

// Header is the first line of every run file.
type Header struct {
	Type          string          `json:"type"`
	SchemaVersion int             `json:"schema_version"`
	RunID         string          `json:"run_id"`
	SessionID     string          `json:"session_id,omitempty"`
	StartedAt     Time            `json:"started_at"`
	Client        *Software       `json:"client,omitempty"`
	Server        *Software       `json:"server,omitempty"`
	Model         *Model          `json:"model,omitempty"`
	Prompts       *Prompts        `json:"prompts,omitempty"`
	Tools         *Tools          `json:"tools,omitempty"`
	Runtime       *Runtime        `json:"runtime,omitempty"`
	Meta          json.RawMessage `json:"meta,omitempty"`
}

// Input is the user input that started a run.
type Input struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// RunStart records the input of a run.
type RunStart struct {
	Base
	SessionID string          `json:"session_id,omitempty"`
	Input     Input           `json:"input"`
	UIContext json.RawMessage `json:"ui_context,omitempty"`
	Meta      json.RawMessage `json:"meta,omitempty"`
}

// RunContext records how much of the context window is left.
type RunContext struct {
	Base
	ContextLeftPercent float64         `json:"context_left_percent"`
	Meta               json.RawMessage `json:"meta,omitempty"`
}

// AgentEvent is one event for UI playback, ordered by Seq.
type AgentEvent struct {
	Base
	Seq   int64           `json:"seq"`
	Event json.RawMessage `json:"event"`
	Meta  json.RawMessage `json:"meta,omitempty"`
}

// EventType returns the "type" of the event object, or "".
func (e *AgentEvent) EventType() string { return peekType(e.Event) }

// OutputRef names where a tool output is stored. When trove externalizes an
// output, ID is its blob ref (blob:sha256:<hex>).
type OutputRef struct {
	ID        string `json:"id"`
	ByteSize  int64  `json:"byte_size,omitempty"`
	LineCount int64  `json:"line_count,omitempty"`
}

// ToolOutput is the full raw output of one tool call. Outputs above the
// store's threshold are written to the blob store: the line then holds a
// short notice in result_raw and the blob ref in output_ref, and readers put
// the full output back into ResultRaw. An OutputRef the caller sets is
// written as given, whatever the size.
type ToolOutput struct {
	Base
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"tool_call_id"`
	ResultRaw  string          `json:"result_raw"`
	IsError    bool            `json:"is_error,omitempty"`
	OutputRef  *OutputRef      `json:"output_ref,omitempty"`
	Meta       json.RawMessage `json:"meta,omitempty"`

	// stored is result_raw as on disk when ResultRaw was resolved from a
	// blob, so that writing the record back writes the same line.
	stored   string
	resolved bool
}

// Resolved reports whether ResultRaw was read back from the blob store.
func (t *ToolOutput) Resolved() bool { return t.resolved }

// LLMInput is what a model was asked.
type LLMInput struct {
	Messages   []json.RawMessage `json:"messages"`
	Tools      json.RawMessage   `json:"tools,omitempty"`
	ToolChoice json.RawMessage   `json:"tool_choice,omitempty"`
	Model      string            `json:"model,omitempty"`
}

// LLMRequest is a snapshot of one model invocation; Seq numbers invocations
// and its LLMResponse carries the same Seq.
type LLMRequest struct {
	Base
	Seq   int64           `json:"seq"`
	Model *Model          `json:"model,omitempty"`
	Input LLMInput        `json:"input"`
	Meta  json.RawMessage `json:"meta,omitempty"`
}

// Usage counts the tokens of one invocation.
type Usage struct {
	Model                    string `json:"model"`
	InputTokens              int64  `json:"input_tokens"`
	InputCachedTokens        *int64 `json:"input_cached_tokens,omitempty"`
	InputCacheCreationTokens *int64 `json:"input_cache_creation_tokens,omitempty"`
	InputImageTokens         *int64 `json:"input_image_tokens,omitempty"`
	OutputTokens             int64  `json:"output_tokens"`
	TotalTokens              int64  `json:"total_tokens"`
}

// LLMOutput is what a model answered.
type LLMOutput struct {
	Messages     []json.RawMessage `json:"messages"`
	Usage        *Usage            `json:"usage,omitempty"`
	StopReason   string            `json:"stop_reason,omitempty"`
	ProviderMeta json.RawMessage   `json:"provider_meta,omitempty"`
}

// LLMResponse is the answer to the LLMRequest with the same Seq.
type LLMResponse struct {
	Base
	Seq    int64           `json:"seq"`
	Output LLMOutput       `json:"output"`
	Meta   json.RawMessage `json:"meta,omitempty"`
}

// RunStatus records a status change.
type RunStatus struct {
	Base
	Status  Status          `json:"status"`
	Message string          `json:"message,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// ErrorInfo describes an error a run hit.
type ErrorInfo struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// RunError records an error.
type RunError struct {
	Base
	Error ErrorInfo       `json:"error"`
	Meta  json.RawMessage `json:"meta,omitempty"`
}

// RunEnd is the last record of a run that finished.
type RunEnd struct {
	Base
	Outcome Outcome         `json:"outcome"`
	Final   string          `json:"final,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// Unknown is a record of a type this version does not know (a later record
// type, or a custom x.<org>.<name> one). Raw is the whole JSON object.
type Unknown struct {
	Type string
	Raw  json.RawMessage
}

func (*Header) RecordType() string      { return TypeHeader }
func (*RunStart) RecordType() string    { return TypeRunStart }
func (*RunContext) RecordType() string  { return TypeRunContext }
func (*AgentEvent) RecordType() string  { return TypeAgentEvent }
func (*ToolOutput) RecordType() string  { return TypeToolOutput }
func (*LLMRequest) RecordType() string  { return TypeLLMRequest }
func (*LLMResponse) RecordType() string { return TypeLLMResponse }
func (*RunStatus) RecordType() string   { return TypeRunStatus }
func (*RunError) RecordType() string    { return TypeRunError }
func (*RunEnd) RecordType() string      { return TypeRunEnd }
func (u *Unknown) RecordType() string   { return u.Type }

func (*Header) isRecord()      {}
func (*RunStart) isRecord()    {}
func (*RunContext) isRecord()  {}
func (*AgentEvent) isRecord()  {}
func (*ToolOutput) isRecord()  {}
func (*LLMRequest) isRecord()  {}
func (*LLMResponse) isRecord() {}
func (*RunStatus) isRecord()   {}
func (*RunError) isRecord()    {}
func (*RunEnd) isRecord()      {}
func (*Unknown) isRecord()     {}

// newRecord returns an empty record of a known type, or nil.
func newRecord(typ string) Record {
	switch typ {
	case TypeHeader:
		return &Header{}
	case TypeRunStart:
		return &RunStart{}
	case TypeRunContext:
		return &RunContext{}
	case TypeAgentEvent:
		return &AgentEvent{}
	case TypeToolOutput:
		return &ToolOutput{}
	case TypeLLMRequest:
		return &LLMRequest{}
	case TypeLLMResponse:
		return &LLMResponse{}
	case TypeRunStatus:
		return &RunStatus{}
	case TypeRunError:
		return &RunError{}
	case TypeRunEnd:
		return &RunEnd{}
	}
	return nil
}

// Entry is one record as read: its line number, its raw JSON exactly as on
// disk, and its typed value.
type Entry struct {
	Line   int             // 1-based line in the file
	Type   string          // the record's "type"
	Raw    json.RawMessage // the line without its newline
	Record Record          // typed value; nil for a line that is not a record
}

// peekType returns the "type" string of a JSON object. Lines trove writes
// start with it, so most lines need no second parse.
func peekType(b []byte) string {
	const pre = `{"type":"`
	if bytes.HasPrefix(b, []byte(pre)) {
		rest := b[len(pre):]
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i])
		}
	}
	var v struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Type, &s) != nil {
		return ""
	}
	return s
}
