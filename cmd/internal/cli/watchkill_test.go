package cli

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildTrove builds the trove binary into a temporary directory, and the
// other commands named (trove-cloud) beside it.
func buildTrove(t *testing.T, others ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range append([]string{"trove"}, others...) {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/trovekit/trove/cmd/"+name).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(dir, "trove")
}

// watchRead is one "trove watch: read" line of a watcher's debug log.
type watchRead struct {
	source             string
	from, offset, size int64
}

var watchReadLine = regexp.MustCompile(`msg="trove watch: read" source=(\S+) from=(-?\d+) offset=(\d+) size=(-?\d+)`)

// watchProc is a `trove watch` process and what it logs.
type watchProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	reads chan watchRead
}

func startWatch(t *testing.T, bin string, env []string, args ...string) *watchProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--log-level", "debug"}, args...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &watchProc{t: t, cmd: cmd, reads: make(chan watchRead, 4096)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if m := watchReadLine.FindStringSubmatch(sc.Text()); m != nil {
				n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
				p.reads <- watchRead{source: m[1], from: n(m[2]), offset: n(m[3]), size: n(m[4])}
			}
		}
		close(p.reads)
	}()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

// wait returns the first read of path that ok accepts.
func (p *watchProc) wait(path string, ok func(watchRead) bool) watchRead {
	p.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case r, open := <-p.reads:
			if !open {
				p.t.Fatalf("trove watch exited while waiting for %s", path)
			}
			if r.source == path && ok(r) {
				return r
			}
		case <-deadline:
			p.t.Fatalf("trove watch did not read %s", path)
		}
	}
}

// signal sends sig and waits for the process to end.
func (p *watchProc) signal(sig syscall.Signal) error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	p.cmd.Process.Signal(sig)
	return p.cmd.Wait()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendFile appends b to path (made with its directory if need be) and
// returns its size.
func appendFile(t *testing.T, path string, b []byte) int64 {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestWatchKilledAndRestarted replays recorded Claude Code, Codex and pi
// sessions line by line (steady, in bursts, torn) into the directories a
// real `trove watch` process follows, killing it with SIGKILL and starting
// it again along the way: once right after a read (it resumes reading only
// the bytes appended since), once in the middle of a burst. The store ends
// as a one-shot import of the final files leaves a fresh one, and an import
// of them into it finds nothing to do.
func TestWatchKilledAndRestarted(t *testing.T) {
	bin := buildTrove(t)
	home, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	state := filepath.Join(t.TempDir(), "watch.json")
	env := append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"CODEX_HOME="+filepath.Join(home, ".codex"), "PI_CODING_AGENT_DIR="+filepath.Join(home, ".pi", "agent"))
	const rec = "../../../importer/testdata"
	places := []struct{ from, to string }{{"claude", ".claude/projects"}, {"claude-sidechain", ".claude/projects"},
		{"heldout/claude", ".claude/projects"}, {"codex", ".codex/sessions"}, {"heldout/codex", ".codex/sessions"},
		{"heldout/pi/sessions", ".pi/agent/sessions"}}
	var src, dst []string
	for _, pl := range places {
		root := filepath.Join(rec, pl.from)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				rel, _ := filepath.Rel(root, p)
				src, dst = append(src, p), append(dst, filepath.Join(home, pl.to, rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A subagent's transcript after its main session's, which holds the
	// Task call naming it, as Claude Code writes them.
	for i := range src {
		for j := i + 1; j < len(src); j++ {
			if strings.Contains(dst[i], "/subagents/") && !strings.Contains(dst[j], "/subagents/") {
				src[i], src[j], dst[i], dst[j] = src[j], src[i], dst[j], dst[i]
			}
		}
	}
	if err := os.CopyFS(filepath.Join(home, ".pi", "agent", "blobs"), os.DirFS(filepath.Join(rec, "heldout", "pi", "blobs"))); err != nil {
		t.Fatal(err)
	}
	args := []string{"--store", store, "watch", "--state", state, "--debounce", "5ms"}
	w := startWatch(t, bin, env, args...)
	kills := 0
	for i, from := range src {
		path, data := dst[i], readFile(t, from)
		lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
		for j, l := range lines {
			switch {
			case j == len(lines)/2 && i%3 == 0:
				// Killed right after a read, the rest written while it is down:
				// started again, it reads only those bytes.
				read := appendFile(t, path, l)
				w.wait(path, func(r watchRead) bool { return r.offset == read })
				w.signal(syscall.SIGKILL)
				kills++
				size := appendFile(t, path, bytes.Join(lines[j+1:], nil))
				w = startWatch(t, bin, env, args...)
				if r := w.wait(path, func(r watchRead) bool { return r.offset == size }); r.from != read {
					t.Errorf("%s: restarted, read from %d, not from %d where it stopped", path, r.from, read)
				}
			case j == len(lines)/2 && i%3 == 1:
				// Killed whenever it is, a burst being read.
				appendFile(t, path, bytes.Join(lines[j:], nil))
				w.signal(syscall.SIGKILL)
				kills++
				w = startWatch(t, bin, env, args...)
				w.wait(path, func(r watchRead) bool { return r.offset == int64(len(data)) })
			case j > len(lines)/2 && i%3 != 2:
				continue // written above
			case i%3 == 2 && len(l) > 1:
				// Torn: the first half is seen and waits for its end.
				half := appendFile(t, path, l[:len(l)/2])
				w.wait(path, func(r watchRead) bool { return r.size == half })
				whole := appendFile(t, path, l[len(l)/2:])
				w.wait(path, func(r watchRead) bool { return r.offset == whole })
			default:
				size := appendFile(t, path, l)
				w.wait(path, func(r watchRead) bool { return r.offset == size })
			}
		}
	}
	if err := w.signal(syscall.SIGTERM); err != nil {
		t.Errorf("trove watch on SIGTERM: %v", err)
	}
	if kills < 4 {
		t.Fatalf("%d kills", kills)
	}
	refDir := t.TempDir()
	if code, out, errOut := trove(t, "", append([]string{"--store", refDir, "import", filepath.Join(home, ".pi", "agent", "blobs")}, dst...)...); code != exitOK {
		t.Fatalf("one-shot import: %d\n%s%s", code, out, errOut)
	}
	want, got := sessionFiles(t, refDir), sessionFiles(t, store)
	if len(want) < 20 {
		t.Fatalf("the one-shot import wrote %d session files", len(want))
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			want[name] = "(not written)"
		}
	}
	for name, b := range want {
		if got[name] != b {
			t.Errorf("%s differs:\none-shot import: %.1500s\nwatch: %.1500s", name, b, got[name])
		}
	}
	code, out, errOut := trove(t, "", "--store", store, "import", filepath.Join(home, ".claude", "projects"),
		filepath.Join(home, ".codex", "sessions"), filepath.Join(home, ".pi", "agent"))
	if code != exitOK || !strings.Contains(out, "imported 0 new sessions, 0 updated, and 0 blobs") {
		t.Errorf("import after watch: %d\n%s%s", code, out, errOut)
	}
}

// sessionFiles are the session files and sidecars of the store at root.
func sessionFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	store := os.DirFS(root)
	err := fs.WalkDir(store, "sessions", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir() && !strings.Contains(p, ".index") && !strings.HasSuffix(p, ".lock"):
			b, err := fs.ReadFile(store, p)
			out[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
