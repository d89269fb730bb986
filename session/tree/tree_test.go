package tree_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session/tree"
)

// The package's own round trip: what Create writes, Check accepts, Open
// reads back with the same context, and ForkLines keeps a valid tree.
func TestWriteCheckOpenFork(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	s, err := tree.Create(st, "s.jsonl", tree.Header{ID: "abc", Cwd: "/w", Title: "t"}, tree.WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	mustAppend := func(d tree.EntryData) *tree.Entry {
		t.Helper()
		e, err := s.Append(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mustAppend(&tree.ModelChange{Model: "anthropic/claude-sonnet-4-5"})
	first := mustAppend(&tree.Message{Message: json.RawMessage(`{"role":"user","content":"fix it","timestamp":1}`)})
	mustAppend(&tree.Message{Message: json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"anthropic","model":"claude-sonnet-4-5","timestamp":2}`)})
	mustAppend(&tree.Label{TargetID: first.ID(), Label: "start"})
	mustAppend(&tree.Message{Message: json.RawMessage(`{"role":"user","content":"and the docs","timestamp":3}`)})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := st.ReadFile(ctx, "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Check(data); err != nil {
		t.Fatalf("Check of what Create wrote: %v", err)
	}
	back, err := tree.Open(ctx, st, "s.jsonl", tree.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(s.Context())
	got, _ := json.Marshal(back.Context())
	if string(got) != string(want) {
		t.Errorf("context after reopening:\n got %s\nwant %s", got, want)
	}
	// The last message alone keeps the model change before it.
	lines, err := back.ForkLines("", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || !strings.Contains(string(lines[0]), `"model_change"`) || !strings.Contains(string(lines[1]), "and the docs") {
		t.Fatalf("last 1: %q", lines)
	}
	fork := append(tree.EncodeHeader(tree.Header{Version: tree.CurrentVersion, ID: "f", Timestamp: tree.FormatTime(at), Cwd: "/w"}), '\n')
	for _, l := range lines {
		fork = append(append(fork, l...), '\n')
	}
	if err := tree.Check(fork); err != nil {
		t.Errorf("Check of the fork: %v", err)
	}
	all, err := back.ForkLines("", 0)
	if err != nil || len(all) != 5 {
		t.Errorf("whole fork: %d lines, %v", len(all), err)
	}
}

// ScanPrefix reads the header and first user message of a prefix; a cut
// last line is not a line, and a prefix without a header is ErrNoHeader.
func TestScanPrefix(t *testing.T) {
	head := `{"type":"session","version":3,"id":"abc","timestamp":"2026-11-25T10:00:00.000Z","cwd":"/w","title":"t"}` + "\n"
	user := `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-25T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":"there"}]}}` + "\n"
	p, err := tree.ScanPrefix([]byte(head+user), true)
	if err != nil || p.Header.ID != "abc" || p.Header.Title != "t" || p.FirstMessage != "hello there" ||
		!p.Created.Equal(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("whole: %+v, %v", p, err)
	}
	p, err = tree.ScanPrefix([]byte(head+user[:40]), false)
	if err != nil || p.Header.ID != "abc" || p.FirstMessage != "" {
		t.Errorf("cut: %+v, %v", p, err)
	}
	if _, err := tree.ScanPrefix([]byte(user), true); !errors.Is(err, tree.ErrNoHeader) {
		t.Errorf("no header: %v", err)
	}
	if _, err := tree.ScanPrefix([]byte("garbage\n"), true); !errors.Is(err, tree.ErrNoHeader) {
		t.Errorf("garbage: %v", err)
	}
}
