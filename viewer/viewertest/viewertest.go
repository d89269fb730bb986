// Package viewertest makes a store for tests of the viewer and of the
// commands that show sessions: one session with a hostile message, a tool
// call, two checkpoints of a workspace file and a run.
//
// Imports: the standard library, trove, runlog, session.
package viewertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// Hostile is a message that would run script in a page that did not escape it.
const Hostile = `<script>document.title="PWNED";document.body.setAttribute("data-pwned","1")</script><img src=x onerror="document.title='PWNED'">`

// Store makes a store on disk holding one session with a hostile
// message, and returns the store's directory and the session id.
func Store(t testing.TB) (string, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	ts, err := troveapi.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ts.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/proj", Title: "Viewer session"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		`{"role":"user","content":` + jsonStr("Find the bug ZEBRA-42 "+Hostile) + `}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c1","name":"grep","arguments":{"pattern":"x"}}]}`,
		`{"role":"toolResult","toolCallId":"c1","toolName":"grep","content":[{"type":"text","text":"main.go:1: x"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Found it in main.go"}]}`,
	} {
		if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	// Two checkpoints of a workspace file, in the session's sidecar.
	ws := t.TempDir()
	file := filepath.Join(ws, "a.txt")
	cps, err := ts.SessionCheckpoints(h, ws)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"one\ntwo\n", "one\nTHREE <b>bold</b>\n"} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := cps.Create(ctx, fmt.Sprintf("cp%d", i+1), []string{"a.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	cps.Close()
	w, err := ts.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "RUN-INPUT <i>x</i>"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	return dir, id
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
