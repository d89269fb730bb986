package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/trovekit/trove/session"
)

// TestListedJSONAsPrintJSON checks that the hand-written `ls --json`
// says what printJSON's normalization would of the same sessions.
func TestListedJSONAsPrintJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	list := []session.Metadata{
		{ID: "a1", Path: "sessions/--w--/a.jsonl", ProjectHash: "--w--", Cwd: "/w", Title: "t \"q\" <b>\n", Model: "m",
			CreatedAt: at, UpdatedAt: at.Add(time.Hour), MessageCount: 3, TurnCount: 1, InputTokens: 10, OutputTokens: 5,
			TotalTokens: 15, CostUSD: 0.0051, ExitReason: "done", ParentID: "p", AgentName: "coder", FirstMessage: "hé\u2028"},
		{ID: "b2", Path: "sessions/--w--/b.jsonl", ProjectHash: "--w--", Cwd: "/w", CreatedAt: at, UpdatedAt: at},
	}
	short := map[string]string{"a1": "a1", "b2": "b2"}
	type listed struct {
		session.Metadata
		ShortID string `json:"short_id"`
	}
	var want []any
	for _, m := range list {
		n, err := normalize(listed{m, short[m.ID]})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, n)
	}
	wantJSON, _ := json.Marshal(want)
	got := appendListed(nil, list, short)
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("ls --json is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(wantJSON, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("ls --json:\n%s\nwant:\n%s", got, wantJSON)
	}
	if string(appendListed(nil, nil, nil)) != "[]\n" {
		t.Fatal("an empty listing is not []")
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if got, err := parseSince("36h", now); err != nil || !got.Equal(now.Add(-36*time.Hour)) {
		t.Fatalf("36h: %v %v", got, err)
	}
	if got, err := parseSince("2026-11-01T00:00:00Z", now); err != nil || got.Day() != 1 {
		t.Fatalf("rfc3339: %v %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-5h", ""} {
		if _, err := parseSince(bad, now); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
