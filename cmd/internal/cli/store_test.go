package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
)

// storeWith writes sessions through the library: two trove sessions in
// /w (ids abc1..., abc2...) and one written by another v3 implementation
// (no sidecar) in /other.
func storeWith(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	st, err := fs.NewOS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	s, err := session.OpenStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"abc1-0000", "abc2-0000"} {
		h, err := s.Create(ctx, session.CreateOptions{ID: id, Cwd: "/w", Title: fmt.Sprintf("title %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			for _, m := range []string{
				fmt.Sprintf(`{"role":"user","content":"question %d","timestamp":1}`, j),
				fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d"}],"usage":{"input":2,"output":1},"timestamp":2}`, j),
			} {
				if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	foreign := session.SessionPath("/other", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "ffff0000")
	lines := `{"type":"session","version":3,"id":"ffff0000","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/other"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"from elsewhere","timestamp":1}}
{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"timestamp":2}}
`
	if err := st.WriteFile(ctx, foreign, []byte(lines)); err != nil {
		t.Fatal(err)
	}
	return "file://" + root
}

func TestStoreCommands(t *testing.T) {
	store := storeWith(t)
	code, out, errOut := trove(t, "", "--store", store, "ls", "--all")
	// ls prints the shortest abbreviation that resolves to each id.
	if code != exitOK || strings.Count(out, "\n") != 3 || !strings.Contains(out, "f0000 ") {
		t.Fatalf("ls --all: %d\n%s%s", code, out, errOut)
	}
	// Newest first: abc2 was written after abc1.
	if strings.Index(out, "2-0000") > strings.Index(out, "1-0000") {
		t.Fatalf("ls --all is not newest first:\n%s", out)
	}
	code, out, _ = trove(t, "", "--store", store, "--json", "ls", "--cwd", "/w")
	var list []session.Metadata
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].MessageCount != 6 {
		t.Fatalf("ls --cwd /w --json: %d %s", code, out)
	}
	code, out, errOut = trove(t, "", "--store", store, "show", "abc2")
	if code != exitOK || !strings.Contains(out, "question 2") || !strings.Contains(out, "answer 2") || !strings.Contains(out, "6 messages") {
		t.Fatalf("show abc2: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = trove(t, "", "--store", store, "show", "ffff")
	if code != exitOK || !strings.Contains(out, "from elsewhere") {
		t.Fatalf("show of a session without a sidecar: %d\n%s", code, out)
	}
	code, _, errOut = trove(t, "", "--store", store, "show", "abc")
	if code != exitUsage || !strings.Contains(errOut, "abc1-0000") || !strings.Contains(errOut, "abc2-0000") {
		t.Fatalf("show of an ambiguous prefix: %d %s", code, errOut)
	}
	code, _, _ = trove(t, "", "--store", store, "show", "nosuch")
	if code != exitFailure {
		t.Fatalf("show of a missing session: exit %d", code)
	}

	code, out, errOut = trove(t, "", "--store", store, "fork", "abc1", "--last", "2")
	newID := strings.TrimSpace(out)
	if code != exitOK || newID == "" {
		t.Fatalf("fork --last 2: %d %s %s", code, out, errOut)
	}
	code, out, _ = trove(t, "", "--store", store, "--json", "show", newID)
	var sh struct {
		Metadata session.Metadata  `json:"metadata"`
		Messages []json.RawMessage `json:"messages"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &sh) != nil || len(sh.Messages) != 2 || sh.Metadata.ParentID != "abc1-0000" {
		t.Fatalf("the fork: %d %s", code, out)
	}
	var first struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(sh.Messages[0], &first)
	code, out, errOut = trove(t, "", "--store", store, "fork", newID, "--at", first.ID)
	if code != exitOK {
		t.Fatalf("fork --at: %d %s %s", code, out, errOut)
	}
	if code, _, _ = trove(t, "", "--store", store, "fork", "abc1", "--last", "-1"); code != exitUsage {
		t.Fatalf("fork --last -1: exit %d", code)
	}
	if code, out, _ = trove(t, "", "--store", store, "unlock", "abc1"); code != exitOK || !strings.Contains(out, "nothing to unlock") {
		t.Fatalf("unlock: %d %s", code, out)
	}
}
