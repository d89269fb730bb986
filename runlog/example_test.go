package runlog_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/runlog"
)

// The fixture must stay the spec's example byte for byte: the conformance
// suite carries the same text.
func TestSpecFixture(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/runlog-example.jsonl": conformance.RunlogSpecExample,
		"testdata/runlog-state.json":    conformance.RunlogSpecState,
	} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from the conformance suite's copy", file)
		}
	}
}

func Example() {
	ctx := context.Background()
	st := mem.New()
	blobs, _ := cas.Open(ctx, st)
	store, _ := runlog.New(st, runlog.WithBlobs(blobs))

	w, _ := store.Create(ctx, &runlog.Header{RunID: "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a", SessionID: "s1"})
	_ = w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "list files"}})
	seq, _ := w.Request(ctx, &runlog.LLMRequest{})
	_ = w.Append(ctx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{Usage: &runlog.Usage{InputTokens: 120, OutputTokens: 15, TotalTokens: 135}}})
	_ = w.Append(ctx, &runlog.ToolOutput{Tool: "exec_command", ToolCallID: "call_1", ResultRaw: "AGENTS.md\n"})
	_ = w.Append(ctx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted})
	_ = w.Close()

	sum, _ := store.Summary(ctx, "8f1d")
	fmt.Println(sum.Status, sum.LLMCalls, sum.Tokens.Total, sum.ToolCalls)
	// Output: completed 1 135 1
}
