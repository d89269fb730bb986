package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/runlog"
)

// RunlogSpecExample is the JSONL example of the run log spec, section 7, byte for
// byte (runlog/testdata/runlog-example.jsonl holds the same bytes).
const RunlogSpecExample = `{"type":"header","schema_version":1,"run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","started_at":"2026-02-03T12:00:00.123Z","client":{"name":"tui","version":"0.1.0"},"server":{"name":"runtime","version":"0.1.0"},"model":{"provider":"openai","name":"gpt-4.1-mini","reasoning":"medium"},"prompts":{"system":"You are a coding assistant."}}
{"type":"run.start","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:00.456Z","input":{"type":"text","text":"list files"},"ui_context":{"cwd":"/home/kousw/cospace/codelia"}}
{"type":"llm.request","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:01.000Z","seq":1,"model":{"provider":"openai","name":"gpt-4.1-mini"},"input":{"messages":[{"role":"system","content":"You are a coding assistant.","message_ts":"2026-02-03T12:00:00.123Z"},{"role":"user","content":"list files","message_ts":"2026-02-03T12:00:00.456Z"}],"tools":[{"type":"function","function":{"name":"exec_command","description":"Runs a command in a PTY.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}}],"tool_choice":null,"model":"gpt-4.1-mini"}}
{"type":"llm.response","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.100Z","seq":1,"output":{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\":\"ls\"}"}}]}],"usage":{"model":"gpt-4.1-mini","input_tokens":120,"output_tokens":15,"total_tokens":135},"stop_reason":"tool_use"}}
{"type":"agent.event","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.150Z","seq":0,"event":{"type":"tool_call","tool":"exec_command","args":{"cmd":"ls"},"tool_call_id":"call_1"}}
{"type":"tool.output","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.600Z","tool":"exec_command","tool_call_id":"call_1","result_raw":"AGENTS.md\nRULES.md\npackages\n","output_ref":{"id":"call_1","byte_size":33,"line_count":3}}
{"type":"agent.event","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.700Z","seq":1,"event":{"type":"final","content":"Here are the files: AGENTS.md, RULES.md, packages."}}
{"type":"run.status","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.750Z","status":"completed"}
{"type":"run.end","run_id":"8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a","ts":"2026-02-03T12:00:02.800Z","outcome":"completed","final":"Here are the files: AGENTS.md, RULES.md, packages."}
`

// RunlogSpecState is the session state example of the run log spec, section 7.
const RunlogSpecState = `{
  "schema_version": 1,
  "session_id": "f6d2c6d5-4a12-4cc4-bbc9-9a0c0d2b5af1",
  "updated_at": "2026-02-03T12:00:02.900Z",
  "run_id": "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a",
  "invoke_seq": 1,
  "messages": [
    { "role": "system", "content": "You are a coding assistant." },
    { "role": "user", "content": "list files" },
    { "role": "assistant", "content": "Here are the files: AGENTS.md, RULES.md, packages." }
  ]
}
`

const (
	runlogExampleID   = "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a"
	runlogExamplePath = "runs/2026/02/03/" + runlogExampleID + ".jsonl"
)

// TestRunlog checks the run log layer (package runlog) on the
// backends newBackend makes: fresh and empty on each call, cleaned up by the
// constructor. Subtest names are stable: TestRunlog/<group>/<case>. Crash
// cases run only on a backend.Crasher.
func TestRunlog(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	groups := []struct {
		name string
		run  func(x *runlogSuite, t *testing.T)
	}{
		{"Example", (*runlogSuite).example},
		{"RoundTrip", (*runlogSuite).roundTrip},
		{"Order", (*runlogSuite).order},
		{"ToolOutput", (*runlogSuite).toolOutput},
		{"ForwardCompat", (*runlogSuite).forwardCompat},
		{"Lenient", (*runlogSuite).lenient},
		{"TornAtEveryByte", (*runlogSuite).tornAtEveryByte},
		{"Crash", (*runlogSuite).crash},
		{"Index", (*runlogSuite).index},
		{"Summary", (*runlogSuite).summary},
		{"State", (*runlogSuite).state},
		{"Hostile", (*runlogSuite).hostile},
		{"Faults", (*runlogSuite).faults},
		{"Concurrent", (*runlogSuite).concurrent},
		{"Context", (*runlogSuite).context},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			g.run(&runlogSuite{newBackend: newBackend}, t)
		})
	}
}

type runlogSuite struct {
	newBackend func(tb testing.TB) backend.Storage
}

var runlogCtx = context.Background()

func (x *runlogSuite) must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// clock is a fixed clock stepping 10ms per call, so timestamps are stable.
func (x *runlogSuite) clock() runlog.Option {
	var mu sync.Mutex
	t := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	return runlog.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(10 * time.Millisecond)
		return t
	})
}

// open returns a run log store on st with a cas blob store on the same
// backend, as one trove root has.
func (x *runlogSuite) open(tb testing.TB, st backend.Storage, opts ...runlog.Option) *runlog.Store {
	tb.Helper()
	blobs, err := cas.Open(runlogCtx, st)
	x.must(tb, err)
	s, err := runlog.New(st, append([]runlog.Option{runlog.WithBlobs(blobs), x.clock()}, opts...)...)
	x.must(tb, err)
	return s
}

func (x *runlogSuite) fresh(tb testing.TB, opts ...runlog.Option) (backend.Storage, *runlog.Store) {
	st := x.newBackend(tb)
	return st, x.open(tb, st, opts...)
}

func (x *runlogSuite) write(tb testing.TB, st backend.Storage, name, data string) {
	tb.Helper()
	x.must(tb, st.WriteFile(runlogCtx, name, []byte(data)))
}

func (x *runlogSuite) read(tb testing.TB, st backend.Storage, name string) string {
	tb.Helper()
	data, err := st.ReadFile(runlogCtx, name)
	x.must(tb, err)
	return string(data)
}

// entries collects a run's records; per-line errors are returned beside.
func (x *runlogSuite) entries(tb testing.TB, s *runlog.Store, id string, opts ...runlog.ReadOption) ([]runlog.Entry, []error) {
	tb.Helper()
	var out []runlog.Entry
	var errs []error
	for e, err := range s.Records(runlogCtx, id, opts...) {
		if err != nil {
			if !errors.Is(err, runlog.ErrCorrupt) && !errors.Is(err, runlog.ErrBlob) {
				tb.Fatalf("Records(%s): %v", id, err)
			}
			errs = append(errs, err)
			if e.Record == nil {
				continue
			}
		}
		out = append(out, e)
	}
	return out, errs
}

func (x *runlogSuite) load(tb testing.TB, s *runlog.Store, id string) *runlog.Run {
	tb.Helper()
	run, err := s.Load(runlogCtx, id)
	x.must(tb, err)
	return run
}

