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
	// The leaf is on the "make it hi" branch: u1 a1 toolResult a2 u4 a4.
	got, all := sessionPath(t, s, res[0].SessionID)
	if got != "user assistant toolResult assistant user assistant" {
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
	if err != nil || len(resumed) != len(strings.Fields(got))+1 {
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
	if meta, err := s.Sessions().Metadata(ctx, file.SessionID); err != nil || meta.Title != "subagent: Check the migration" {
		t.Errorf("subagent file's metadata: %+v %v", meta, err)
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
	if formats["blobs"] != 2 || formats["claude"] != 8 || formats["codex"] != 5 || formats["pi"] != 4 || formats["agent-jsonl"] != 3 {
		t.Errorf("formats %v", formats)
	}
	if rep, err := s.Check(context.Background()); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep.Problems, err)
	}
	reimportAddsNothing(t, s, "testdata", before)
}

// A tool output over the threshold is stored as a blob the way the session
// store keeps one (a stub and textRef), and loads back whole.
func TestImportBigToolOutput(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line of a long build log\n", 5000) // 125 KB
	out, _ := json.Marshal(big)
	lines := `{"parentUuid":null,"isSidechain":false,"cwd":"/w","sessionId":"s","type":"user","message":{"role":"user","content":"build it"},"uuid":"u1","timestamp":"2026-11-20T10:00:00.000Z"}
{"parentUuid":"u1","isSidechain":false,"cwd":"/w","sessionId":"s","type":"assistant","message":{"id":"m1","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"},"uuid":"a1","timestamp":"2026-11-20T10:00:01.000Z"}
{"parentUuid":"a1","isSidechain":false,"cwd":"/w","sessionId":"s","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + string(out) + `}]},"uuid":"u2","timestamp":"2026-11-20T10:00:02.000Z"}
`
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	s, res, _ := importFresh(t, dir, importer.Options{})
	if len(res) != 1 || !res[0].Imported || res[0].Messages != 3 {
		t.Fatalf("results: %+v", res)
	}
	ctx := context.Background()
	meta, err := s.Sessions().Metadata(ctx, res[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.Storage().ReadFile(ctx, meta.Path)
	if err != nil || len(raw) > 10_000 || !bytes.Contains(raw, []byte(`"textRef":"blob:sha256:`)) {
		t.Fatalf("the session file holds %d bytes, the output not as a blob (%v)", len(raw), err)
	}
	msgs, err := s.Sessions().LoadMessages(ctx, res[0].SessionID)
	if err != nil || len(msgs) != 3 || !strings.Contains(string(msgs[2].JSON()), strings.Repeat("line of a long build log\\n", 100)) {
		t.Errorf("the tool output did not load back: %v", err)
	}
}

// A source that grew (an agent went on with the session) brings its
// session up to date on the next import, under the same id; a session
// changed in trove since, or a source changed other than by added lines,
// is left as it is, and said so.
func TestImportGrownSource(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "-work-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	orig, err := os.ReadFile(filepath.Join("testdata", "claude", "-work-app", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	s, res, _ := importFresh(t, dir, importer.Options{})
	id := res[0].SessionID
	grow := func(more string) []importer.Result {
		t.Helper()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(more)
		f.Close()
		dry, err := importer.Import(ctx, s, []string{dir}, importer.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := importer.Import(ctx, s, []string{dir}, importer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if dry[0].Updated != res[0].Updated || dry[0].Reason != res[0].Reason {
			t.Errorf("the dry run said %+v, the import did %+v", dry[0], res[0])
		}
		return res
	}
	res = grow(`{"parentUuid":"a4","isSidechain":false,"cwd":"/work/app","sessionId":"5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90","type":"user","message":{"role":"user","content":"and a test?"},"uuid":"u5","timestamp":"2026-11-20T10:00:07.000Z"}
{"parentUuid":"u5","isSidechain":false,"cwd":"/work/app","sessionId":"5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90","type":"assistant","message":{"role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Test added."}],"stop_reason":"end_turn"},"uuid":"a5","timestamp":"2026-11-20T10:00:08.000Z"}
`)
	if !res[0].Updated || res[0].SessionID != id || res[0].Messages != 9 {
		t.Fatalf("grown source: %+v", res[0])
	}
	msgs, err := s.Sessions().LoadMessages(ctx, id)
	if err != nil || len(msgs) != 8 || !strings.Contains(string(msgs[7].JSON()), "Test added.") {
		t.Fatalf("updated session: %d messages on the path, %v", len(msgs), err)
	}
	if again, err := importer.Import(ctx, s, []string{dir}, importer.Options{}); err != nil || again[0].Imported || again[0].Reason != "already imported" {
		t.Errorf("third import: %+v %v", again, err)
	}
	// Resumed in trove: the next growth leaves it alone.
	h, err := s.Sessions().Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"from trove","timestamp":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res = grow(`{"parentUuid":"a5","isSidechain":false,"cwd":"/work/app","sessionId":"5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90","type":"user","message":{"role":"user","content":"more"},"uuid":"u6","timestamp":"2026-11-20T10:00:09.000Z"}
`)
	if res[0].Imported || !strings.Contains(res[0].Reason, "changed in trove") {
		t.Errorf("a session changed in trove: %+v", res[0])
	}
	if msgs, _ := s.Sessions().LoadMessages(ctx, id); len(msgs) != 9 || !strings.Contains(string(msgs[8].JSON()), "from trove") {
		t.Errorf("the session changed in trove was overwritten: %d messages", len(msgs))
	}
	// Rewritten at the source (not only grown): left as imported.
	if err := os.WriteFile(file, orig[:len(orig)-200], 0o644); err != nil {
		t.Fatal(err)
	}
	res = grow("")
	if res[0].Imported || !strings.Contains(res[0].Reason, "beyond lines added") {
		t.Errorf("a rewritten source: %+v", res[0])
	}
	if rep, err := s.Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check: %+v %v", rep.Problems, err)
	}
}
