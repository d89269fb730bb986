package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/importer"
	"github.com/trovekit/trove/session/tree"
)

func TestImportClaude(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "claude")
	file := filepath.Join(src, "-work-app", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dry, err := importer.Import(ctx, s, []string{src}, importer.Options{DryRun: true})
	if err != nil || len(dry) != 2 || !dry[0].Imported {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := s.Sessions().Load(ctx, dry[0].SessionID); err == nil {
		t.Fatal("dry run wrote a session")
	}
	res, err := importer.Import(ctx, s, []string{src}, importer.Options{From: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !res[0].Imported || res[0].Format != "claude" || res[0].Messages != 7 || res[0].Reason != "" {
		t.Fatalf("import: %+v", res)
	}
	// The sidechain (a subagent's prompt) is a session of its own.
	if r := res[1]; !r.Imported || r.Messages != 1 || r.ParentID != res[0].SessionID {
		t.Errorf("sidechain: %+v", r)
	}
	msgs, err := s.Sessions().LoadMessages(ctx, res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	// The leaf is on the "make it hi" branch: u1 a1 toolResult a2 u4 a4.
	var roles []string
	var all string
	for _, e := range msgs {
		roles = append(roles, e.Role())
		all += string(e.JSON())
	}
	if got := strings.Join(roles, " "); got != "user assistant toolResult assistant user assistant" {
		t.Errorf("path roles: %s", got)
	}
	for _, want := range []string{`"type":"toolCall"`, `"name":"Read"`, `"toolName":"Read"`, `"thinking":"Need to read main.go first."`,
		`"mimeType":"image/png"`, "iVBORw0KGgo", "make it hi", "Done: it says hi.", `"timestamp":1795168801250`} {
		if !strings.Contains(all, want) {
			t.Errorf("imported path lacks %s", want)
		}
	}
	if strings.Contains(all, "make it hello") {
		t.Error("the other branch is on the path")
	}
	h, err := s.Sessions().Load(ctx, res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range h.Session().Entries() {
		if e.Type() == "message" {
			n++
		}
	}
	if got := h.Metadata().Title; got != "Fix the greeting" {
		t.Errorf("title %q, want the summary line's", got)
	}
	// It resumes like a native session: a new turn appends on the leaf.
	if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"and now?","timestamp":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	resumed, err := s.Sessions().LoadMessages(ctx, res[0].SessionID)
	if err != nil || len(resumed) != len(msgs)+1 {
		t.Errorf("resumed: %d messages, %v", len(resumed), err)
	}
	if n != 7 {
		t.Errorf("imported tree has %d messages, want 7 (both branches)", n)
	}
	again, err := importer.Import(ctx, s, []string{src}, importer.Options{})
	if err != nil || len(again) != 2 || again[0].Imported || again[1].Imported {
		t.Errorf("second import: %+v, %v", again, err)
	}
	after, _ := os.ReadFile(file)
	if !bytes.Equal(before, after) {
		t.Error("source file changed")
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep, err)
	}
}

// Bad sources are reported with sentinels and do not stop the good ones.
func TestImportBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good, _ := os.ReadFile(filepath.Join("testdata", "claude", "-work-app", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl"))
	files := map[string]string{
		"a-garbage.jsonl": "\x00\x01 not json\n{\"x\":1}\n",
		"b-nohdr.jsonl":   "{\"type\":\"message\",\"id\":\"1\"}\n",
		"c-good.jsonl":    string(good) + "{\"type\":\"user\",\"uuid\":\"bad\",\"message\":{\"content\":42}}\n{torn",
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	liar := strings.Repeat("ab", 32) // names a blob these bytes are not
	if err := os.WriteFile(filepath.Join(dir, "blobs", liar), []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := importer.Import(ctx, s, []string{dir}, importer.Options{From: "claude"})
	if !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("lying blob: %v, want cas.ErrCorrupt", err)
	}
	imported := 0
	for _, r := range res {
		if r.Imported && r.ParentID == "" {
			imported++
			if r.Messages != 7 || !strings.Contains(r.Reason, "1 damaged lines skipped") {
				t.Errorf("good file: %+v", r)
			}
		}
	}
	if imported != 1 {
		t.Errorf("imported %d sessions, want the good one: %+v", imported, res)
	}
	if _, err := importer.Import(ctx, s, []string{filepath.Join(dir, "b-nohdr.jsonl")}, importer.Options{From: "pi"}); !errors.Is(err, tree.ErrInvalid) {
		t.Errorf("pi file without a header: %v, want tree.ErrInvalid", err)
	}
	if _, err := importer.Import(ctx, s, []string{filepath.Join(dir, "missing")}, importer.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

// Claude Code sidechains, inline or in a subagents/ file, become sessions
// of their own whose parent is the main session.
func TestImportClaudeSidechains(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "claude-sidechain")
	s, res, before := importFresh(t, src, importer.Options{})
	if len(res) != 3 {
		t.Fatalf("results: %+v", res)
	}
	main, inline, file := res[0], res[1], res[2]
	if !main.Imported || main.Messages != 4 || main.ParentID != "" {
		t.Errorf("main: %+v", main)
	}
	for _, r := range []importer.Result{inline, file} {
		if !r.Imported || r.ParentID != main.SessionID {
			t.Errorf("subagent %s: %+v, want parent %s", r.Source, r, main.SessionID)
		}
	}
	if inline.Messages != 4 || file.Messages != 2 {
		t.Errorf("subagent messages: %d and %d, want 4 and 2", inline.Messages, file.Messages)
	}
	texts := func(id string) string {
		msgs, err := s.Sessions().LoadMessages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var all string
		for _, e := range msgs {
			all += e.Role() + " " + string(e.JSON()) + "\n"
		}
		return all
	}
	if got := texts(main.SessionID); strings.Contains(got, "func search") || !strings.Contains(got, `"name":"Task"`) {
		t.Errorf("main session holds the sidechain or lacks the Task call:\n%s", got)
	}
	got := texts(inline.SessionID)
	for _, want := range []string{"report the culprit", `"name":"Grep"`, `"toolName":"Grep"`, "add an index"} {
		if !strings.Contains(got, want) {
			t.Errorf("inline subagent lacks %s:\n%s", want, got)
		}
	}
	meta, err := s.Sessions().Metadata(ctx, inline.SessionID)
	if err != nil || meta.Title != "subagent: Profile the search handler" || meta.ParentID != main.SessionID {
		t.Errorf("inline subagent metadata: %+v %v", meta, err)
	}
	if got := texts(file.SessionID); !strings.Contains(got, "applies cleanly") {
		t.Errorf("subagent file: %s", got)
	}
	reimportAddsNothing(t, s, src, before)
	if rep, err := s.Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep, err)
	}
}

// A directory holding several agents' roots imports each, the pi root's
// blobs/ included though it lies below the path given.
func TestImportMixedTree(t *testing.T) {
	s, res, before := importFresh(t, "testdata", importer.Options{})
	formats := map[string]int{}
	for _, r := range res {
		if !r.Imported {
			t.Errorf("not imported: %+v", r)
		}
		formats[r.Format]++
	}
	if formats["blobs"] != 2 || formats["claude"] != 6 || formats["codex"] != 3 || formats["pi"] != 4 || formats["spec002"] != 3 {
		t.Errorf("formats %v", formats)
	}
	if rep, err := s.Check(context.Background()); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep.Problems, err)
	}
	reimportAddsNothing(t, s, "testdata", before)
}
