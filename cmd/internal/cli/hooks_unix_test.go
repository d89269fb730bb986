//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHookBudgetEndsABlockedHook runs hooks whose work never returns by
// itself: an agent that does not close the hook's stdin (the process
// ends at its budget and grace, exit 0, and logs it), and a transcript
// that is a FIFO nobody writes (refused at once: its open would block).
func TestHookBudgetEndsABlockedHook(t *testing.T) {
	bin := buildTrove(t)
	state, dir := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+t.TempDir(), "CLAUDE_PROJECT_DIR=")
	logged := func() string {
		b, _ := os.ReadFile(filepath.Join(state, "trove", "hooks.log"))
		return string(b)
	}

	cmd := exec.Command(bin, "--store", filepath.Join(dir, "store"), "hooks", "run", "claude", "--budget", "50ms")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close() // never written: the decode waits for ever
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("a hook past its budget ended with %v, want exit 0", err)
	}
	if !strings.Contains(logged(), "gave up") {
		t.Errorf("the hooks' log does not say the hook gave up:\n%s", logged())
	}

	fifo := filepath.Join(dir, "t.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	payload := fmt.Sprintf(`{"hook_event_name":"Stop","session_id":"s1","transcript_path":%q,"cwd":%q}`, fifo, dir)
	cmd = exec.Command(bin, "--store", filepath.Join(dir, "store"), "hooks", "run", "claude")
	cmd.Env, cmd.Stdin = env, strings.NewReader(payload)
	if err := cmd.Run(); err != nil {
		t.Fatalf("a FIFO transcript: %v, want exit 0", err)
	}
	if !strings.Contains(logged(), "not a regular file") {
		t.Errorf("the hooks' log does not name the FIFO:\n%s", logged())
	}
}