// jsonEqual reports whether a and b hold equal JSON values.
func jsonEqual(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		tb.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		tb.Fatalf("not JSON: %v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

var tsRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// example: the run log spec's section 7 parses record for record and writes back to
// equal JSON objects, typed and raw.
func (x *runlogSuite) example(t *testing.T) {
	want := lines(RunlogSpecExample)
	types := []string{"header", "run.start", "llm.request", "llm.response", "agent.event", "tool.output", "agent.event", "run.status", "run.end"}

	t.Run("Parse", func(t *testing.T) {
		st, s := x.fresh(t)
		x.write(t, st, runlogExamplePath, RunlogSpecExample)
		got, errs := x.entries(t, s, runlogExampleID)
		if len(errs) > 0 {
			t.Fatalf("errors reading the example: %v", errs)
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i, e := range got {
			if e.Line != i+1 || e.Type != types[i] || e.Record == nil || e.Record.RecordType() != types[i] {
				t.Errorf("record %d: line %d type %q (%T), want line %d type %q", i, e.Line, e.Type, e.Record, i+1, types[i])
			}
			if string(e.Raw) != want[i] {
				t.Errorf("record %d: raw\n%s\nwant\n%s", i, e.Raw, want[i])
			}
			typed, err := json.Marshal(e.Record)
			x.must(t, err)
			if !jsonEqual(t, typed, []byte(want[i])) {
				t.Errorf("record %d: typed value marshals to\n%s\nwant an object equal to\n%s", i, typed, want[i])
			}
		}
		h := got[0].Record.(*runlog.Header)
		if h.SchemaVersion != 1 || h.RunID != runlogExampleID || h.Client.Name != "tui" || h.Model.Reasoning != "medium" ||
			h.Prompts.System != "You are a coding assistant." || h.StartedAt.UnixMilli() != time.Date(2026, 2, 3, 12, 0, 0, 123e6, time.UTC).UnixMilli() {
			t.Errorf("header: %+v", h)
		}
		rs := got[1].Record.(*runlog.RunStart)
		if rs.Input.Type != "text" || rs.Input.Text != "list files" || !jsonEqual(t, rs.UIContext, []byte(`{"cwd":"/home/kousw/cospace/codelia"}`)) {
			t.Errorf("run.start: %+v", rs)
		}
		req := got[2].Record.(*runlog.LLMRequest)
		resp := got[3].Record.(*runlog.LLMResponse)
		if req.Seq != 1 || resp.Seq != req.Seq || len(req.Input.Messages) != 2 || req.Input.Model != "gpt-4.1-mini" || string(req.Input.ToolChoice) != "null" {
			t.Errorf("llm.request: %+v", req)
		}
		if u := resp.Output.Usage; u == nil || u.InputTokens != 120 || u.OutputTokens != 15 || u.TotalTokens != 135 || resp.Output.StopReason != "tool_use" {
			t.Errorf("llm.response: %+v", resp.Output)
		}
		ev0, ev1 := got[4].Record.(*runlog.AgentEvent), got[6].Record.(*runlog.AgentEvent)
		if ev0.Seq != 0 || ev1.Seq != 1 || ev0.EventType() != "tool_call" || ev1.EventType() != "final" {
			t.Errorf("agent.event: seq %d %q, seq %d %q", ev0.Seq, ev0.EventType(), ev1.Seq, ev1.EventType())
		}
		to := got[5].Record.(*runlog.ToolOutput)
		if to.ResultRaw != "AGENTS.md\nRULES.md\npackages\n" || to.OutputRef == nil || to.OutputRef.ID != "call_1" ||
			to.OutputRef.ByteSize != 33 || to.OutputRef.LineCount != 3 || to.Resolved() {
			t.Errorf("tool.output: %+v %+v", to, to.OutputRef)
		}
		if rs := got[7].Record.(*runlog.RunStatus); rs.Status != runlog.StatusCompleted {
			t.Errorf("run.status: %q", rs.Status)
		}
		if end := got[8].Record.(*runlog.RunEnd); end.Outcome != runlog.OutcomeCompleted || !strings.HasPrefix(end.Final, "Here are") {
			t.Errorf("run.end: %+v", end)
		}
	})

	// writeBack copies the example through a Writer, typed or raw.
	writeBack := func(t *testing.T, raw bool) string {
		st, s := x.fresh(t)
		x.write(t, st, runlogExamplePath, RunlogSpecExample)
		got, _ := x.entries(t, s, runlogExampleID)
		st2, s2 := x.fresh(t)
		var w *runlog.Writer
		var err error
		if raw {
			w, err = s2.CreateRaw(runlogCtx, got[0].Raw)
		} else {
			h := *got[0].Record.(*runlog.Header)
			w, err = s2.Create(runlogCtx, &h)
		}
		x.must(t, err)
		for _, e := range got[1:] {
			if raw {
				x.must(t, w.AppendRaw(runlogCtx, e.Raw))
			} else {
				x.must(t, w.Append(runlogCtx, e.Record))
			}
		}
		x.must(t, w.Close())
		if w.Path() != runlogExamplePath {
			t.Errorf("written at %s, want %s", w.Path(), runlogExamplePath)
		}
		return x.read(t, st2, runlogExamplePath)
	}
	t.Run("WriteBackTyped", func(t *testing.T) {
		out := lines(writeBack(t, false))
		if len(out) != len(want) {
			t.Fatalf("%d lines written back, want %d", len(out), len(want))
		}
		for i := range want {
			if !jsonEqual(t, []byte(out[i]), []byte(want[i])) {
				t.Errorf("line %d:\n%s\nwant an object equal to\n%s", i+1, out[i], want[i])
			}
		}
	})
	t.Run("WriteBackRaw", func(t *testing.T) {
		if out := writeBack(t, true); out != RunlogSpecExample {
			t.Errorf("raw write-back differs:\n%s\nwant\n%s", out, RunlogSpecExample)
		}
	})
	t.Run("Summary", func(t *testing.T) {
		st, s := x.fresh(t)
		x.write(t, st, runlogExamplePath, RunlogSpecExample)
		sum, err := s.Summary(runlogCtx, runlogExampleID)
		x.must(t, err)
		if sum.Status != "completed" || !sum.Complete || sum.DurationMS != 2677 || sum.LLMCalls != 1 || sum.LLMResponses != 1 ||
			sum.LLMUnanswered != 0 || sum.Tokens.Input != 120 || sum.Tokens.Output != 15 || sum.Tokens.Total != 135 ||
			sum.ToolCalls != 1 || sum.AgentEvents != 2 || sum.Errors != 0 || sum.Records != 9 || sum.Model != "openai/gpt-4.1-mini" ||
			sum.Input != "list files" || sum.LastStatus != "completed" || sum.Path != runlogExamplePath || sum.SchemaVersion != 1 {
			t.Errorf("summary: %+v", sum)
		}
	})
	t.Run("State", func(t *testing.T) {
		st, s := x.fresh(t)
		const id = "f6d2c6d5-4a12-4cc4-bbc9-9a0c0d2b5af1"
		x.write(t, st, "state/"+id+".json", RunlogSpecState)
		got, err := s.LoadState(runlogCtx, id)
		x.must(t, err)
		if got.SchemaVersion != 1 || got.SessionID != id || got.RunID != runlogExampleID || got.InvokeSeq != 1 || len(got.Messages) != 3 ||
			got.UpdatedAt.UnixMilli() != time.Date(2026, 2, 3, 12, 0, 2, 900e6, time.UTC).UnixMilli() {
			t.Errorf("state: %+v", got)
		}
		st2, s2 := x.fresh(t)
		x.must(t, s2.SaveState(runlogCtx, got))
		if out := x.read(t, st2, "state/"+id+".json"); !jsonEqual(t, []byte(out), []byte(RunlogSpecState)) {
			t.Errorf("state written back:\n%s\nwant an object equal to\n%s", out, RunlogSpecState)
		}
	})
}

// fullRun writes one run with every record type and returns the records
// as appended.
func (x *runlogSuite) fullRun(t testing.TB, s *runlog.Store, h *runlog.Header) (*runlog.Writer, []runlog.Record) {
	w, err := s.Create(runlogCtx, h)
	x.must(t, err)
	cached := int64(7)
	recs := []runlog.Record{
		&runlog.RunStart{Input: runlog.Input{Type: "text", Text: "fix <the> & bug"}, UIContext: json.RawMessage(`{"cwd":"/w"}`), Meta: json.RawMessage(`{"k":1}`)},
		&runlog.RunContext{ContextLeftPercent: 87.5},
		&runlog.LLMRequest{Seq: 1, Model: &runlog.Model{Provider: "p", Name: "m"}, Input: runlog.LLMInput{
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`)}, Tools: json.RawMessage(`[]`), ToolChoice: json.RawMessage(`"auto"`), Model: "m"}},
		&runlog.AgentEvent{Seq: 0, Event: json.RawMessage(`{"type":"text","content":"x"}`)},
		&runlog.LLMResponse{Seq: 1, Output: runlog.LLMOutput{Messages: []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"ok"}`)},
			Usage:        &runlog.Usage{Model: "m", InputTokens: 10, InputCachedTokens: &cached, OutputTokens: 5, TotalTokens: 15},
			StopReason:   "end_turn",
			ProviderMeta: json.RawMessage(`{"id":"r1"}`)}},
		&runlog.ToolOutput{Tool: "sh", ToolCallID: "c1", ResultRaw: "line1\nline2\n", IsError: true},
		&runlog.RunStatus{Status: runlog.StatusAwaitingUI, Message: "waiting"},
		&runlog.RunError{Error: runlog.ErrorInfo{Name: "E", Message: "boom", Stack: "at x"}},
		&runlog.AgentEvent{Seq: 1, Event: json.RawMessage(`{"type":"final"}`)},
		&runlog.RunEnd{Outcome: runlog.OutcomeError, Final: "done"},
	}
	for _, r := range recs {
		x.must(t, w.Append(runlogCtx, r))
	}
	return w, recs
}

func (x *runlogSuite) roundTrip(t *testing.T) {
	t.Run("EveryType", func(t *testing.T) {
		st, s := x.fresh(t)
		h := &runlog.Header{SessionID: "sess-1", Client: &runlog.Software{Name: "c", Version: "1"},
			Tools:   &runlog.Tools{Definitions: []json.RawMessage{json.RawMessage(`{"name":"sh"}`)}, Source: "builtin"},
			Runtime: &runlog.Runtime{Cwd: "/w", OS: "linux", Arch: "amd64"}, Meta: json.RawMessage(`{"a":[1,2]}`)}
		w, recs := x.fullRun(t, s, h)
		x.must(t, w.Close())
		if h.RunID == "" || h.SchemaVersion != 1 || h.StartedAt.IsZero() {
			t.Fatalf("Create did not fill the header: %+v", h)
		}
		if want := runlog.RunPath(h.RunID, h.StartedAt.Time); w.Path() != want {
			t.Errorf("path %s, want %s", w.Path(), want)
		}
		got, errs := x.entries(t, s, h.RunID)
		if len(errs) > 0 || len(got) != len(recs)+1 {
			t.Fatalf("read %d records (errors %v), want %d", len(got), errs, len(recs)+1)
		}
		if !reflect.DeepEqual(got[0].Record, h) {
			t.Errorf("header read back\n%+v\nwant\n%+v", got[0].Record, h)
		}
		for i, r := range recs {
			e := got[i+1]
			if !reflect.DeepEqual(e.Record, r) {
				t.Errorf("record %d (%s) read back\n%+v\nwant\n%+v", i+1, r.RecordType(), e.Record, r)
			}
			var m map[string]any
			x.must(t, json.Unmarshal(e.Raw, &m))
			if ts, _ := m["ts"].(string); !tsRe.MatchString(ts) {
				t.Errorf("record %d: ts %q is not RFC 3339 UTC with milliseconds", i+1, ts)
			}
			if m["run_id"] != h.RunID {
				t.Errorf("record %d: run_id %v, want %s", i+1, m["run_id"], h.RunID)
			}
		}
		if rs := got[1].Record.(*runlog.RunStart); rs.SessionID != "sess-1" {
			t.Errorf("run.start session_id %q, want the header's", rs.SessionID)
		}
		if !strings.Contains(x.read(t, st, w.Path()), "fix <the> & bug") {
			t.Errorf("<, > and & escaped in the file; they should be written as they are")
		}
	})
	t.Run("UTCDate", func(t *testing.T) {
		st, s := x.fresh(t)
		// 02:30 at +05:00 on March 1st is February 28th in UTC.
		at := time.Date(2026, 3, 1, 2, 30, 0, 0, time.FixedZone("X", 5*3600))
		h := &runlog.Header{RunID: "r-utc", StartedAt: runlog.TimeOf(at)}
		w, err := s.Create(runlogCtx, h)
		x.must(t, err)
		x.must(t, w.Close())
		if w.Path() != "runs/2026/02/28/r-utc.jsonl" {
			t.Errorf("path %s, want runs/2026/02/28/r-utc.jsonl", w.Path())
		}
		if first := lines(x.read(t, st, w.Path()))[0]; !strings.Contains(first, `"started_at":"2026-02-28T21:30:00.000Z"`) {
			t.Errorf("header %s: started_at not in UTC with milliseconds", first)
		}
	})
	t.Run("Exists", func(t *testing.T) {
		_, s := x.fresh(t)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "dup"})
		x.must(t, err)
		x.must(t, w.Close())
		_, err = s.Create(runlogCtx, &runlog.Header{RunID: "dup"})
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("second Create of one run id: %v, want fs.ErrExist", err)
		}
	})
	t.Run("Helpers", func(t *testing.T) {
		_, s := x.fresh(t)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "helpers"})
		x.must(t, err)
		for i := range 3 {
			seq, err := w.Event(runlogCtx, map[string]any{"type": "delta", "i": i})
			x.must(t, err)
			if seq != int64(i) {
				t.Errorf("Event %d got seq %d", i, seq)
			}
		}
		for i := 1; i <= 2; i++ {
			seq, err := w.Request(runlogCtx, &runlog.LLMRequest{})
			x.must(t, err)
			if seq != int64(i) {
				t.Errorf("Request %d got seq %d, want %d (invocations count from 1)", i, seq, i)
			}
			x.must(t, w.Append(runlogCtx, &runlog.LLMResponse{Seq: seq}))
		}
		x.must(t, w.Close())
		got, _ := x.entries(t, s, "helpers")
		if len(got) != 8 {
			t.Fatalf("%d records, want 8", len(got))
		}
		if req := got[4].Record.(*runlog.LLMRequest); req.Input.Messages == nil || !strings.Contains(string(got[4].Raw), `"messages":[]`) {
			t.Errorf("llm.request without messages should write messages: [], got %s", got[4].Raw)
		}
	})
}

