package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trovekit/trove/session/tree"
)

// A file written through the session API passes Check; each damaged copy
// fails it with a violation wrapping ErrInvalid.
func TestCheckStrict(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s, err := tree.Create(st, "s.jsonl", tree.Header{ID: "s1", Cwd: "/w"})
	must(t, err)
	u, err := s.AppendMessage(ctx, userMsg("q"))
	must(t, err)
	// An assistant message with partial usage and no api: filled on write.
	_, err = s.AppendMessage(ctx, []byte(`{"role":"assistant","provider":"p","model":"m","content":[{"type":"text","text":"a"}],"usage":{"input":3,"output":4},"timestamp":2}`))
	must(t, err)
	_, err = s.Append(ctx, &tree.Compaction{Summary: "s", FirstKeptEntryID: u.ID(), TokensBefore: 5})
	must(t, err)
	_, err = s.SetLabel(ctx, u.ID(), "start")
	must(t, err)
	_, err = s.BranchWithSummary(ctx, u.ID(), tree.BranchSummary{Summary: "other way"})
	must(t, err)
	must(t, s.Close(ctx))
	data := string(read(t, st, "s.jsonl"))
	if err := tree.Check([]byte(data)); err != nil {
		t.Fatalf("a file trove wrote: %v\n%s", err, data)
	}
	if !strings.Contains(data, `"usage":{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`) ||
		!strings.Contains(data, `"api":"unknown"`) {
		t.Errorf("assistant usage not completed:\n%s", data)
	}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	damage := map[string]func([]string) []string{
		"usage without cost": func(l []string) []string {
			l[2] = strings.Replace(l[2], `,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}`, "", 1)
			return l
		},
		"dangling firstKeptEntryId": func(l []string) []string {
			l[3] = strings.Replace(l[3], `"firstKeptEntryId":"`+u.ID()+`"`, `"firstKeptEntryId":"nosuch"`, 1)
			return l
		},
		"duplicate id": func(l []string) []string { return append(l, l[1]) },
		"timestamp without milliseconds": func(l []string) []string {
			l[1] = strings.Replace(l[1], `.000Z"`, `Z"`, 1)
			i := strings.Index(l[1], `"timestamp":"`)
			l[1] = l[1][:i+len(`"timestamp":"`)] + "2026-02-16T10:00:00Z" + l[1][i+len(`"timestamp":"`)+24:]
			return l
		},
		"torn": func(l []string) []string { l[len(l)-1] = l[len(l)-1][:10]; return l },
	}
	for name, f := range damage {
		bad := strings.Join(f(append([]string(nil), lines...)), "\n") + "\n"
		if name == "torn" {
			bad = strings.TrimSuffix(bad, "\n")
		}
		err := tree.Check([]byte(bad))
		var v *tree.Violation
		if !errors.As(err, &v) || !errors.Is(err, tree.ErrInvalid) {
			t.Errorf("%s: tree.Check = %v, want a violation", name, err)
		}
	}
	// A value of the wrong type is refused, not written.
	if _, err := s.AppendMessage(ctx, []byte(`{"role":"assistant","usage":{"input":"3"}}`)); !errors.Is(err, tree.ErrInvalid) && !errors.Is(err, tree.ErrClosed) {
		t.Errorf("usage.input as a string: %v", err)
	}
	s2, err := tree.Create(st, "t.jsonl", tree.Header{ID: "s2", Cwd: "/w"})
	must(t, err)
	if _, err := s2.AppendMessage(ctx, []byte(`{"role":"assistant","usage":{"input":"3"}}`)); !errors.Is(err, tree.ErrInvalid) {
		t.Errorf("usage.input as a string: %v", err)
	}
}
