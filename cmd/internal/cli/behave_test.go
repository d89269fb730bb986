package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTyposAreUsageErrors(t *testing.T) {
	store := t.TempDir()
	for _, args := range [][]string{
		{"checkpoint", "lst"}, {"runs", "lst"}, {"blob", "foo"}, {"session", "ctx"}, {"files", "lss"}, {"nosuch"},
		{"ls", "--nosuch"}, {"runs", "ls", "--limit", "x"}, {"completion", "nosh"}, {"serve", "extra"}, {"demo", "extra"},
		{"export", "x", "--format", "nope"}, {"mirror", "onlyone"}, {"import", "--from", "nope", "x"}, {"gc", "--grace", "x"},
	} {
		code, out, errOut := trove(t, "", append([]string{"--store", store}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stdout %q)", args, code, exitUsage, out)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 || errOut == "" {
			t.Errorf("%v: stderr is not one line: %q", args, errOut)
		}
	}
	// A group without a subcommand still shows its help.
	if code, out, _ := trove(t, "", "--store", store, "checkpoint"); code != exitOK || !strings.Contains(out, "rewind") {
		t.Errorf("checkpoint alone: %d %q", code, out)
	}
}

func TestReadersNeverCreateAStore(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "relative", "typo")
	for _, args := range [][]string{{"ls"}, {"ls", "--all"}, {"show", "01a2"}, {"blob", "verify"}, {"fsck"}, {"runs", "ls"}, {"files", "ls"}} {
		code, _, errOut := trove(t, "", append([]string{"--store", typo}, args...)...)
		if code == exitOK || !strings.Contains(errOut, "no store at "+typo) {
			t.Errorf("%v on a missing store: exit %d, %q", args, code, errOut)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%v created the store", args)
		}
	}
	// Writers do create it.
	if code, _, errOut := trove(t, "", "--store", typo, "blob", "put", "-"); code != exitOK {
		t.Fatalf("blob put on a new store: %s", errOut)
	}
}