func (x *runlogSuite) order(t *testing.T) {
	st, s := x.fresh(t)
	w, err := s.Create(runlogCtx, &runlog.Header{RunID: "order"})
	x.must(t, err)
	size := func() int64 {
		x.must(t, w.Sync(runlogCtx))
		fi, err := st.Stat(runlogCtx, w.Path())
		x.must(t, err)
		return fi.Size
	}
	refused := func(name string, rec runlog.Record, want error) {
		t.Helper()
		before := size()
		if err := w.Append(runlogCtx, rec); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if after := size(); after != before {
			t.Errorf("%s: refused record changed the file (%d -> %d bytes)", name, before, after)
		}
	}
	x.must(t, w.Append(runlogCtx, &runlog.AgentEvent{Seq: 0}))
	x.must(t, w.Append(runlogCtx, &runlog.AgentEvent{Seq: 5}))
	refused("agent.event seq repeated", &runlog.AgentEvent{Seq: 5}, runlog.ErrOrder)
	refused("agent.event seq going back", &runlog.AgentEvent{Seq: 3}, runlog.ErrOrder)
	if seq, err := w.Event(runlogCtx, json.RawMessage(`{"type":"x"}`)); err != nil || seq != 6 {
		t.Errorf("Event after seq 5: %d, %v; want 6", seq, err)
	}
	refused("llm.response without request", &runlog.LLMResponse{Seq: 1}, runlog.ErrOrder)
	x.must(t, w.Append(runlogCtx, &runlog.LLMRequest{Seq: 1}))
	x.must(t, w.Append(runlogCtx, &runlog.LLMRequest{Seq: 2}))
	refused("llm.request seq repeated", &runlog.LLMRequest{Seq: 2}, runlog.ErrOrder)
	// Parallel invocations may answer out of order; each answer once.
	x.must(t, w.Append(runlogCtx, &runlog.LLMResponse{Seq: 2}))
	x.must(t, w.Append(runlogCtx, &runlog.LLMResponse{Seq: 1}))
	refused("llm.response twice", &runlog.LLMResponse{Seq: 1}, runlog.ErrOrder)
	refused("record of another run", &runlog.RunStatus{Base: runlog.Base{RunID: "other"}, Status: "running"}, runlog.ErrInvalid)
	refused("second header", &runlog.Header{RunID: "order"}, runlog.ErrInvalid)
	refused("nil", nil, runlog.ErrInvalid)
	if err := w.AppendRaw(runlogCtx, []byte(`{"type":"agent.event","seq":1,"event":{}}`)); !errors.Is(err, runlog.ErrOrder) {
		t.Errorf("raw agent.event going back: %v, want ErrOrder", err)
	}
	if err := w.AppendRaw(runlogCtx, []byte(`[1,2]`)); !errors.Is(err, runlog.ErrInvalid) {
		t.Errorf("raw array: %v, want ErrInvalid", err)
	}
	x.must(t, w.Append(runlogCtx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted}))
	refused("record after run.end", &runlog.RunStatus{Status: "running"}, runlog.ErrOrder)
	x.must(t, w.Close())
	if err := w.Append(runlogCtx, &runlog.RunStatus{Status: "running"}); !errors.Is(err, runlog.ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	x.must(t, w.Close()) // twice is fine

	// What is on disk keeps the order the writer enforced.
	got, errs := x.entries(t, s, "order")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	last := int64(-1)
	open := map[int64]bool{}
	for _, e := range got {
		switch r := e.Record.(type) {
		case *runlog.AgentEvent:
			if r.Seq <= last {
				t.Errorf("agent.event seq %d after %d", r.Seq, last)
			}
			last = r.Seq
		case *runlog.LLMRequest:
			open[r.Seq] = true
		case *runlog.LLMResponse:
			if !open[r.Seq] {
				t.Errorf("llm.response %d without an earlier request", r.Seq)
			}
			delete(open, r.Seq)
		}
	}
	if got[len(got)-1].Type != runlog.TypeRunEnd {
		t.Errorf("last record %s, want run.end", got[len(got)-1].Type)
	}
}

