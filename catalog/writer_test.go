package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/trovekit/trove/session"
)

// TestWriterAtWork: a session a trove writer keeps open (its open marker
// in the directory) is looked at by every query, while its unchanged
// directory is not listed again; its messages are found once flushed.
func TestWriterAtWork(t *testing.T) {
	ctx := context.Background()
	st := spiedOS(t)
	ss, err := session.OpenStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ss.Create(ctx, session.CreateOptions{Cwd: "/w/a", Title: "at work"})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(role, text string) {
		t.Helper()
		m, _ := json.Marshal(map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1})
		if err := h.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := h.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	msg("user", "first words")
	msg("assistant", "an answer")
	// A clock an hour ahead: every directory time has settled.
	c, err := Open(ctx, t.TempDir(), st, nil, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := hitKeys(t, c, Query{Text: "first"}); len(got) != 1 {
		t.Fatalf("first: %q", got)
	}
	for i, word := range []string{"zanzibar", "timbuktu"} {
		msg("user", "flying to "+word)
		st.Reset()
		if got := hitKeys(t, c, Query{Text: word}); len(got) != 1 {
			t.Fatalf("%s: %q", word, got)
		}
		lists := 0
		for _, call := range st.Calls() {
			if call.Op == "List" {
				lists++
			}
		}
		if lists != 2 {
			t.Errorf("query %d listed %d directories, want only sessions/ and runs/ (none)", i, lists)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ss.Delete(ctx, h.ID()); err != nil {
		t.Fatal(err)
	}
	if got := hitKeys(t, c, Query{Text: "zanzibar OR first"}); !slices.Equal(got, []string(nil)) {
		t.Errorf("after delete: %q", got)
	}
}
