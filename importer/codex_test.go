package importer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/importer"
)

// Two rollouts carrying the same screenshot: both import with their tool
// calls and reasoning, and the image is stored once.
func TestImportCodex(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "codex")
	var steps []string
	s, res, before := importFresh(t, src, importer.Options{Progress: func(done, total int) { steps = append(steps, fmt.Sprint(done, "/", total)) }})
	if got := strings.Join(steps, " "); got != "0/2 1/2 2/2" {
		t.Errorf("progress %s, want 0/2 1/2 2/2", got)
	}
	if len(res) != 2 {
		t.Fatalf("results: %+v", res)
	}
	for _, r := range res {
		if !r.Imported || r.Format != "codex" || r.Messages != 4 {
			t.Errorf("result %+v", r)
		}
		got, all := sessionPath(t, s, r.SessionID)
		if got != "user assistant toolResult assistant" {
			t.Errorf("roles %s", got)
		}
		for _, want := range []string{`"type":"toolCall"`, `"name":"shell"`, `"command":["ls"]`, `"toolName":"shell"`, `main.go\ngo.mod`,
			`"thinking":"**Listing files** first."`, `"mimeType":"image/png"`, "iVBORw0KGgo", "two files", `"model":"gpt-5-codex"`} {
			if !strings.Contains(all, want) {
				t.Errorf("%s lacks %s", r.Source, want)
			}
		}
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	if rep.Blobs != 1 {
		t.Errorf("store holds %d blobs, want the one screenshot once", rep.Blobs)
	}
	reimportAddsNothing(t, s, src, before)
}

// A rollout of Codex from before session_meta (mid-2025: the session's
// {id, timestamp, instructions, git} first, then bare items between
// {"record_type":"state"} lines) imports, found by its format, with its
// turns and the cwd of its environment context; a second import adds nothing. TestFollowEqualsImport follows it.
func TestImportCodexLegacy(t *testing.T) {
	src := filepath.Join("testdata", "codex-legacy")
	s, res, before := importFresh(t, src, importer.Options{})
	if len(res) != 1 || !res[0].Imported || res[0].Format != "codex" || res[0].Messages != 3 ||
		res[0].SessionID != importer.SessionID("codex", "5973b6c0-94b8-487b-a530-2aeb6098ae0e") {
		t.Fatalf("results: %+v", res)
	}
	got, all := sessionPath(t, s, res[0].SessionID)
	if got != "user assistant toolResult" {
		t.Errorf("roles %s", got)
	}
	// Its working directory is named only in the environment context.
	if m, err := s.Sessions().Metadata(context.Background(), res[0].SessionID); err != nil || m.Cwd != "/home/dev/legacy-project" {
		t.Errorf("cwd %q, %v; want the environment context's", m.Cwd, err)
	}
	for _, want := range []string{"old format question", "old format answer", `"name":"shell"`, `"toolName":"shell"`, `"timestamp":"2025-07-01T10:00:00.000Z"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the session lacks %s", want)
		}
	}
	reimportAddsNothing(t, s, src, before)
}