// lineText is n bytes of text in lines of 100 bytes.
func lineText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%-99d\n", i)
	}
	return b.String()[:n]
}

func (x *runlogSuite) toolOutput(t *testing.T) {
	const threshold = 1024
	big := lineText(100 << 10) // 1024 lines of 100 bytes
	sum := sha256.Sum256([]byte(big))
	wantRef := "blob:sha256:" + hex.EncodeToString(sum[:])

	t.Run("Inline", func(t *testing.T) {
		st, s := x.fresh(t, runlog.WithOutputThreshold(threshold))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "inline"})
		x.must(t, err)
		small := strings.Repeat("x", threshold)
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "c", ResultRaw: small}))
		x.must(t, w.Close())
		if !strings.Contains(x.read(t, st, w.Path()), `"result_raw":"`+small+`"`) || strings.Contains(x.read(t, st, w.Path()), "output_ref") {
			t.Errorf("an output of exactly the threshold should stay inline")
		}
	})

	t.Run("Externalized", func(t *testing.T) {
		st, s := x.fresh(t, runlog.WithOutputThreshold(threshold))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "ext"})
		x.must(t, err)
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "cat", ToolCallID: "c1", ResultRaw: big}))
		x.must(t, w.Close())
		raw := lines(x.read(t, st, w.Path()))[1]
		if len(raw) > 2*threshold {
			t.Errorf("externalized output left a %d-byte line", len(raw))
		}
		var onDisk struct {
			ResultRaw string           `json:"result_raw"`
			OutputRef runlog.OutputRef `json:"output_ref"`
		}
		x.must(t, json.Unmarshal([]byte(raw), &onDisk))
		if onDisk.OutputRef != (runlog.OutputRef{ID: wantRef, ByteSize: int64(len(big)), LineCount: 1024}) {
			t.Errorf("output_ref %+v, want id %s, byte_size %d, line_count 1024", onDisk.OutputRef, wantRef, len(big))
		}
		if !strings.Contains(onDisk.ResultRaw, wantRef) {
			t.Errorf("result_raw on disk %q should name the ref", onDisk.ResultRaw)
		}
		got, errs := x.entries(t, s, "ext")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		to := got[1].Record.(*runlog.ToolOutput)
		if to.ResultRaw != big || !to.Resolved() {
			t.Errorf("resolved output: %d bytes (resolved %v), want %d", len(to.ResultRaw), to.Resolved(), len(big))
		}
		if string(got[1].Raw) != raw {
			t.Errorf("Raw should stay the line as on disk")
		}
		un, _ := x.entries(t, s, "ext", runlog.Unresolved())
		uto := un[1].Record.(*runlog.ToolOutput)
		if uto.ResultRaw != onDisk.ResultRaw || uto.Resolved() {
			t.Errorf("Unresolved read should keep the notice")
		}
		rc, err := s.OpenOutput(runlogCtx, uto)
		x.must(t, err)
		streamed, err := io.ReadAll(rc)
		x.must(t, err)
		x.must(t, rc.Close())
		if string(streamed) != big {
			t.Errorf("OpenOutput streamed %d bytes, want %d", len(streamed), len(big))
		}

		// A resolved record written back gives the same line.
		_, s2 := x.fresh(t, runlog.WithOutputThreshold(threshold))
		w2, err := s2.CreateRaw(runlogCtx, got[0].Raw)
		x.must(t, err)
		x.must(t, w2.Append(runlogCtx, to))
		x.must(t, w2.Close())
		back, _ := x.entries(t, s2, "ext", runlog.Unresolved())
		if !jsonEqual(t, back[1].Raw, []byte(raw)) {
			t.Errorf("resolved output written back:\n%s\nwant\n%s", back[1].Raw, raw)
		}
	})

	t.Run("Stream", func(t *testing.T) {
		st, s := x.fresh(t, runlog.WithOutputThreshold(threshold))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "stream"})
		x.must(t, err)
		huge := lineText(3<<20) + "no newline at the end"
		x.must(t, w.ToolOutputFrom(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "big"}, strings.NewReader(huge)))
		x.must(t, w.ToolOutputFrom(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "small"}, strings.NewReader("a\nb")))
		x.must(t, w.ToolOutputFrom(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "empty"}, strings.NewReader("")))
		x.must(t, w.Close())
		got, errs := x.entries(t, s, "stream")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		b := got[1].Record.(*runlog.ToolOutput)
		if b.ResultRaw != huge || b.OutputRef == nil || b.OutputRef.ByteSize != int64(len(huge)) || b.OutputRef.LineCount != int64(strings.Count(huge, "\n")+1) {
			t.Errorf("streamed output: %d bytes, ref %+v", len(b.ResultRaw), b.OutputRef)
		}
		if sm := got[2].Record.(*runlog.ToolOutput); sm.ResultRaw != "a\nb" || sm.OutputRef != nil {
			t.Errorf("small streamed output should be inline: %+v", sm)
		}
		if em := got[3].Record.(*runlog.ToolOutput); em.ResultRaw != "" || em.OutputRef != nil || !strings.Contains(string(got[3].Raw), `"result_raw":""`) {
			t.Errorf("empty output: %s", got[3].Raw)
		}
		if fi, err := st.Stat(runlogCtx, w.Path()); err == nil && fi.Size > 16<<10 {
			t.Errorf("run file is %d bytes: the streamed output went inline", fi.Size)
		}
	})

	t.Run("NoBlobStore", func(t *testing.T) {
		st := x.newBackend(t)
		s, err := runlog.New(st, runlog.WithOutputThreshold(threshold), x.clock())
		x.must(t, err)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "noblobs"})
		x.must(t, err)
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "c", ResultRaw: big}))
		x.must(t, w.ToolOutputFrom(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "d"}, strings.NewReader(big)))
		x.must(t, w.Close())
		got, _ := x.entries(t, s, "noblobs")
		for _, e := range got[1:] {
			if to := e.Record.(*runlog.ToolOutput); to.ResultRaw != big || to.OutputRef != nil {
				t.Errorf("without a blob store the full output stays inline; got %d bytes, ref %+v", len(to.ResultRaw), to.OutputRef)
			}
		}
	})

	t.Run("MissingBlob", func(t *testing.T) {
		st, s := x.fresh(t, runlog.WithOutputThreshold(threshold))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "gone"})
		x.must(t, err)
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "c", ResultRaw: big}))
		x.must(t, w.Append(runlogCtx, &runlog.RunEnd{Outcome: "completed"}))
		x.must(t, w.Close())
		x.must(t, backend.RemoveAll(runlogCtx, st, "blobs"))
		got, errs := x.entries(t, s, "gone")
		if len(errs) != 1 || !errors.Is(errs[0], runlog.ErrBlob) || !strings.Contains(errs[0].Error(), w.Path()) {
			t.Fatalf("errors %v, want one ErrBlob naming %s", errs, w.Path())
		}
		if len(got) != 3 || got[2].Type != runlog.TypeRunEnd {
			t.Errorf("reading should go on after a missing blob: %d records", len(got))
		}
		if to := got[1].Record.(*runlog.ToolOutput); to.Resolved() || !strings.Contains(to.ResultRaw, wantRef) {
			t.Errorf("unresolvable output should keep its notice, got %q", to.ResultRaw)
		}
	})
}

