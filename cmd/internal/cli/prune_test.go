package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
)

// pruneStore makes three sessions in one cwd, a day apart, and returns
// their ids, oldest first.
func pruneStore(t *testing.T, dir string) []string {
	t.Helper()
	ctx := context.Background()
	day := time.Now().Add(-72 * time.Hour)
	s, err := troveapi.Open(ctx, dir, troveapi.WithClock(func() time.Time { return day }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := range 3 {
		day = day.Add(24 * time.Hour)
		h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/p", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"hi","timestamp":`+itoa(i+1)+`}`)); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":`+itoa(i+2)+`}`)); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID())
	}
	return ids
}

func pruned(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, o := range jsonLines(t, out) {
		if o["kind"] != "session" {
			t.Fatalf("line %v: want kind session", o)
		}
		ids = append(ids, o["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

func TestPruneCommand(t *testing.T) {
	dir := t.TempDir()
	ids := pruneStore(t, dir)
	if code, _, errOut := trove(t, "", "--store", dir, "prune"); code != exitUsage {
		t.Fatalf("prune without a policy: exit %d (%s), want 2", code, errOut)
	}
	if code, _, _ := trove(t, "", "--store", dir, "prune", "--keep-within", "soon"); code != exitUsage {
		t.Fatalf("bad duration: exit %d, want 2", code)
	}
	code, out, errOut := trove(t, "", "--store", dir, "--json", "prune", "--keep-last", "1", "--dry-run")
	if code != exitOK {
		t.Fatalf("dry run: %d %s", code, errOut)
	}
	if got, want := pruned(t, out), []string{ids[0], ids[1]}; !slices.Equal(got, want) {
		t.Fatalf("dry run would remove %v, want %v", got, want)
	}
	// --keep-within 36h keeps the two newest; a pin keeps the oldest.
	if code, out, errOut := trove(t, "", "--store", dir, "pin", ids[0][:13]); code != exitOK || !strings.Contains(out, "pinned session "+ids[0]) {
		t.Fatalf("pin: %d %s %s", code, out, errOut)
	}
	if code, out, _ := trove(t, "", "--store", dir, "--json", "pin"); code != exitOK || !strings.Contains(out, ids[0]) {
		t.Fatalf("pin list: %d %s", code, out)
	}
	code, out, _ = trove(t, "", "--store", dir, "--json", "prune", "--keep-last", "1", "--dry-run")
	if got := pruned(t, out); code != exitOK || !slices.Equal(got, []string{ids[1]}) {
		t.Fatalf("with a pin the dry run removes %v, want %v", got, ids[1:2])
	}
	code, out, _ = trove(t, "", "--store", dir, "--json", "prune", "--keep-last", "1")
	if got := pruned(t, out); code != exitOK || !slices.Equal(got, []string{ids[1]}) {
		t.Fatalf("prune removed %v, want %v", got, ids[1:2])
	}
	code, out, _ = trove(t, "", "--store", dir, "--json", "ls", "--all")
	if code != exitOK || !strings.Contains(out, ids[0]) || strings.Contains(out, ids[1]) || !strings.Contains(out, ids[2]) {
		t.Fatalf("ls after prune: %s", out)
	}
	if code, _, _ := trove(t, "", "--store", dir, "unpin", ids[0]); code != exitOK {
		t.Fatal("unpin failed")
	}
	// gc applies the policy of config.json.
	if err := os.WriteFile(filepath.Join(dir, troveapi.ConfigFile), []byte(`{"retention":{"keepLast":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = trove(t, "", "--store", dir, "--json", "gc")
	if code != exitOK {
		t.Fatalf("gc: %d %s", code, errOut)
	}
	var rep struct {
		Pruned []struct{ Kind, ID string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Pruned) != 1 || rep.Pruned[0].ID != ids[0] {
		t.Fatalf("gc pruned %+v (%v), want %s", rep.Pruned, err, ids[0])
	}
	if err := os.WriteFile(filepath.Join(dir, troveapi.ConfigFile), []byte(`{"retention":{"keepWithin":"forever"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := trove(t, "", "--store", dir, "gc"); code == exitOK || !strings.Contains(errOut, "config.json") {
		t.Fatalf("gc with a bad config: %d %s", code, errOut)
	}
}
