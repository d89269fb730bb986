package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// trove doctor finds what leaves the hooks and the watch service failing
// unseen: their binary gone, a recent hook failure, an encrypted store no
// key file opens; and exits 3 for it, 0 when all holds.
func TestDoctor(t *testing.T) {
	built := buildTrove(t)
	home, project := t.TempDir(), t.TempDir()
	state, config := filepath.Join(home, "state"), filepath.Join(home, "config")
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+config, "CLAUDE_CONFIG_DIR=", "CODEX_HOME=", envPassword+"=")
	store := filepath.Join(t.TempDir(), "store")
	run := func(bin, stdin string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stdin = project, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	doctor := func() (map[string][]finding, int) {
		t.Helper()
		out, code := run(built, "", "--json", "doctor")
		var fs []finding
		if err := json.Unmarshal([]byte(out[:strings.LastIndexByte(out, ']')+1]), &fs); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		by := map[string][]finding{}
		for _, f := range fs {
			by[f.Check] = append(by[f.Check], f)
		}
		return by, code
	}
	problem := func(by map[string][]finding, check, says string) bool {
		for _, f := range by[check] {
			if !f.OK && strings.Contains(f.Detail, says) {
				return true
			}
		}
		return false
	}

	if by, code := doctor(); code != exitOK || len(by["store"]) != 1 || len(by["hooks"]) != 4 || len(by["watch"]) != 1 {
		t.Fatalf("doctor with nothing installed: exit %d, %+v", code, by)
	}

	// The hooks and the service installed by a binary since removed.
	kept := filepath.Join(t.TempDir(), "bin", "trove")
	os.MkdirAll(filepath.Dir(kept), 0o755)
	b, _ := os.ReadFile(built)
	if err := os.WriteFile(kept, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"hooks", "install", "claude"}, {"watch", "--install", "--write"}} {
		if out, code := run(kept, "", args...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	if by, code := doctor(); code != exitOK {
		t.Fatalf("doctor with the binary in place: exit %d, %+v", code, by)
	}
	os.Remove(kept)
	if by, code := doctor(); code != exitProblems || !problem(by, "hooks", kept+", which is gone") || !problem(by, "watch", kept+", which is gone") {
		t.Fatalf("doctor once the binary is gone: exit %d, %+v", code, by)
	}
	for _, args := range [][]string{{"hooks", "install", "claude"}, {"watch", "--install", "--write"}} {
		run(built, "", args...)
	}

	// A failure of yesterday's morning is old news; one of now is not.
	log := filepath.Join(state, "trove", "hooks.log")
	os.MkdirAll(filepath.Dir(log), 0o700)
	os.WriteFile(log, []byte(time.Now().Add(-30*time.Hour).UTC().Format(time.RFC3339)+" PreToolUse Bash toolu_x 2ms: old\n"), 0o600)
	if by, code := doctor(); code != exitOK {
		t.Fatalf("doctor with an old failure only: exit %d, %+v", code, by)
	}
	run(built, "{not json", "hooks", "run", "claude")
	if by, code := doctor(); code != exitProblems || !problem(by, "hook log", "last day: 1") {
		t.Fatalf("doctor after a hook failed: exit %d, %+v", code, by)
	}
	os.Remove(log)

	// An encrypted store that no key file opens: every hook would fail.
	env[len(env)-1] = envPassword + "=pw"
	if out, code := run(built, "", "init", "--encrypt"); code != exitOK {
		t.Fatalf("init --encrypt: %s", out)
	}
	env[len(env)-1] = envPassword + "="
	if by, code := doctor(); code != exitProblems || !problem(by, "store", "--generate-key-file") || !problem(by, "watch", "--generate-key-file") {
		t.Fatalf("doctor on an encrypted store without a key file: exit %d, %+v", code, by)
	}
	if out, code := run(built, "", "doctor"); code != exitProblems || !strings.Contains(out, "PROBLEM  store") {
		t.Fatalf("doctor's text: exit %d\n%s", code, out)
	}
}