func (x *runlogSuite) forwardCompat(t *testing.T) {
	const id = "fc-1"
	const path = "runs/2026/02/03/" + id + ".jsonl"
	file := `{"type":"header","schema_version":2,"run_id":"fc-1","session_id":"s","started_at":"2026-02-03T12:00:00.000Z","model":{"name":"m","temperature":0.2},"future":{"x":[1]}}
{"type":"run.start","run_id":"fc-1","ts":"2026-02-03T12:00:00.100Z","input":{"type":"image","text":"","url":"u"},"new_field":true}
{"type":"x.acme.note","run_id":"fc-1","ts":"2026-02-03T12:00:00.200Z","note":"custom"}
{"type":"run.pause","run_id":"fc-1","ts":"2026-02-03T12:00:00.300Z"}
{"type":"run.status","run_id":"fc-1","ts":"2026-02-03T12:00:00.400Z","status":"paused","meta":{"why":"user"}}
{"type":"agent.event","run_id":"fc-1","ts":"2026-02-03T12:00:00.500Z","seq":0,"event":{"type":"hologram"},"priority":9}
{"type":"run.end","run_id":"fc-1","ts":"2026-02-03T12:00:01.000Z","outcome":"exploded"}
`
	st, s := x.fresh(t)
	x.write(t, st, path, file)
	got, errs := x.entries(t, s, id)
	if len(errs) > 0 {
		t.Fatalf("forward-compatible content gave errors: %v", errs)
	}
	want := lines(file)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, e := range got {
		if string(e.Raw) != want[i] {
			t.Errorf("line %d raw not kept", i+1)
		}
	}
	for _, i := range []int{2, 3} {
		u, ok := got[i].Record.(*runlog.Unknown)
		if !ok || u.Type != got[i].Type || string(u.Raw) != want[i] {
			t.Errorf("line %d: %T, want *runlog.Unknown with its raw JSON", i+1, got[i].Record)
		}
	}
	if st := got[4].Record.(*runlog.RunStatus); st.Status != "paused" {
		t.Errorf("unknown status read as %q", st.Status)
	}
	if end := got[6].Record.(*runlog.RunEnd); end.Outcome != "exploded" {
		t.Errorf("unknown outcome read as %q", end.Outcome)
	}
	sum, err := s.Summary(runlogCtx, id)
	x.must(t, err)
	if sum.Status != "exploded" || !sum.Complete || sum.UnknownRecords != 2 || sum.SchemaVersion != 2 || sum.LastStatus != "paused" || sum.CorruptLines != 0 {
		t.Errorf("summary: %+v", sum)
	}
	// Raw write-back keeps everything, unknown header fields included.
	st2, s2 := x.fresh(t)
	w, err := s2.CreateRaw(runlogCtx, got[0].Raw)
	x.must(t, err)
	for _, e := range got[1:] {
		x.must(t, w.Append(runlogCtx, e.Record))
	}
	x.must(t, w.Close())
	back := lines(x.read(t, st2, path))
	for i := range want {
		if i == 0 || i == 2 || i == 3 {
			if back[i] != want[i] {
				t.Errorf("line %d written back as\n%s\nwant\n%s", i+1, back[i], want[i])
			}
		}
	}
}

func (x *runlogSuite) lenient(t *testing.T) {
	const id = "len-1"
	const path = "runs/2026/02/03/" + id + ".jsonl"
	head := `{"type":"header","schema_version":1,"run_id":"len-1","started_at":"2026-02-03T12:00:00.000Z"}` + "\n"
	status := `{"type":"run.status","run_id":"len-1","ts":"2026-02-03T12:00:01.000Z","status":"running"}` + "\n"
	cases := []struct {
		name      string
		body      string
		records   int
		corrupt   int
		torn      bool
		hasHeader bool
	}{
		{"TornLastLine", head + status + `{"type":"run.status","run_id":"len-1","ts":"2026-02-0`, 2, 0, true, true},
		{"GarbageLine", head + "not json at all\n" + status, 2, 1, false, true},
		{"BlankLines", head + "\n   \n\r\n" + status + "\n", 2, 0, false, true},
		{"WrongFieldType", head + `{"type":"agent.event","run_id":"len-1","ts":"2026-02-03T12:00:01.000Z","seq":"one","event":{}}` + "\n" + status, 2, 1, false, true},
		{"ArrayLine", head + "[1,2,3]\n" + status, 2, 1, false, true},
		{"NoType", head + `{"run_id":"len-1"}` + "\n" + status, 2, 1, false, true},
		{"NumberType", head + `{"type":7}` + "\n" + status, 2, 1, false, true},
		{"BadTimestamp", head + `{"type":"run.status","run_id":"len-1","ts":"yesterday","status":"running"}` + "\n", 2, 0, false, true},
		{"NoHeader", status + status, 2, 0, false, false},
		{"TornHeader", head[:40], 0, 0, true, false},
		{"Empty", "", 0, 0, false, false},
		{"CompleteLastLineWithoutNewline", head + strings.TrimSuffix(status, "\n"), 2, 0, false, true},
		{"Deep", head + strings.Repeat("[", 100000) + "\n" + status, 2, 1, false, true},
		{"InvalidUTF8", head + "{\"type\":\"run.status\",\"run_id\":\"len-1\",\"ts\":\"2026-02-03T12:00:01.000Z\",\"status\":\"\xff\"}\n", 2, 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, s := x.fresh(t)
			x.write(t, st, path, c.body)
			run := x.load(t, s, id)
			if len(run.Entries) != c.records || run.Summary.CorruptLines != c.corrupt || run.Torn != c.torn || (run.Header != nil) != c.hasHeader {
				t.Errorf("records %d corrupt %d torn %v header %v; want %d %d %v %v (problems %v)",
					len(run.Entries), run.Summary.CorruptLines, run.Torn, run.Header != nil, c.records, c.corrupt, c.torn, c.hasHeader, run.Problems)
			}
			for _, p := range run.Problems {
				if !errors.Is(p, runlog.ErrCorrupt) || !strings.Contains(p.Error(), path) {
					t.Errorf("problem %v should wrap ErrCorrupt and name %s", p, path)
				}
			}
			if run.Summary.Status != runlog.StatusIncomplete || run.Summary.RunID != id {
				t.Errorf("summary status %q run %q, want incomplete %s", run.Summary.Status, run.Summary.RunID, id)
			}
			if c.corrupt > 0 {
				n := 0
				for _, err := range s.Records(runlogCtx, id) {
					if err != nil {
						if !errors.Is(err, runlog.ErrCorrupt) {
							t.Fatalf("Records: %v", err)
						}
						n++
					}
				}
				if n != c.corrupt {
					t.Errorf("Records yielded %d ErrCorrupt errors, want %d", n, c.corrupt)
				}
			}
		})
	}
	t.Run("LineTooLong", func(t *testing.T) {
		st, s := x.fresh(t, runlog.WithMaxLine(1024))
		long := `{"type":"run.status","run_id":"len-1","ts":"2026-02-03T12:00:01.000Z","status":"running","message":"` + strings.Repeat("m", 5000) + `"}` + "\n"
		x.write(t, st, path, head+long+status)
		run := x.load(t, s, id)
		if len(run.Entries) != 2 || run.Summary.CorruptLines != 1 {
			t.Errorf("records %d corrupt %d, want 2 and 1", len(run.Entries), run.Summary.CorruptLines)
		}
		if len(run.Entries) == 2 && run.Entries[1].Line != 3 {
			t.Errorf("line numbers should count the skipped line: got %d, want 3", run.Entries[1].Line)
		}
	})
}

func (x *runlogSuite) tornAtEveryByte(t *testing.T) {
	want := lines(RunlogSpecExample)
	st, s := x.fresh(t)
	full := RunlogSpecExample
	for _, n := range tornCuts(st, full) {
		if n == len(full) {
			continue
		}
		if testing.Short() && n%7 != 0 {
			continue
		}
		x.write(t, st, runlogExamplePath, full[:n])
		run, err := s.Load(runlogCtx, runlogExampleID)
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		complete := strings.Count(full[:n], "\n")
		wantN := complete
		if rest := full[strings.LastIndex(full[:n], "\n")+1 : n]; rest != "" && json.Valid([]byte(rest)) {
			wantN++ // cut exactly before a newline: the line is whole
		}
		if len(run.Entries) != wantN || len(run.Problems) > 1 {
			t.Fatalf("cut at %d: %d records (problems %v), want %d", n, len(run.Entries), run.Problems, wantN)
		}
		for i, e := range run.Entries {
			if string(e.Raw) != want[i] {
				t.Fatalf("cut at %d: record %d differs", n, i)
			}
		}
		if run.Summary.Complete != (wantN == len(want)) {
			t.Fatalf("cut at %d: complete %v with %d of %d records", n, run.Summary.Complete, wantN, len(want))
		}
	}
}

func (x *runlogSuite) crasher(t *testing.T) (backend.Storage, backend.Crasher, *runlog.Store) {
	st := x.newBackend(t)
	c, ok := st.(backend.Crasher)
	if !ok || !st.Capabilities().Crash {
		t.Skip("backend cannot simulate a crash")
	}
	return st, c, x.open(t, st, runlog.WithOutputThreshold(1024))
}

