package runlog

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"unicode/utf8"
)

// StatusIncomplete is Summary.Status for a run without run.end: it crashed,
// was killed, or is still running.
const StatusIncomplete = "incomplete"

// Summary condenses one run. Its JSON shape is stable (docs/runlog.md): new
// fields may be added, none renamed or removed.
type Summary struct {
	RunID         string `json:"run_id"`
	SessionID     string `json:"session_id,omitempty"`
	Path          string `json:"path"`
	SizeBytes     int64  `json:"size_bytes"`
	SchemaVersion int    `json:"schema_version"`
	StartedAt     Time   `json:"started_at,omitzero"`
	// EndedAt is run.end's ts; LastTS the latest ts of any record.
	EndedAt Time `json:"ended_at,omitzero"`
	LastTS  Time `json:"last_ts,omitzero"`
	// DurationMS runs from started_at to run.end, or to the last record
	// of an incomplete run.
	DurationMS int64 `json:"duration_ms"`
	// Status is run.end's outcome as written (values a later version adds
	// are kept), or "incomplete" without run.end.
	Status     string `json:"status"`
	Complete   bool   `json:"complete"`
	LastStatus string `json:"last_status,omitempty"` // the last run.status
	Model      string `json:"model,omitempty"`       // provider/name of the header, else of the first llm.request
	Input      string `json:"input,omitempty"`       // run.start's text, cut to 200 characters
	Final      string `json:"final,omitempty"`       // run.end's final, cut to 200 characters

	LLMCalls      int        `json:"llm_calls"`      // llm.request records
	LLMResponses  int        `json:"llm_responses"`  // llm.response records
	LLMUnanswered int        `json:"llm_unanswered"` // requests without a response
	Tokens        Tokens     `json:"tokens"`
	ToolCalls     int        `json:"tool_calls"`  // tool.output records
	ToolErrors    int        `json:"tool_errors"` // of which is_error
	AgentEvents   int        `json:"agent_events"`
	Errors        int        `json:"errors"` // run.error records
	LastError     *ErrorInfo `json:"last_error,omitempty"`

	Records        int  `json:"records"`         // lines read as records, the header included
	UnknownRecords int  `json:"unknown_records"` // of types this version does not know
	CorruptLines   int  `json:"corrupt_lines"`   // lines skipped as not records
	Torn           bool `json:"torn"`            // a torn last line was skipped
}

// Tokens sums the usage of a run's llm.response records.
type Tokens struct {
	Input              int64 `json:"input"`
	Output             int64 `json:"output"`
	Total              int64 `json:"total"`
	InputCached        int64 `json:"input_cached"`
	InputCacheCreation int64 `json:"input_cache_creation"`
}

// Summary reads the run id (an id or a unique prefix, see Find) and
// summarizes it, without loading blobs. It backs `trove runs show`.
func (s *Store) Summary(ctx context.Context, id string) (Summary, error) {
	info, err := s.Find(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	return s.summarize(ctx, info)
}

// Summaries yields the summary of each run Runs yields, newest first. It
// backs `trove runs ls`; use Limit to bound the reads.
func (s *Store) Summaries(ctx context.Context, opts ...ListOption) iter.Seq2[Summary, error] {
	return func(yield func(Summary, error) bool) {
		for info, err := range s.Runs(ctx, opts...) {
			if err != nil {
				yield(Summary{}, err)
				return
			}
			sum, err := s.summarize(ctx, info)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since it was listed
			}
			if !yield(sum, err) || err != nil {
				return
			}
		}
	}
}

func (s *Store) summarize(ctx context.Context, info RunInfo) (Summary, error) {
	sum := newSummarizer(info)
	torn, err := s.scan(ctx, info.Path, false, func(e Entry, err error) bool {
		sum.add(e, err)
		return true
	})
	if err != nil {
		return Summary{}, err
	}
	sum.torn = torn
	return sum.summary(), nil
}

type summarizer struct {
	s     Summary
	open  map[int64]bool
	first bool
	torn  bool
}

func newSummarizer(info RunInfo) *summarizer {
	return &summarizer{
		s: Summary{
			RunID: info.RunID, SessionID: info.SessionID, Path: info.Path,
			SizeBytes: info.Size, SchemaVersion: info.SchemaVersion, StartedAt: info.StartedAt,
		},
		open:  map[int64]bool{},
		first: true,
	}
}

func (z *summarizer) add(e Entry, err error) {
	s := &z.s
	if e.Record == nil {
		if err != nil {
			s.CorruptLines++
		}
		return
	}
	s.Records++
	first := z.first
	z.first = false
	if b, ok := e.Record.(interface{ base() *Base }); ok {
		if ts := b.base().TS; ts.After(s.LastTS.Time) {
			s.LastTS = ts
		}
	}
	switch r := e.Record.(type) {
	case *Header:
		if !first {
			return
		}
		s.SchemaVersion = r.SchemaVersion
		if r.SessionID != "" {
			s.SessionID = r.SessionID
		}
		if !r.StartedAt.IsZero() {
			s.StartedAt = r.StartedAt
		}
		if r.Model != nil {
			s.Model = modelName(r.Model)
		}
	case *RunStart:
		if s.Input == "" {
			s.Input = cut(r.Input.Text, 200)
		}
		if s.SessionID == "" {
			s.SessionID = r.SessionID
		}
	case *AgentEvent:
		s.AgentEvents++
	case *ToolOutput:
		s.ToolCalls++
		if r.IsError {
			s.ToolErrors++
		}
	case *LLMRequest:
		s.LLMCalls++
		z.open[r.Seq] = true
		if s.Model == "" && r.Model != nil {
			s.Model = modelName(r.Model)
		}
	case *LLMResponse:
		s.LLMResponses++
		delete(z.open, r.Seq)
		if u := r.Output.Usage; u != nil {
			t := &s.Tokens
			t.Input += u.InputTokens
			t.Output += u.OutputTokens
			if u.TotalTokens != 0 {
				t.Total += u.TotalTokens
			} else {
				t.Total += u.InputTokens + u.OutputTokens
			}
			if u.InputCachedTokens != nil {
				t.InputCached += *u.InputCachedTokens
			}
			if u.InputCacheCreationTokens != nil {
				t.InputCacheCreation += *u.InputCacheCreationTokens
			}
		}
	case *RunStatus:
		s.LastStatus = string(r.Status)
	case *RunError:
		s.Errors++
		ei := r.Error
		s.LastError = &ei
	case *RunEnd:
		if !s.Complete {
			s.Complete = true
			s.Status = string(r.Outcome)
			s.EndedAt = r.TS
			s.Final = cut(r.Final, 200)
		}
	case *Unknown:
		s.UnknownRecords++
	}
}

func (z *summarizer) summary() Summary {
	s := z.s
	s.Torn = z.torn
	s.LLMUnanswered = len(z.open)
	if !s.Complete {
		s.Status = StatusIncomplete
	}
	end := s.LastTS
	if s.Complete && !s.EndedAt.IsZero() {
		end = s.EndedAt
	}
	if !s.StartedAt.IsZero() && end.After(s.StartedAt.Time) {
		s.DurationMS = end.Sub(s.StartedAt.Time).Milliseconds()
	}
	return s
}

func modelName(m *Model) string {
	switch {
	case m.Provider != "" && m.Name != "":
		return m.Provider + "/" + m.Name
	case m.Name != "":
		return m.Name
	}
	return m.Provider
}

// cut shortens s to n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, c := 0, 0
	for i = range s {
		if c == n {
			break
		}
		c++
	}
	return s[:i] + "…"
}
