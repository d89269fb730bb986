package runlog_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/internal/racebuild"
	"github.com/trovekit/trove/runlog"
)

func newWriter(tb testing.TB) (*runlog.Store, *runlog.Writer) {
	tb.Helper()
	st := mem.New()
	tb.Cleanup(func() { st.Close() })
	s, err := runlog.New(st)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := s.Create(context.Background(), &runlog.Header{RunID: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return s, w
}

var benchEvent = json.RawMessage(`{"type":"text_delta","content":"Here are the files: AGENTS.md, RULES.md, packages."}`)

// An agent.event append is the hot path of a run: it must stay a handful of
// allocations (the encoder's own), not grow with the run.
func TestAppendAllocs(t *testing.T) {
	if testing.CoverMode() != "" || racebuild.Enabled {
		t.Skip("coverage and race instrumentation allocate")
	}
	ctx := context.Background()
	_, w := newWriter(t)
	rec := &runlog.AgentEvent{Event: benchEvent}
	allocs := testing.AllocsPerRun(200, func() {
		rec.Seq++
		rec.TS = runlog.Time{}
		if err := w.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("Append allocates %.1f times per agent.event, want at most 4", allocs)
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	ctx := context.Background()
	_, w := newWriter(b)
	rec := &runlog.AgentEvent{Event: benchEvent}
	b.ReportAllocs()
	for b.Loop() {
		rec.Seq++
		rec.TS = runlog.Time{}
		if err := w.Append(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvent(b *testing.B) {
	ctx := context.Background()
	_, w := newWriter(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Event(ctx, benchEvent); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSummary(b *testing.B) {
	ctx := context.Background()
	s, w := newWriter(b)
	for i := range 1000 {
		if _, err := w.Event(ctx, benchEvent); err != nil {
			b.Fatal(err)
		}
		if i%50 == 0 {
			seq, _ := w.Request(ctx, &runlog.LLMRequest{Input: runlog.LLMInput{Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}`)}}})
			_ = w.Append(ctx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{Usage: &runlog.Usage{InputTokens: 1, OutputTokens: 1}}})
		}
	}
	if err := w.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Summary(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