func (x *runlogSuite) crash(t *testing.T) {
	if _, ok := x.newBackend(t).(backend.Crasher); !ok {
		t.Skip("backend cannot simulate a crash")
	}
	t.Run("HeaderSurvives", func(t *testing.T) {
		_, c, s := x.crasher(t)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "c1", SessionID: "s1"})
		x.must(t, err)
		for range 5 {
			_, err := w.Event(runlogCtx, json.RawMessage(`{"type":"delta"}`))
			x.must(t, err)
		}
		c.Crash()
		run := x.load(t, s, "c1")
		if run.Header == nil || len(run.Entries) != 1 || run.Summary.Status != runlog.StatusIncomplete || run.Summary.SessionID != "s1" {
			t.Errorf("after a crash with nothing synced but the header: %d records, status %q, session %q",
				len(run.Entries), run.Summary.Status, run.Summary.SessionID)
		}
		if err := w.Append(runlogCtx, &runlog.RunStatus{Status: "running"}); err == nil {
			t.Errorf("a writer whose process crashed should fail")
		}
		if err2 := w.Append(runlogCtx, &runlog.RunStatus{Status: "running"}); err2 == nil {
			t.Errorf("the writer's first error should be latched")
		}
	})
	t.Run("SyncedPrefix", func(t *testing.T) {
		_, c, s := x.crasher(t)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "c2"})
		x.must(t, err)
		for range 3 {
			_, err := w.Event(runlogCtx, json.RawMessage(`{"type":"delta"}`))
			x.must(t, err)
		}
		x.must(t, w.Sync(runlogCtx))
		for range 3 {
			_, err := w.Event(runlogCtx, json.RawMessage(`{"type":"lost"}`))
			x.must(t, err)
		}
		c.Crash()
		run := x.load(t, s, "c2")
		if len(run.Entries) != 4 || run.Torn {
			t.Fatalf("%d records (torn %v), want the header and the 3 synced events", len(run.Entries), run.Torn)
		}
		for i, e := range run.Entries[1:] {
			if ev := e.Record.(*runlog.AgentEvent); ev.Seq != int64(i) || ev.EventType() != "delta" {
				t.Errorf("event %d: seq %d type %s", i, ev.Seq, ev.EventType())
			}
		}
	})
	for _, c := range []struct {
		name string
		rec  runlog.Record
	}{
		{"SyncAtStatus", &runlog.RunStatus{Status: runlog.StatusAwaitingUI}},
		{"SyncAtError", &runlog.RunError{Error: runlog.ErrorInfo{Name: "E", Message: "m"}}},
		{"SyncAtEnd", &runlog.RunEnd{Outcome: runlog.OutcomeCompleted}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cr, s := x.crasher(t)
			w, err := s.Create(runlogCtx, &runlog.Header{RunID: "c3"})
			x.must(t, err)
			seq, err := w.Request(runlogCtx, &runlog.LLMRequest{})
			x.must(t, err)
			x.must(t, w.Append(runlogCtx, &runlog.LLMResponse{Seq: seq}))
			x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "x", ResultRaw: lineText(4096)}))
			x.must(t, w.Append(runlogCtx, c.rec))
			cr.Crash()
			run := x.load(t, s, "c3")
			if len(run.Entries) != 5 || len(run.Problems) != 0 {
				t.Fatalf("%d records, problems %v; want all 5 durable after %s", len(run.Entries), run.Problems, c.rec.RecordType())
			}
			if to := run.Entries[3].Record.(*runlog.ToolOutput); !to.Resolved() || to.ResultRaw != lineText(4096) {
				t.Errorf("the externalized output's blob did not survive with its line")
			}
			if done := c.rec.RecordType() == runlog.TypeRunEnd; run.Summary.Complete != done {
				t.Errorf("complete %v after a crash following %s", run.Summary.Complete, c.rec.RecordType())
			}
		})
	}
	t.Run("State", func(t *testing.T) {
		_, c, s := x.crasher(t)
		x.must(t, s.SaveState(runlogCtx, runlog.State{SessionID: "s", InvokeSeq: 1}))
		x.must(t, s.SaveState(runlogCtx, runlog.State{SessionID: "s", InvokeSeq: 2}))
		c.Crash()
		got, err := s.LoadState(runlogCtx, "s")
		x.must(t, err)
		if got.InvokeSeq != 2 {
			t.Errorf("state after crash has invoke_seq %d, want 2 (SaveState is durable)", got.InvokeSeq)
		}
	})
	t.Run("FindAfterCrash", func(t *testing.T) {
		_, c, s := x.crasher(t)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "c5"})
		x.must(t, err)
		_ = w
		c.Crash()
		sum, err := s.Summary(runlogCtx, "c5")
		x.must(t, err)
		if sum.Status != runlog.StatusIncomplete || sum.Complete {
			t.Errorf("crashed run summary: %+v", sum)
		}
	})
}

// indexed writes runs over three days and two sessions and returns their
// ids, newest first.
func (x *runlogSuite) indexed(t *testing.T, st backend.Storage, s *runlog.Store) []string {
	type run struct {
		id, session string
		at          time.Time
	}
	runs := []run{
		{"aaaa-1", "A", time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC)},
		{"bbbb-1", "B", time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)},
		{"aaaa-2", "A", time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)},
		{"cccc-1", "", time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)},
		{"bbbb-2", "B", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, r := range runs {
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: r.id, SessionID: r.session, StartedAt: runlog.TimeOf(r.at)})
		x.must(t, err)
		x.must(t, w.Append(runlogCtx, &runlog.RunEnd{Outcome: "completed"}))
		x.must(t, w.Close())
	}
	// Things in runs/ that are not runs.
	x.write(t, st, "runs/notes.txt", "x")
	x.write(t, st, "runs/2026/xx/01/zz.jsonl", "x")
	x.write(t, st, "runs/2026/02/01/README", "x")
	x.write(t, st, "runs/2026/02/01/bad id.jsonl", "x")
	return []string{"bbbb-2", "cccc-1", "aaaa-2", "bbbb-1", "aaaa-1"}
}

func ids[T any](tb testing.TB, seq func(func(T, error) bool), id func(T) string) []string {
	tb.Helper()
	var out []string
	for v, err := range seq {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, id(v))
	}
	return out
}

func (x *runlogSuite) index(t *testing.T) {
	st, s := x.fresh(t)
	all := x.indexed(t, st, s)
	runID := func(r runlog.RunInfo) string { return r.RunID }
	check := func(name string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	check("Runs", ids(t, s.Runs(runlogCtx), runID), all)
	check("ForSession(A)", ids(t, s.Runs(runlogCtx, runlog.ForSession("A")), runID), []string{"aaaa-2", "aaaa-1"})
	check("Since", ids(t, s.Runs(runlogCtx, runlog.Since(time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC))), runID), []string{"bbbb-2", "cccc-1", "aaaa-2"})
	check("Until", ids(t, s.Runs(runlogCtx, runlog.Until(time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC))), runID), []string{"bbbb-1", "aaaa-1"})
	check("Limit", ids(t, s.Runs(runlogCtx, runlog.Limit(2)), runID), all[:2])
	check("Summaries", ids(t, s.Summaries(runlogCtx, runlog.ForSession("B")), func(s runlog.Summary) string { return s.RunID }), []string{"bbbb-2", "bbbb-1"})

	for _, r := range []string{"aaaa-2", "aaaa-1"} {
		info, err := s.Find(runlogCtx, r)
		x.must(t, err)
		if info.RunID != r || info.SessionID != "A" || info.Size == 0 {
			t.Errorf("Find(%s): %+v", r, info)
		}
	}
	if info, err := s.Find(runlogCtx, "cc"); err != nil || info.RunID != "cccc-1" {
		t.Errorf("Find by unique prefix: %+v, %v", info, err)
	}
	if _, err := s.Find(runlogCtx, "aaaa"); !errors.Is(err, runlog.ErrAmbiguous) {
		t.Errorf("Find by shared prefix: %v, want ErrAmbiguous", err)
	}
	if _, err := s.Find(runlogCtx, "dddd"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmt.Sprint(err), "dddd") {
		t.Errorf("Find of a missing run: %v, want fs.ErrNotExist naming it", err)
	}
	if _, err := s.Summary(runlogCtx, "dddd"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Summary of a missing run: %v, want fs.ErrNotExist", err)
	}
	for _, err := range s.Records(runlogCtx, "dddd") {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Records of a missing run: %v, want fs.ErrNotExist", err)
		}
	}

	t.Run("ReadsLittle", func(t *testing.T) {
		sp := spy.New(st)
		s2 := x.open(t, sp)
		for range s2.Runs(runlogCtx) {
		}
		if n := sp.Count("Open", "ReadFile", "OpenRange"); n != 0 {
			t.Errorf("Runs opened %d files; a header prefix should do", n)
		}
		sp.Reset()
		_, err := s2.Find(runlogCtx, "aaaa-1")
		x.must(t, err)
		if n := sp.Count("Open", "ReadFile", "OpenRange"); n != 0 {
			t.Errorf("Find opened %d files", n)
		}
		if n := sp.Count("ReadPrefix"); n != 1 {
			t.Errorf("Find read %d prefixes, want only the run's own", n)
		}
	})
	t.Run("LongHeader", func(t *testing.T) {
		// Another writer may put session_id after big tool definitions.
		st, s := x.fresh(t)
		defs := strings.Repeat(`{"name":"tool","description":"`+strings.Repeat("d", 200)+`"},`, 100)
		line := `{"type":"header","schema_version":1,"run_id":"long-1","tools":{"definitions":[` + strings.TrimSuffix(defs, ",") + `]},"started_at":"2026-02-03T12:00:00.000Z","session_id":"late"}`
		x.write(t, st, "runs/2026/02/03/long-1.jsonl", line+"\n")
		check("ForSession(late)", ids(t, s.Runs(runlogCtx, runlog.ForSession("late")), runID), []string{"long-1"})
	})
	t.Run("Empty", func(t *testing.T) {
		_, s := x.fresh(t)
		check("Runs of an empty store", ids(t, s.Runs(runlogCtx), runID), nil)
		if _, err := s.Find(runlogCtx, "x"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Find in an empty store: %v", err)
		}
	})
	t.Run("BlobRefs", func(t *testing.T) {
		_, s := x.fresh(t, runlog.WithOutputThreshold(16))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "refs"})
		x.must(t, err)
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "a", ResultRaw: strings.Repeat("a", 100)}))
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "b", ResultRaw: "small"}))
		x.must(t, w.Close())
		refs := ids(t, s.BlobRefs(runlogCtx), func(r cas.Ref) string { return r.String() })
		sum := sha256.Sum256([]byte(strings.Repeat("a", 100)))
		check("BlobRefs", refs, []string{"blob:sha256:" + hex.EncodeToString(sum[:])})
	})
}

