package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func TestShowRendersTheTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := "01a20000-0000-7000-8000-00000000abcd"
	s, err := tree.Create(st, session.SessionPath("/w", time.Now(), id), tree.Header{ID: id, Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(m string) *tree.Entry {
		e, err := s.AppendMessage(ctx, json.RawMessage(m))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	usage := `"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`
	first := msg(`{"role":"user","content":"list the files \u001b[31mRED\u001b[0m","timestamp":1}`)
	msg(`{"role":"assistant","content":[{"type":"thinking","thinking":"I should run ls\nthen read"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"cmd":"ls"}}],"api":"a","provider":"p","model":"m",` + usage + `,"stopReason":"toolUse","timestamp":2}`)
	msg(`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a.txt"}],"isError":false,"timestamp":3}`)
	if _, err := s.SetLabel(ctx, first.ID(), "start"); err != nil {
		t.Fatal(err)
	}
	if err := s.Branch(first.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, &tree.Compaction{Summary: "the user wants files listed", FirstKeptEntryID: first.ID(), TokensBefore: 10}); err != nil {
		t.Fatal(err)
	}
	msg(`{"role":"assistant","content":[{"type":"text","text":"other way"}],"api":"a","provider":"p","model":"m",` + usage + `,"stopReason":"stop","timestamp":4}`)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := trove(t, "", "--store", dir, "show", id)
	if code != exitOK {
		t.Fatalf("show: %d %s", code, errOut)
	}
	for _, want := range []string{`(label "start")`, "compaction", "the user wants files listed", "other way", "other branch(es) start here", "2 messages on this path, 4 in the session"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("show passes escape sequences to the terminal:\n%q", out)
	}
	// The other branch, by --leaf: the tool call and thinking are rendered.
	var toolEntry string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "other branch(es) start here: ") {
			toolEntry = strings.Fields(strings.SplitN(line, "start here: ", 2)[1])[0]
			toolEntry = strings.TrimSuffix(toolEntry, ",")
		}
	}
	code, out, errOut = trove(t, "", "--store", dir, "show", "--leaf", toolEntry, id)
	if code != exitOK {
		t.Fatalf("show --leaf %s: %d %s", toolEntry, code, errOut)
	}
	for _, want := range []string{"thinking: I should run ls then read", `tool call bash {"cmd":"ls"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("show --leaf lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "assistant: \n") {
		t.Errorf("an assistant turn without text shows empty:\n%s", out)
	}
}
