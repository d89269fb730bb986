package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain gives the package's tests, and the trove processes they start,
// a TMPDIR of their own, removed after: the demo on a store with no
// directory of its own (memblob, fileblob, a bucket through trove-cloud)
// keeps its HTML page in the temporary directory for the user to open.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trove-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// trove runs the command line in process and returns its exit code and output.
func trove(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDemoOnDefaultRoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TROVE_HOME", home)
	code, out, errOut := trove(t, "", "demo")
	if code != exitOK {
		t.Fatalf("demo exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"store: " + home, "a screenshot (kept as a blob)", "checkpoint before-edit", "1 file(s) restored",
		"a branch from the first message", "fork ", "exported the session as HTML: " + home, "0 problems", "trove show ", "trove serve"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// trove ls right after, in the same directory, shows the demo's sessions.
	code, out, _ = trove(t, "", "ls")
	if code != exitOK || strings.Count(out, "fix the greeting") != 2 {
		t.Errorf("ls after the demo: %d\n%s", code, out)
	}
	// The sample workspace is on disk, rewound and fixed.
	ws, _ := filepath.Glob(filepath.Join(home, "demo", "workspace-*", "greet.go"))
	if len(ws) != 1 {
		t.Fatalf("workspace: %v", ws)
	}
	if data, _ := os.ReadFile(ws[0]); !strings.Contains(string(data), `return "hello" }`) {
		t.Errorf("greet.go: %s", data)
	}
	// Its HTML export is beside it, showing the conversation.
	if page, err := os.ReadFile(filepath.Dir(ws[0]) + ".html"); err != nil || !strings.Contains(string(page), "Fixed: Greet returns") {
		t.Errorf("the demo's HTML page: %v", err)
	}
	if code, out, _ := trove(t, "", "fsck"); code != exitOK {
		t.Errorf("fsck after the demo: %s", out)
	}
	// Every session file the demo wrote holds refs, not base64 images.
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if !strings.Contains(string(data), "blob:sha256:") || strings.Contains(string(data), `"data":"iVBOR`) {
			t.Errorf("%s does not keep its image as a blob ref", f)
		}
	}
}

func TestDemoOnMem(t *testing.T) {
	demoOnTemp(t, "mem://")
}

// demoOnTemp runs the demo on a store with no directory of its own: its
// workspace is a temporary directory, removed after, and the exported
// page is kept beside it for the user to open (under TMPDIR, here the
// test's own, so runs leave nothing behind).
func demoOnTemp(t *testing.T, store string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, out, errOut := trove(t, "", "--store", store, "demo")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	pages, _ := filepath.Glob(filepath.Join(tmp, "trove-demo-workspace-*.html"))
	if len(pages) != 1 || !strings.Contains(out, pages[0]) {
		t.Fatalf("pages %v, output:\n%s", pages, out)
	}
	if ws := strings.TrimSuffix(pages[0], ".html"); dirExists(ws) {
		t.Fatalf("the temporary workspace %s is left", ws)
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func TestFilesRoundTrip(t *testing.T) {
	store := "file://" + t.TempDir()
	if code, _, errOut := trove(t, "hello\x00world", "--store", store, "files", "put", "a/b.bin"); code != exitOK {
		t.Fatalf("put: %d %s", code, errOut)
	}
	code, out, errOut := trove(t, "", "--store", store, "files", "cat", "a/b.bin")
	if code != exitOK || out != "hello\x00world" {
		t.Fatalf("cat: %d %q %s", code, out, errOut)
	}
	code, out, _ = trove(t, "", "--store", store, "files", "ls", "-r")
	if code != exitOK || !strings.Contains(out, "a/b.bin") || !strings.Contains(out, "d ") {
		t.Fatalf("ls -r: %d %s", code, out)
	}
	code, out, _ = trove(t, "", "--store", store, "--json", "files", "ls", "a")
	if code != exitOK || !strings.Contains(out, `"name": "a/b.bin"`) {
		t.Fatalf("ls --json: %d %s", code, out)
	}
}

func TestExitCodes(t *testing.T) {
	store := "file://" + t.TempDir()
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"nosuchcommand"}, exitUsage, "unknown command"},
		{[]string{"--nosuchflag"}, exitUsage, "unknown flag"},
		{[]string{"--store", store, "files", "cat"}, exitUsage, "accepts 1 arg"},
		{[]string{"--store", store, "files", "cat", "missing"}, exitFailure, "no such file"},
		{[]string{"--store", store, "files", "cat", "../etc/passwd"}, exitFailure, "invalid path"},
		{[]string{"--store", "ftp://x", "demo"}, exitFailure, "unknown storage URL scheme"},
		{[]string{"--log-level", "loud", "demo"}, exitUsage, "log-level"},
	}
	for _, c := range cases {
		code, _, errOut := trove(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", c.args, code, c.code, errOut, c.msg)
		}
	}
}

// The commands the demo prints to copy are shell words: a store URL with
// & and a space, pasted into sh, reaches trove whole, and the printed
// show runs.
func TestDemoQuotesCommandsForTheShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to paste the demo's commands into")
	}
	store := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "my store")) + "?x=1&y=it's"
	code, out, errOut := trove(t, "", "--store", store, "demo")
	if code != exitOK {
		t.Fatalf("demo exit %d: %s\n%s", code, errOut, out)
	}
	var shown int
	for line := range strings.Lines(out) {
		cmd, _, ok := strings.Cut(strings.TrimSpace(line), " # ")
		if !ok || !strings.HasPrefix(cmd, "trove ") {
			continue
		}
		words, err := exec.Command(sh, "-c", `for w in `+strings.TrimPrefix(cmd, "trove ")+`; do printf '%s\n' "$w"; done`).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", cmd, err)
		}
		args := strings.Split(strings.TrimSuffix(string(words), "\n"), "\n")
		if len(args) < 3 || args[0] != "--store" || args[1] != store {
			t.Fatalf("%q reaches trove as %q", cmd, args)
		}
		if args[2] == "show" {
			shown++
			if code, out, errOut := trove(t, "", args...); code != exitOK || !strings.Contains(out, "fix the greeting") {
				t.Errorf("%q: exit %d %s\n%s", cmd, code, errOut, out)
			}
		}
	}
	if shown == 0 {
		t.Fatalf("no trove show command printed:\n%s", out)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"mem://":                   "mem://",
		"/tmp/trove-1/ws":          "/tmp/trove-1/ws",
		"s3://b?endpoint=h&r=us-1": "'s3://b?endpoint=h&r=us-1'",
		"a b":                      "'a b'",
		"it's":                     `'it'\''s'`,
		"":                         "''",
		"$HOME":                    "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