func (x *runlogSuite) summary(t *testing.T) {
	_, s := x.fresh(t)
	w, err := s.Create(runlogCtx, &runlog.Header{RunID: "sum", SessionID: "S", Model: &runlog.Model{Provider: "p", Name: "m"}})
	x.must(t, err)
	x.must(t, w.Append(runlogCtx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: strings.Repeat("é", 300)}}))
	cached := int64(3)
	for i := range 2 {
		seq, err := w.Request(runlogCtx, &runlog.LLMRequest{})
		x.must(t, err)
		if i == 0 {
			x.must(t, w.Append(runlogCtx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{Usage: &runlog.Usage{InputTokens: 100, OutputTokens: 20, InputCachedTokens: &cached}}}))
		}
	}
	for i := range 3 {
		x.must(t, w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: fmt.Sprint(i), IsError: i == 2}))
		_, err := w.Event(runlogCtx, json.RawMessage(`{"type":"tool_call"}`))
		x.must(t, err)
	}
	x.must(t, w.Append(runlogCtx, &runlog.RunError{Error: runlog.ErrorInfo{Name: "E1", Message: "first"}}))
	x.must(t, w.Append(runlogCtx, &runlog.RunError{Error: runlog.ErrorInfo{Name: "E2", Message: "second"}}))
	x.must(t, w.Append(runlogCtx, &runlog.RunStatus{Status: runlog.StatusError}))
	x.must(t, w.Append(runlogCtx, &runlog.RunEnd{Outcome: runlog.OutcomeError, Final: "gave up"}))
	x.must(t, w.Close())

	sum, err := s.Summary(runlogCtx, "sum")
	x.must(t, err)
	// 15 records; the 14 after the header one 10ms clock step each.
	if sum.RunID != "sum" || sum.SessionID != "S" || sum.Status != "error" || !sum.Complete || sum.LastStatus != "error" ||
		sum.LLMCalls != 2 || sum.LLMResponses != 1 || sum.LLMUnanswered != 1 ||
		sum.Tokens != (runlog.Tokens{Input: 100, Output: 20, Total: 120, InputCached: 3}) ||
		sum.ToolCalls != 3 || sum.ToolErrors != 1 || sum.AgentEvents != 3 || sum.Errors != 2 ||
		sum.LastError == nil || sum.LastError.Name != "E2" || sum.Records != 15 || sum.Model != "p/m" ||
		sum.Final != "gave up" || sum.DurationMS != 140 || sum.EndedAt.IsZero() {
		t.Errorf("summary: %+v", sum)
	}
	if n := len([]rune(sum.Input)); n != 201 {
		t.Errorf("input cut to %d characters, want 200 and a mark", n)
	}

	// The JSON shape is a contract with scripts (trove runs --json).
	b, err := json.Marshal(sum)
	x.must(t, err)
	var m map[string]any
	x.must(t, json.Unmarshal(b, &m))
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	want := []string{"agent_events", "complete", "corrupt_lines", "duration_ms", "ended_at", "errors", "final", "input", "last_error", "last_status",
		"last_ts", "llm_calls", "llm_responses", "llm_unanswered", "model", "path", "records", "run_id", "schema_version", "session_id",
		"size_bytes", "started_at", "status", "tokens", "tool_calls", "tool_errors", "torn", "unknown_records"}
	if !slices.Equal(keys, want) {
		t.Errorf("summary JSON keys\n%v\nwant\n%v", keys, want)
	}
	if ts, _ := m["started_at"].(string); !tsRe.MatchString(ts) {
		t.Errorf("started_at %q is not RFC 3339 UTC with milliseconds", ts)
	}
}

