package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trovekit/trove/importer"
)

const userSettings = `{
  "model": "opus",
  "permissions": {"allow": ["Bash(go test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh", "timeout": 5}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "gofmt -l ."}]}
    ]
  },
  "statusLine": {"type": "command", "command": "echo hi"}
}
`

// TestHooksInstallKeepsSettings installs trove's hooks into settings
// holding the user's own and keys trove does not know: everything stays,
// in its order; a second install changes nothing; uninstall leaves the
// settings as they were.
func TestHooksInstallKeepsSettings(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(userSettings), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := trove(t, "", "hooks", "install", "claude", "--project"); code != 0 {
		t.Fatalf("install: %d %s", code, errOut)
	}
	once, _ := os.ReadFile(path)
	var s struct {
		Model string         `json:"model"`
		Perm  map[string]any `json:"permissions"`
		Hooks map[string][]struct {
			Matcher string       `json:"matcher"`
			Hooks   []claudeHook `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(once, &s); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	pre := s.Hooks["PreToolUse"]
	if s.Model != "opus" || s.Perm == nil || len(pre) != 2 || pre[0].Hooks[0].Command != "~/bin/audit.sh" || len(s.Hooks["PostToolUse"]) != 1 {
		t.Fatalf("the user's settings were not kept:\n%s", once)
	}
	if pre[1].Matcher != "Write|Edit|MultiEdit|NotebookEdit|Bash" || pre[1].Hooks[0].Command != shellQuote(exe)+claudeAgent().marker() {
		t.Fatalf("trove's PreToolUse entry: %+v", pre[1])
	}
	for _, ev := range []string{"Stop", "SessionEnd"} {
		if g := s.Hooks[ev]; len(g) != 1 || !strings.HasSuffix(g[0].Hooks[0].Command, claudeAgent().marker()) {
			t.Fatalf("%s: %+v", ev, g)
		}
	}
	if i, j := bytes.Index(once, []byte(`"model"`)), bytes.Index(once, []byte(`"statusLine"`)); i < 0 || j < i {
		t.Fatalf("keys reordered:\n%s", once)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	trove(t, "", "hooks", "install", "claude")
	if twice, _ := os.ReadFile(path); !bytes.Equal(once, twice) {
		t.Fatalf("a second install changed the settings:\n%s\n%s", once, twice)
	}
	if code, out, _ := trove(t, "", "hooks", "status"); code != 0 || !strings.Contains(out, "installed: "+shellQuote(exe)) {
		t.Fatalf("status: %d %s", code, out)
	}
	trove(t, "", "hooks", "uninstall", "claude")
	back, _ := os.ReadFile(path)
	var want, got any
	json.Unmarshal([]byte(userSettings), &want)
	json.Unmarshal(back, &got)
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		t.Fatalf("uninstall left\n%s\nwant\n%s", back, userSettings)
	}
}

// workspaceState is every path under dir: its type, mode and content.
func workspaceState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameState(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s is %q, want %q", what, p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s should not be there", what, p)
		}
	}
}

// TestHooksCheckpointBeforeEachCall drives the real binary with recorded
// Claude Code hook payloads around a workspace the test changes as each
// tool would: one checkpoint per file-changing call, none for Read;
// rewind --before the `rm -rf src` restores every byte and mode, and the
// rewind is undone; Stop imports the transcript; bad input still exits 0.
func TestHooksCheckpointBeforeEachCall(t *testing.T) {
	bin := buildTrove(t)
	ws, store, state := t.TempDir(), filepath.Join(t.TempDir(), "store"), t.TempDir()
	transcript := filepath.Join(t.TempDir(), "9a1f0c3e-4b2d-4e8f-a6c1-7d5e3b2a1f90.jsonl")
	rec, err := os.ReadFile("../../../importer/testdata/claude/-work-app/5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(transcript, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]struct {
		mode fs.FileMode
		data string
	}{
		"src/main.go":      {0o644, "package src\n\nfunc Answer() int { return 41 }\n"},
		"src/run.sh":       {0o755, "#!/bin/sh\necho run\n"},
		"src/deep/key.pem": {0o600, "secret\n"},
		"README.md":        {0o644, "the old way\n"},
	}
	for p, f := range files {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(full, f.mode)
	}
	env := append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+t.TempDir(), "CLAUDE_PROJECT_DIR=")
	run := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("trove %v: %v", args, err)
		}
		return string(out)
	}
	hook := func(name string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "hooks", name))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("$CWD"), []byte(ws))
		b = bytes.ReplaceAll(b, []byte("$TRANSCRIPT"), []byte(transcript))
		run(b, "hooks", "run", "claude")
	}
	// Each tool's change, made after its hook returned.
	hook("1-write.json")
	os.WriteFile(filepath.Join(ws, "src/new.go"), []byte("package src\n\nfunc New() int { return 1 }\n"), 0o644)
	hook("2-edit.json")
	os.WriteFile(filepath.Join(ws, "src/main.go"), []byte("package src\n\nfunc Answer() int { return 42 }\n"), 0o644)
	hook("3-read.json")
	hook("4-rm.json")
	beforeRm := workspaceState(t, ws)
	if err := os.RemoveAll(filepath.Join(ws, "src")); err != nil {
		t.Fatal(err)
	}
	hook("5-sed.json")
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("the new way\n"), 0o644)
	after := workspaceState(t, ws)
	// Before the Stop hook imports the session, the id Claude Code gave it
	// names the checkpoints its hooks took.
	claudeID := "9a1f0c3e-4b2d-4e8f-a6c1-7d5e3b2a1f90"
	var early []checkpointJSON
	if err := json.Unmarshal([]byte(run(nil, "--json", "checkpoint", "ls", "--session", claudeID, "--dir", ws)), &early); err != nil || len(early) != 4 {
		t.Fatalf("checkpoint ls --session of a session not imported yet: %v %+v", err, early)
	}
	hook("6-stop.json")
	run([]byte("{not json"), "hooks", "run", "claude")

	var cps []checkpointJSON
	if err := json.Unmarshal([]byte(run(nil, "--json", "checkpoint", "ls", "--dir", ws)), &cps); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"toolu_01Wr1teN3wF1le7x9q2LmK4p": "Write: " + ws + "/src/new.go", "toolu_02Ed1tMa1nG0aB3cD4eF5gH6": "Edit: " + ws + "/src/main.go",
		"toolu_04RmRfSrcXyZ0123456789ab": "Bash: rm -rf src", "toolu_05SedInPlaceReadmeAbCdEf": "Bash: sed -i 's/old/new/g' README.md"}
	if len(cps) != len(want) {
		t.Fatalf("checkpoints: %+v, want one per file-changing call", cps)
	}
	sid := importer.SessionID("claude", "9a1f0c3e-4b2d-4e8f-a6c1-7d5e3b2a1f90")
	for _, c := range cps {
		if want[c.ID] != c.Note || c.Session != sid {
			t.Errorf("checkpoint %s: note %q session %q, want %q and %s", c.ID, c.Note, c.Session, want[c.ID], sid)
		}
	}
	if ls := run(nil, "checkpoint", "ls", "--dir", ws); !strings.Contains(ls, "before Bash: rm -rf src") {
		t.Errorf("checkpoint ls does not say which call each precedes:\n%s", ls)
	}

	run(nil, "checkpoint", "rewind", "--before", "toolu_04RmRfSrcXyZ0123456789ab", "--dir", ws)
	sameState(t, "rewound before rm -rf src", beforeRm, workspaceState(t, ws))
	run(nil, "checkpoint", "rewind", "--undo", "--dir", ws)
	sameState(t, "the rewind undone", after, workspaceState(t, ws))

	if out := run(nil, "--json", "ls", "--all"); !strings.Contains(out, sid) {
		t.Errorf("Stop did not import the transcript as %s:\n%s", sid, out)
	}

	// The session's listing holds the checkpoints its hooks took (kept
	// with the workspace's), not the workspace's others; show and rewind
	// find them through the session too.
	run(nil, "checkpoint", "create", "--dir", ws, "unlinked")
	cps = nil
	if err := json.Unmarshal([]byte(run(nil, "--json", "checkpoint", "ls", "--session", sid, "--dir", ws)), &cps); err != nil {
		t.Fatal(err)
	}
	if len(cps) != len(want) {
		t.Fatalf("checkpoint ls --session: %+v, want the %d the hooks took", cps, len(want))
	}
	for _, c := range cps {
		if want[c.ID] != c.Note || c.Workspace != ws {
			t.Errorf("checkpoint ls --session: %+v, want note %q in %s", c, want[c.ID], ws)
		}
	}
	if out := run(nil, "checkpoint", "show", "--session", sid, "--dir", ws, "toolu_04RmRfSrcXyZ0123456789ab"); !strings.Contains(out, "src/main.go") {
		t.Errorf("checkpoint show --session of a hook's checkpoint:\n%s", out)
	}
	if out := run(nil, "checkpoint", "rewind", "--session", sid, "--dir", ws, "--dry-run", "--before", "toolu_04RmRfSrcXyZ0123456789ab"); !strings.Contains(out, "would rewind") {
		t.Errorf("checkpoint rewind --session --before of a hook's checkpoint:\n%s", out)
	}
	run(nil, "checkpoint", "rewind", "--session", sid, "--dir", ws, "--before", "toolu_04RmRfSrcXyZ0123456789ab")
	sameState(t, "rewound before rm -rf src through --session", beforeRm, workspaceState(t, ws))
	run(nil, "checkpoint", "rewind", "--session", sid, "--dir", ws, "--undo")
	sameState(t, "that rewind undone through --session", after, workspaceState(t, ws))
	if out := run(nil, "show", claudeID); !strings.Contains(out, sid) {
		t.Errorf("show by Claude Code's session id:\n%s", out)
	}
	if out := run(nil, "checkpoint", "ls", "--session", claudeID, "--dir", ws); strings.Count(out, "before ") != len(want) {
		t.Errorf("checkpoint ls --session by Claude Code's session id:\n%s", out)
	}
	for _, args := range [][]string{{"show", "0badc0de-0000-4000-8000-000000000000"}, {"checkpoint", "ls", "--session", "0badc0de-0000-4000-8000-000000000000", "--dir", ws}} {
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not exist") {
			t.Errorf("%v, a session nobody knows: %v\n%s", args, err, out)
		}
	}
	cmd := exec.Command(bin, "--store", store, "checkpoint", "show", "--session", sid, "--dir", ws, "unlinked")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not found") {
		t.Errorf("checkpoint show --session of a checkpoint not linked to it: %v\n%s", err, out)
	}
	logged, err := os.ReadFile(filepath.Join(state, "trove", "hooks.log"))
	if err != nil || bytes.Count(logged, []byte("\n")) != 1 {
		t.Errorf("the hooks' log should hold the one bad payload: %v\n%s", err, logged)
	}
	if out := run(nil, "hooks", "status"); !strings.Contains(out, "recent hook failures") {
		t.Errorf("status does not show the failure:\n%s", out)
	}
}

// TestHooksCodex installs trove's entries into a project's
// .codex/hooks.json and runs recorded Codex payloads: a checkpoint before
// the Bash call, linked to the session an import of the rollout makes,
// which Stop imports.
func TestHooksCodex(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if code, _, errOut := trove(t, "", "hooks", "install", "codex"); code != 0 {
		t.Fatalf("install: %d %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".codex", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string       `json:"matcher"`
			Hooks   []claudeHook `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if pre := s.Hooks["PreToolUse"]; len(pre) != 1 || pre[0].Matcher != "Bash|apply_patch" || !strings.HasSuffix(pre[0].Hooks[0].Command, " hooks run codex") ||
		len(s.Hooks["Stop"]) != 1 {
		t.Fatalf("hooks.json:\n%s", data)
	}

	ws, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(filepath.Join(ws, "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "gen", "out.bin"), []byte("built\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	transcript := filepath.Join(here, "../../../importer/testdata/codex/2026/11/20/rollout-2026-11-20T11-00-00-0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b.jsonl")
	for _, name := range []string{"codex-pre.json", "codex-stop.json"} {
		b, err := os.ReadFile(filepath.Join(here, "testdata", "hooks", name))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("$CWD"), []byte(ws))
		b = bytes.ReplaceAll(b, []byte("$TRANSCRIPT"), []byte(transcript))
		if code, _, _ := trove(t, string(b), "--store", store, "hooks", "run", "codex"); code != 0 {
			t.Fatalf("%s: exit %d", name, code)
		}
	}
	os.RemoveAll(filepath.Join(ws, "gen"))
	cps := hookCheckpoints(t, store, ws)
	sid := importer.SessionID("codex", "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b")
	if len(cps) != 1 || cps[0].ID != "call_7Gx2KqLmNpRsTuVw" || cps[0].Note != "Bash: rm -rf gen" || cps[0].Session != sid {
		t.Fatalf("checkpoints: %+v", cps)
	}
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--before", "call_7Gx2KqLmNpRsTuVw", "--dir", ws); code != 0 {
		t.Fatalf("rewind: %s", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "gen", "out.bin")); err != nil || string(b) != "built\n" {
		t.Fatalf("gen/out.bin after the rewind: %q %v", b, err)
	}
	if _, out, _ := trove(t, "", "--store", store, "--json", "ls", "--all"); !strings.Contains(out, sid) {
		t.Fatalf("Stop did not import the rollout as %s:\n%s", sid, out)
	}
}

// A Write of a file bigger than any cap on the payload still gets its
// checkpoint, delivered twice it keeps the first, and rewinding before a call no hook saw fails clearly,
// printing no "rewound".
func TestHooksHugePayloadAndUnknownCall(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(map[string]any{"session_id": "9a1f0c3e-4b2d-4e8f-a6c1-7d5e3b2a1f90", "cwd": ws, "hook_event_name": "PreToolUse",
		"tool_name": "Write", "tool_use_id": "toolu_big", "an_unknown_field": []int{1, 2},
		"tool_input": map[string]string{"file_path": filepath.Join(ws, "big.txt"), "content": strings.Repeat("x", 17<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := trove(t, string(in), "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	cps := hookCheckpoints(t, store, ws)
	if len(cps) != 1 || cps[0].ID != "toolu_big" {
		t.Fatalf("checkpoints after a 17 MiB Write payload: %+v", cps)
	}
	// The same payload again after the tool ran keeps the checkpoint
	// taken before it.
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed by the tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := trove(t, string(in), "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--before", "toolu_big", "--dir", ws); code != 0 {
		t.Fatalf("rewind: %s", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("a.txt rewound before a call whose hook ran twice: %q %v", b, err)
	}
	// A payload without a tool_use_id still gets a checkpoint.
	noID := `{"session_id":"s","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm a.txt"}}`
	if code, _, _ := trove(t, noID, "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	cps = hookCheckpoints(t, store, ws)
	found := 0
	for _, c := range cps {
		if strings.HasPrefix(c.ID, "pre-") && c.Note == "Bash: rm a.txt" {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("checkpoints after a payload without tool_use_id: %+v", cps)
	}
	// Fields of other types than expected are read, not the payload
	// refused: a numeric tool_use_id names its checkpoint, a null
	// session_id is none, Codex's argv command is noted joined.
	odd := `{"session_id":null,"cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":4711,` +
		`"tool_input":{"command":["bash","-lc","rm -rf src"]},"transcript_path":{"x":1}}`
	if code, _, _ := trove(t, odd, "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	cps = hookCheckpoints(t, store, ws)
	if i := slices.IndexFunc(cps, func(c checkpointJSON) bool { return c.ID == "4711" }); i < 0 || cps[i].Note != "Bash: bash -lc rm -rf src" {
		t.Fatalf("checkpoints after a payload with odd field types: %+v", cps)
	}
	code, out, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--before", "toolu_never", "--dir", ws)
	if code != exitFailure || strings.Contains(out, "rewound") || !strings.Contains(errOut, "toolu_never") {
		t.Fatalf("rewind --before an unknown call: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("a.txt after the failed rewind: %q %v", b, err)
	}
}

// A hook given the workspace through a link (or its physical path, as an
// agent's cwd is, while the user's shell names it through a link) keeps
// checkpoints the other path finds.
func TestHooksWorkspaceThroughLink(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	base, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(real, "a.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := `{"session_id":"s","cwd":"` + real + `","hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"a.txt"},"tool_use_id":"toolu_link"}`
	if code, _, _ := trove(t, in, "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("hook exit %d", code)
	}
	if err := os.WriteFile(filepath.Join(real, "a.txt"), []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--before", "toolu_link", "--dir", link); code != 0 {
		t.Fatalf("rewind through the link: %s", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(real, "a.txt")); err != nil || string(b) != "before\n" {
		t.Fatalf("a.txt after the rewind: %q %v", b, err)
	}
	// From a subdirectory: the error names the workspace that has it.
	sub := filepath.Join(real, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := trove(t, "", "--store", store, "checkpoint", "rewind", "--before", "toolu_link", "--dir", sub)
	if code != exitFailure || !strings.Contains(errOut, "--dir "+shellQuote(real)) {
		t.Fatalf("rewind --before from a subdirectory: exit %d, %s", code, errOut)
	}
}

// A store named by a relative path at install is named absolutely in the
// entries: the agent runs them in its own cwd. URLs stay as given.
func TestHooksInstallStorePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, ".claude", "settings.json")
	abs, err := filepath.Abs(filepath.Join("rel", "store"))
	if err != nil {
		t.Fatal(err)
	}
	// A colon without "//" is a path to the store opener, so here too.
	colon, err := filepath.Abs("rel:store")
	if err != nil {
		t.Fatal(err)
	}
	for store, want := range map[string]string{"rel/store": abs, "rel:store": colon, "mem://": "mem://"} {
		if code, _, errOut := trove(t, "", "--store", store, "hooks", "install", "claude", "--project"); code != 0 {
			t.Fatalf("install: %d %s", code, errOut)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Hooks map[string][]struct {
				Hooks []claudeHook `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		if pre := s.Hooks["PreToolUse"]; len(pre) != 1 || !strings.Contains(pre[0].Hooks[0].Command, " --store "+shellQuote(want)+" ") {
			t.Errorf("--store %s: entries %s", store, data)
		}
		if code, _, errOut := trove(t, "", "hooks", "uninstall", "claude", "--project"); code != 0 {
			t.Fatalf("uninstall: %d %s", code, errOut)
		}
	}
}

// hookCheckpoints are the checkpoints of workspace ws in store.
func hookCheckpoints(t *testing.T, store, ws string) []checkpointJSON {
	t.Helper()
	_, out, errOut := trove(t, "", "--store", store, "--json", "checkpoint", "ls", "--dir", ws)
	var cps []checkpointJSON
	if err := json.Unmarshal([]byte(out), &cps); err != nil {
		t.Fatalf("checkpoint ls: %v\n%s", err, errOut)
	}
	return cps
}

// A Stop hook reads a transcript as trove watch does, with its state: a
// transcript grown by a line since the last Stop costs that line, and the
// store ends as a one-shot import of the file makes it.
func TestHooksStopReadsNewBytes(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	store, dir := filepath.Join(t.TempDir(), "store"), t.TempDir()
	data, err := os.ReadFile("../../../importer/testdata/claude/-work-app/5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	half := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
	stop := `{"session_id":"5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90","transcript_path":"` + path + `","cwd":"/work/app","hook_event_name":"Stop"}`
	for _, at := range []struct{ from, size int }{{0, half}, {half, len(data)}} {
		if err := os.WriteFile(path, data[:at.size], 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := trove(t, stop, "--log-level", "debug", "--store", store, "hooks", "run", "claude")
		read := `msg="trove watch: read" source=` + path + " from=" + strconv.Itoa(at.from) + " offset=" + strconv.Itoa(at.size)
		if code != 0 || !strings.Contains(errOut, read) {
			t.Fatalf("Stop with the transcript at %d bytes: exit %d, want %q in\n%s", at.size, code, read, errOut)
		}
	}
	// A transcript that is not there is a failure the log shows.
	gone := strings.Replace(stop, path, filepath.Join(dir, "gone.jsonl"), 1)
	if code, _, _ := trove(t, gone, "--store", store, "hooks", "run", "claude"); code != 0 {
		t.Fatalf("Stop of a missing transcript: exit %d", code)
	}
	if _, out, _ := trove(t, "", "--store", store, "hooks", "status"); !strings.Contains(out, "gone.jsonl: no such file") {
		t.Errorf("hooks status after a Stop of a missing transcript:\n%s", out)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	if code, out, errOut := trove(t, "", "--store", ref, "import", path); code != 0 {
		t.Fatalf("import: %s%s", out, errOut)
	}
	want, got := sessionFiles(t, ref), sessionFiles(t, store)
	if len(want) < 4 || len(got) != len(want) {
		t.Fatalf("%d session files after the hooks, %d after an import", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nimport: %.1000s\nhooks:  %.1000s", name, w, got[name])
		}
	}
}

// Hooks on an encrypted store: a hook cannot ask for a passphrase, so
// install (and watch --install) refuses until a key file can open the store, warns of a key
// file wrapped with scrypt (80 ms a tool call), and is quiet for a
// generated one, with which a hook then takes its checkpoint.
func TestHooksInstallEncryptedStore(t *testing.T) {
	config, project, ws := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv(envPassword, "pw1")
	if code, _, errOut := trove(t, "", "--store", store, "init", "--encrypt"); code != exitOK {
		t.Fatalf("init: %s", errOut)
	}
	t.Chdir(project)
	settings := filepath.Join(project, ".claude", "settings.json")
	install := func() (int, string, string) {
		return trove(t, "", "--store", store, "hooks", "install", "claude", "--project")
	}

	t.Setenv(envPassword, "")
	if code, _, errOut := install(); code == exitOK || !strings.Contains(errOut, "trove key add --generate-key-file") {
		t.Fatalf("install without a key file: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(settings); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused install wrote %s: %v", settings, err)
	}
	if code, out, _ := trove(t, "", "--store", store, "hooks", "status"); code != exitOK || !strings.Contains(out, "store: ") || !strings.Contains(out, "--generate-key-file") {
		t.Fatalf("hooks status without a key file: exit %d, %s", code, out)
	}
	// So is the watch service, which cannot ask either.
	if code, _, errOut := trove(t, "", "--store", store, "watch", "--install"); code == exitOK || !strings.Contains(errOut, "the watch service cannot ask") {
		t.Fatalf("watch --install without a key file: exit %d, %s", code, errOut)
	}
	keyFile := filepath.Join(config, "trove", "key")
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(keyFile, []byte("not the passphrase\n"), 0o600)
	if code, _, errOut := install(); code == exitOK || !strings.Contains(errOut, "does not open") {
		t.Fatalf("install with a wrong key file: exit %d, %s", code, errOut)
	}
	// A passphrase in the key file works, at scrypt's cost: said.
	os.WriteFile(keyFile, []byte("pw1\n"), 0o600)
	if code, out, errOut := install(); code != exitOK || !strings.Contains(out, "warning") || !strings.Contains(out, "scrypt") {
		t.Fatalf("install with a passphrase's key file: exit %d, %s %s", code, out, errOut)
	}
	os.Remove(keyFile)
	t.Setenv(envPassword, "pw1")
	if code, _, errOut := trove(t, "", "--store", store, "key", "add", "--generate-key-file"); code != exitOK {
		t.Fatalf("key add: %s", errOut)
	}
	t.Setenv(envPassword, "")
	if code, out, errOut := install(); code != exitOK || strings.Contains(out, "warning") {
		t.Fatalf("install with a generated key file: exit %d, %s %s", code, out, errOut)
	}
	if code, out, errOut := trove(t, "", "--store", store, "watch", "--install"); code != exitOK || !strings.Contains(out, " watch") {
		t.Fatalf("watch --install with a key file: exit %d, %s %s", code, out, errOut)
	}
	in := `{"session_id":"s1","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"toolu_enc","tool_input":{}}`
	if code, _, _ := trove(t, in, "--store", store, "hooks", "run", "claude"); code != exitOK {
		t.Fatalf("hook exit %d", code)
	}
	if cps := hookCheckpoints(t, store, ws); len(cps) != 1 || cps[0].ID != "toolu_enc" {
		t.Fatalf("the hook's checkpoint on the encrypted store: %+v", cps)
	}
}

// A hook entry or service calls the binary that installed it, later: one
// `go run` built (removed when the run ends) is refused, and status says
// when the binary an entry calls is gone (every hook then fails before
// trove can log anything).
func TestHooksInstallLastingBinary(t *testing.T) {
	built := buildTrove(t)
	project, home := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR=")
	copyTo := func(path string) {
		t.Helper()
		b, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(bin string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = project, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	settings := filepath.Join(project, ".claude", "settings.json")

	goRun := filepath.Join(t.TempDir(), "go-build2113350101", "b001", "exe", "trove")
	copyTo(goRun)
	if out, err := run(goRun, "hooks", "install", "claude"); err == nil || !strings.Contains(out, "go install ./cmd/trove") {
		t.Fatalf("install from a go run build: %v\n%s", err, out)
	}
	if _, err := os.Stat(settings); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused install wrote %s: %v", settings, err)
	}
	if out, err := run(goRun, "watch", "--install"); err == nil || !strings.Contains(out, "go run removes") {
		t.Fatalf("watch --install from a go run build: %v\n%s", err, out)
	}

	kept := filepath.Join(t.TempDir(), "it's here", "trove")
	copyTo(kept)
	if out, err := run(kept, "hooks", "install", "claude"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err := run(built, "hooks", "status"); err != nil || strings.Contains(out, "is gone") || !strings.Contains(out, "installed: "+shellQuote(kept)) {
		t.Fatalf("status with the binary in place: %v\n%s", err, out)
	}
	os.Remove(kept)
	if out, err := run(built, "hooks", "status"); err != nil || !strings.Contains(out, kept+" is gone") {
		t.Fatalf("status once the binary is gone: %v\n%s", err, out)
	}
}

func TestFirstWord(t *testing.T) {
	for _, p := range []string{"/usr/local/bin/trove", "/home/me/my tools/trove", "/it's/a 'quoted'/trove", "/x'"} {
		for _, rest := range []string{"", " --store /s" + claudeAgent().marker()} {
			if got := firstWord(shellQuote(p) + rest); got != p {
				t.Errorf("firstWord(%q) = %q, want %q", shellQuote(p)+rest, got, p)
			}
		}
	}
	for exe, want := range map[string]bool{"/tmp/go-build2113350101/b001/exe/trove": true, "/tmp/go-build1/b001/cli.test": false, "/usr/bin/trove": false, "/exe/trove": false} {
		if goRunBuild(exe) != want {
			t.Errorf("goRunBuild(%s) = %v", exe, !want)
		}
	}
}