func TestJSONErrors(t *testing.T) {
	code, _, errOut := trove(t, "", "--store", t.TempDir(), "--json", "show", "nosuch")
	if code == exitOK {
		t.Fatal("show of a missing session succeeded")
	}
	var e errorJSON
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error == "" || e.Code != code {
		t.Fatalf("error under --json is not one JSON object: %q (%v)", errOut, err)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := trove(t, "", "--version")
	if code != exitOK || !strings.HasPrefix(out, "trove version ") {
		t.Errorf("--version: %d %q", code, out)
	}
}

// A read command never writes outside the store: a session file on disk is
// read in place, nothing is created beside it, and an old version is not
// migrated on disk.
func TestSessionContextReadsInPlace(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a", "newdir", "x.jsonl")
	if code, _, _ := trove(t, "", "--store", filepath.Join(dir, "store"), "session", "context", missing); code == exitOK {
		t.Error("context of a missing file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Fatal("session context created a directory")
	}
	v1 := filepath.Join(dir, "old.jsonl")
	body := `{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n"
	if err := os.WriteFile(v1, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := trove(t, "", "--store", filepath.Join(dir, "nostore"), "session", "context", v1)
	if code != exitOK || !strings.Contains(out, `"hi"`) {
		t.Fatalf("context of a v1 file: %d %s %s", code, out, errOut)
	}
	if got, _ := os.ReadFile(v1); string(got) != body {
		t.Error("session context rewrote the file it read")
	}
	if _, err := os.Stat(filepath.Join(dir, "nostore")); err == nil {
		t.Error("session context of a file created the store")
	}
}

func TestSessionCheck(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TROVE_HOME", home)
	if code, _, errOut := trove(t, "", "demo"); code != exitOK {
		t.Fatal(errOut)
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("demo sessions: %v", files)
	}
	for _, f := range files {
		if code, out, errOut := trove(t, "", "session", "check", f); code != exitOK {
			t.Errorf("%s: %d %s %s", f, code, out, errOut)
		}
	}
	data, _ := os.ReadFile(files[0])
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	noMillis := regexp.MustCompile(`(T\d{2}:\d{2}:\d{2})\.\d{3}Z"`)
	if err := os.WriteFile(bad, []byte(noMillis.ReplaceAllString(string(data), `${1}Z"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := trove(t, "", "session", "check", bad); code != exitFailure || !strings.Contains(errOut, "milliseconds") {
		t.Errorf("a damaged file: exit %d, %s", code, errOut)
	}
}

// Every --json output parses, with one naming scheme: snake_case keys and
// times with milliseconds (stored formats passed through excepted: the
// messages of show and session context).
func TestJSONOutputs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TROVE_HOME", home)
	code, out, errOut := trove(t, "", "--json", "demo")
	if code != exitOK {
		t.Fatalf("demo --json: %s", errOut)
	}
	var demo map[string]any
	if err := json.Unmarshal([]byte(out), &demo); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	ws, session, run := demo["workspace"].(string), demo["session"].(string), demo["run"].(string)
	key := regexp.MustCompile(`^[a-z0-9_]+$`)
	stamp := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`)
	millis := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{2}:\d{2})$`)
	var walk func(cmd string, v any)
	walk = func(cmd string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if !key.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", cmd, k)
				}
				if (cmd == "show" || cmd == "session") && k == "messages" {
					continue
				}
				walk(cmd, val)
			}
		case []any:
			for _, val := range x {
				walk(cmd, val)
			}
		case string:
			if stamp.MatchString(x) && !millis.MatchString(x) {
				t.Errorf("%s: time %q without milliseconds", cmd, x)
			}
		}
	}
	for _, args := range [][]string{
		{"ls", "--all"}, {"show", session}, {"runs", "ls"}, {"runs", "show", run}, {"checkpoint", "ls", "--dir", ws, "--session", session},
		{"checkpoint", "show", "--dir", ws, "--session", session, "before-edit"}, {"checkpoint", "diff", "--dir", ws, "--session", session, "before-edit"},
		{"files", "ls", "-r"}, {"gc", "--dry-run"}, {"fsck"}, {"blob", "verify"}, {"blob", "put", "-"},
		{"checkpoint", "rewind", "--dir", ws, "--session", session, "--dry-run", "before-edit"},
		{"checkpoint", "create", "--dir", ws, "--session", session, "again"}, {"session", "context", session}, {"session", "check", session},
		{"import", filepath.Join("..", "..", "..", "importer", "testdata", "heldout")}, {"import", "--dry-run", filepath.Join("..", "..", "..", "importer", "testdata")},
		{"mirror", home, t.TempDir()}, {"fork", session}, {"unlock", session},
		{"checkpoint", "rm", "--dir", ws, "--session", session, "again"}, {"rm", run[:0] + session},
	} {
		code, out, errOut := trove(t, "x", append([]string{"--json"}, args...)...)
		if code != exitOK {
			t.Errorf("%v: exit %d %s", args, code, errOut)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%v: not JSON: %v\n%s", args, err, out)
			continue
		}
		walk(args[0], v)
	}
}

// Completion offers the workspace's checkpoint names (not those already
// given to rm), and session ids for show and --session.
func TestCompletion(t *testing.T) {
	store, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"before-edit", "before-test", "other"} {
		if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "--dir", ws, "create", name); code != 0 {
			t.Fatalf("create %s: %s", name, errOut)
		}
	}
	complete := func(args ...string) []string {
		t.Helper()
		code, out, errOut := trove(t, "", append([]string{"__complete", "--store", store}, args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: %d %s", args, code, errOut)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") { // the last line is the directive
				names = append(names, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return names
	}
	if got := strings.Join(complete("checkpoint", "rewind", "--dir", ws, "before"), " "); got != "before-edit before-test" {
		t.Errorf("rewind completes %q", got)
	}
	if got := strings.Join(complete("checkpoint", "rm", "--dir", ws, "before-edit", ""), " "); got != "before-test other" {
		t.Errorf("rm completes %q", got)
	}
	if got := complete("checkpoint", "diff", "--dir", ws, "other", ""); len(got) != 0 {
		t.Errorf("diff completes a second name: %q", got)
	}
	code, out, _ := trove(t, "", "--store", store, "demo", "--json")
	if code != 0 {
		t.Fatalf("demo: %s", out)
	}
	ids := complete("show", "")
	if len(ids) == 0 {
		t.Fatal("show completes no session ids")
	}
	if got := complete("checkpoint", "ls", "--session", ids[0][:4]); len(got) == 0 || !strings.HasPrefix(got[0], ids[0][:4]) {
		t.Errorf("--session completes %q", got)
	}
}