func (x *runlogSuite) state(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		_, s := x.fresh(t)
		in := runlog.State{SessionID: "s1", RunID: "r1", InvokeSeq: 4,
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"a"}`)}, Meta: json.RawMessage(`{"m":true}`)}
		x.must(t, s.SaveState(runlogCtx, in))
		got, err := s.LoadState(runlogCtx, "s1")
		x.must(t, err)
		if got.SchemaVersion != 1 || got.UpdatedAt.IsZero() || got.RunID != "r1" || got.InvokeSeq != 4 || len(got.Messages) != 1 || string(got.Meta) != `{"m":true}` {
			t.Errorf("state read back: %+v", got)
		}
		got.InvokeSeq = 5
		x.must(t, s.SaveState(runlogCtx, got))
		again, err := s.LoadState(runlogCtx, "s1")
		x.must(t, err)
		if again.InvokeSeq != 5 {
			t.Errorf("second save not seen: %d", again.InvokeSeq)
		}
	})
	t.Run("UnknownFieldsKept", func(t *testing.T) {
		st, s := x.fresh(t)
		x.write(t, st, "state/s2.json", `{"schema_version":3,"session_id":"s2","updated_at":"2026-02-03T12:00:00.000Z","messages":[],"cursor":{"a":1},"zeta":"z"}`)
		got, err := s.LoadState(runlogCtx, "s2")
		x.must(t, err)
		if got.SchemaVersion != 3 || len(got.Extra) != 2 {
			t.Errorf("state of a later version: %+v", got)
		}
		x.must(t, s.SaveState(runlogCtx, got))
		out := x.read(t, st, "state/s2.json")
		if !jsonEqual(t, []byte(out), []byte(`{"schema_version":3,"session_id":"s2","updated_at":"2026-02-03T12:00:00.000Z","messages":[],"cursor":{"a":1},"zeta":"z"}`)) {
			t.Errorf("unknown fields lost on save: %s", out)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		st, s := x.fresh(t)
		if _, err := s.LoadState(runlogCtx, "nope"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "state/nope.json") {
			t.Errorf("missing state: %v, want fs.ErrNotExist naming the file", err)
		}
		x.write(t, st, "state/bad.json", "{not json")
		if _, err := s.LoadState(runlogCtx, "bad"); !errors.Is(err, runlog.ErrCorrupt) {
			t.Errorf("corrupt state: %v, want ErrCorrupt", err)
		}
		for _, id := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("x", 200)} {
			if err := s.SaveState(runlogCtx, runlog.State{SessionID: id}); !errors.Is(err, runlog.ErrInvalid) {
				t.Errorf("SaveState(%q): %v, want ErrInvalid", id, err)
			}
			if _, err := s.LoadState(runlogCtx, id); !errors.Is(err, runlog.ErrInvalid) {
				t.Errorf("LoadState(%q): %v, want ErrInvalid", id, err)
			}
		}
	})
}

func (x *runlogSuite) hostile(t *testing.T) {
	st, s := x.fresh(t)
	for _, id := range []string{"../x", "a/b", ".hidden", ".~tmp", "a\x00b", "a\\b", strings.Repeat("x", 200), "ü"} {
		if _, err := s.Create(runlogCtx, &runlog.Header{RunID: id}); !errors.Is(err, runlog.ErrInvalid) {
			t.Errorf("Create(%q): %v, want ErrInvalid", id, err)
		}
		if _, err := s.Find(runlogCtx, id); !errors.Is(err, runlog.ErrInvalid) {
			t.Errorf("Find(%q): %v, want ErrInvalid", id, err)
		}
	}
	if _, err := s.Find(runlogCtx, ""); !errors.Is(err, runlog.ErrInvalid) {
		t.Errorf("Find(\"\"): %v, want ErrInvalid", err)
	}
	if _, err := s.Create(runlogCtx, &runlog.Header{RunID: "ok", SessionID: "../s"}); !errors.Is(err, runlog.ErrInvalid) {
		t.Errorf("Create with a hostile session id: %v, want ErrInvalid", err)
	}
	if _, err := s.CreateRaw(runlogCtx, []byte(`{"type":"header","run_id":"../../x","started_at":"2026-02-03T12:00:00.000Z"}`)); !errors.Is(err, runlog.ErrInvalid) {
		t.Errorf("CreateRaw with a hostile run id: %v, want ErrInvalid", err)
	}
	for _, raw := range []string{`{"type":"run.end"}`, `{"type":"header","run_id":"x"}`, `nope`} {
		if _, err := s.CreateRaw(runlogCtx, []byte(raw)); !errors.Is(err, runlog.ErrInvalid) {
			t.Errorf("CreateRaw(%s): %v, want ErrInvalid", raw, err)
		}
	}
	for fi, err := range backend.Walk(runlogCtx, st, ".") {
		x.must(t, err)
		if !fi.IsDir {
			t.Errorf("refused calls left %s behind", fi.Name)
		}
	}
	// A file whose header claims another run id is listed under its name.
	x.write(t, st, "runs/2026/02/03/real.jsonl", `{"type":"header","schema_version":1,"run_id":"../../etc","started_at":"2026-02-03T12:00:00.000Z"}`+"\n")
	sum, err := s.Summary(runlogCtx, "real")
	x.must(t, err)
	if sum.RunID != "real" {
		t.Errorf("summary run id %q, want the file's", sum.RunID)
	}
}

func (x *runlogSuite) faults(t *testing.T) {
	eio := syscall.EIO
	t.Run("WriteLatched", func(t *testing.T) {
		f := faulty.New(x.newBackend(t))
		s := x.open(t, f)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "f1"})
		x.must(t, err)
		f.Inject(faulty.FailNth(1, eio, "Writer.Write"))
		_, err = w.Event(runlogCtx, json.RawMessage(`{}`))
		if !errors.Is(err, eio) {
			t.Fatalf("append with a failing write: %v, want EIO", err)
		}
		f.Clear()
		if _, err2 := w.Event(runlogCtx, json.RawMessage(`{}`)); !errors.Is(err2, eio) {
			t.Errorf("the failed write is not latched: %v", err2)
		}
		if err := w.Sync(runlogCtx); !errors.Is(err, eio) {
			t.Errorf("Sync after a failed write: %v, want the latched error", err)
		}
		if err := w.Close(); !errors.Is(err, eio) {
			t.Errorf("Close after a failed write: %v, want the latched error", err)
		}
	})
	t.Run("SyncFails", func(t *testing.T) {
		f := faulty.New(x.newBackend(t))
		s := x.open(t, f)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "f2"})
		x.must(t, err)
		f.Inject(faulty.FailSync(1))
		if err := w.Append(runlogCtx, &runlog.RunStatus{Status: "running"}); err == nil {
			t.Errorf("run.status with a failing sync reported success")
		}
		w.Close()
	})
	t.Run("CreateFails", func(t *testing.T) {
		for _, op := range []string{"OpenWriter", "Writer.Write", "Writer.Sync"} {
			f := faulty.New(x.newBackend(t), faulty.FailNth(1, eio, op))
			s := x.open(t, f)
			if _, err := s.Create(runlogCtx, &runlog.Header{RunID: "f3"}); !errors.Is(err, eio) {
				t.Errorf("Create with %s failing: %v, want EIO", op, err)
			}
			f.Clear()
			for info, err := range s.Runs(runlogCtx) {
				x.must(t, err)
				t.Errorf("Create with %s failing left run %s", op, info.Path)
			}
			if _, err := s.Create(runlogCtx, &runlog.Header{RunID: "f3"}); err != nil {
				t.Errorf("Create after a failed one (%s): %v", op, err)
			}
		}
	})
	t.Run("BlobPutFails", func(t *testing.T) {
		f := faulty.New(x.newBackend(t))
		s := x.open(t, f, runlog.WithOutputThreshold(16))
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "f4"})
		x.must(t, err)
		f.Inject(faulty.FailFrom(1, eio, "WriteFile", "CreateFile", "WriteFrom", "OpenWriter", "Rename"))
		if err := w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: "c", ResultRaw: strings.Repeat("x", 100)}); !errors.Is(err, runlog.ErrBlob) {
			t.Errorf("tool output whose blob cannot be stored: %v, want ErrBlob", err)
		}
		f.Clear()
		// Nothing was written for it, and the writer goes on.
		x.must(t, w.Append(runlogCtx, &runlog.RunEnd{Outcome: "completed"}))
		x.must(t, w.Close())
		run := x.load(t, s, "f4")
		if len(run.Entries) != 2 {
			t.Errorf("%d records, want the header and run.end", len(run.Entries))
		}
	})
	t.Run("ReadFails", func(t *testing.T) {
		f := faulty.New(x.newBackend(t))
		s := x.open(t, f)
		w, err := s.Create(runlogCtx, &runlog.Header{RunID: "f5"})
		x.must(t, err)
		x.must(t, w.Close())
		f.Inject(faulty.FailNth(1, eio, "Reader.Read"))
		if _, err := s.Load(runlogCtx, "f5"); !errors.Is(err, eio) || !strings.Contains(err.Error(), w.Path()) {
			t.Errorf("Load with a failing read: %v, want EIO naming the run", err)
		}
	})
}

func (x *runlogSuite) concurrent(t *testing.T) {
	_, s := x.fresh(t, runlog.WithOutputThreshold(512))
	w, err := s.Create(runlogCtx, &runlog.Header{RunID: "conc"})
	x.must(t, err)
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := w.Event(runlogCtx, map[string]any{"type": "delta", "g": g, "i": i}); err != nil {
					t.Error(err)
					return
				}
				out := strings.Repeat(fmt.Sprint(g), 100*(i%10))
				if err := w.Append(runlogCtx, &runlog.ToolOutput{Tool: "t", ToolCallID: fmt.Sprint(g, "-", i), ResultRaw: out}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	x.must(t, w.Close())
	got, errs := x.entries(t, s, "conc")
	if len(errs) > 0 {
		t.Fatalf("concurrent appends produced bad lines: %v", errs[0])
	}
	if len(got) != 1+2*workers*each {
		t.Fatalf("%d records, want %d", len(got), 1+2*workers*each)
	}
	next := int64(0)
	for _, e := range got {
		switch r := e.Record.(type) {
		case *runlog.AgentEvent:
			if r.Seq != next {
				t.Fatalf("agent.event seq %d in file order, want %d", r.Seq, next)
			}
			next++
		case *runlog.ToolOutput:
			var g, i int
			if _, err := fmt.Sscanf(r.ToolCallID, "%d-%d", &g, &i); err != nil || r.ResultRaw != strings.Repeat(fmt.Sprint(g), 100*(i%10)) {
				t.Fatalf("tool output %s holds the wrong bytes (%d)", r.ToolCallID, len(r.ResultRaw))
			}
		}
	}
}

func (x *runlogSuite) context(t *testing.T) {
	_, s := x.fresh(t)
	w, err := s.Create(runlogCtx, &runlog.Header{RunID: "ctx"})
	x.must(t, err)
	ctx, cancel := context.WithCancel(runlogCtx)
	cancel()
	if err := w.Append(ctx, &runlog.RunStatus{Status: "running"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: %v", err)
	}
	x.must(t, w.Append(runlogCtx, &runlog.RunStatus{Status: "running"})) // not latched
	x.must(t, w.Close())
	if _, err := s.Create(ctx, &runlog.Header{RunID: "ctx2"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: %v", err)
	}
	for _, err := range s.Records(ctx, "ctx") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Records with a cancelled context: %v", err)
		}
	}
	if _, err := s.Summary(ctx, "ctx"); !errors.Is(err, context.Canceled) {
		t.Errorf("Summary with a cancelled context: %v", err)
	}
	if err := s.SaveState(ctx, runlog.State{SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Errorf("SaveState with a cancelled context: %v", err)
	}
}
