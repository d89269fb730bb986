package watch

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
)

const recordings = "../importer/testdata"

// harness runs watchers over temporary agent directories and waits for
// what they report.
type harness struct {
	t      *testing.T
	dir    string // the agents' directories
	store  string // the store's directory
	state  string
	events chan Event
	stop   func()
	opts   []Option
	auto   bool // one root, of any format
}

func newHarness(t *testing.T, opts ...Option) *harness {
	h := &harness{t: t, dir: t.TempDir(), store: t.TempDir(), events: make(chan Event, 1024), opts: opts}
	h.state = filepath.Join(t.TempDir(), "state.json")
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
	return h
}

func (h *harness) roots() []Root {
	if h.auto {
		return []Root{{Path: filepath.Join(h.dir, "auto"), Format: "auto"}}
	}
	return []Root{{Path: filepath.Join(h.dir, "claude"), Format: "claude"}, {Path: filepath.Join(h.dir, "codex"), Format: "codex"},
		{Path: filepath.Join(h.dir, "pi"), Format: "pi"}}
}

// start runs a watcher until stop, which returns once Run has.
func (h *harness) start() {
	h.t.Helper()
	st, err := trove.Open(context.Background(), h.store)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	opts := append([]Option{WithDebounce(5 * time.Millisecond), WithRescan(0), WithStateFile(h.state),
		WithLogger(slog.New(slog.DiscardHandler)), WithEvents(func(e Event) { h.events <- e })}, h.opts...)
	w := New(st, h.roots(), opts...)
	go func() { done <- w.Run(ctx) }()
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Error(err)
		}
		st.Close()
		h.stop = nil
	}
}

// wait returns the first event for path that ok accepts, failing the test
// after a deadline.
func (h *harness) wait(path string, ok func(Event) bool) Event {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-h.events:
			if e.Path == path && ok(e) {
				return e
			}
		case <-deadline:
			h.t.Fatalf("no event for %s", path)
		}
	}
}

// write appends b to path and waits until the watcher has read the file
// as it now is (a torn line's bytes are seen, not imported).
func (h *harness) write(path string, b []byte) {
	h.t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		h.t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(path)
	if err != nil {
		h.t.Fatal(err)
	}
	whole := bytes.HasSuffix(b, []byte("\n"))
	e := h.wait(path, func(e Event) bool { return e.Size == fi.Size() && (!whole || e.Offset == fi.Size()) })
	if e.Err != nil {
		h.t.Fatalf("%s: %v", path, e.Err)
	}
}

// recorded lists the recorded sources and where each goes under h.dir.
func recorded(t *testing.T) (src, dst []string) {
	t.Helper()
	places := map[string]string{"claude": "claude", "claude-sidechain": "claude", "heldout/claude": "claude",
		"codex": "codex", "heldout/codex": "codex", "heldout/pi/sessions": "pi/sessions"}
	for from, to := range places {
		root := filepath.Join(recordings, from)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				rel, _ := filepath.Rel(root, p)
				src, dst = append(src, p), append(dst, filepath.Join(to, rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return src, dst
}

// TestWatchReplay replays recorded Claude Code, Codex and pi sessions into
// watched directories, a line at a time, in bursts and in torn halves,
// with a restart, a rewrite and a deleted source: the store ends as a
// one-shot import of the final files leaves a fresh one.
func TestWatchReplay(t *testing.T) {
	h := newHarness(t)
	src, dst := recorded(t)
	for i := range dst {
		dst[i] = filepath.Join(h.dir, dst[i])
	}
	// Order so a subagent's file follows its main session's.
	sortPairs(dst, src)
	blobs := filepath.Join(h.dir, "pi", "blobs")
	if err := os.MkdirAll(filepath.Join(h.dir, "claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.start()
	// New directories (and the pi root) appear while watched.
	if err := os.CopyFS(blobs, os.DirFS(filepath.Join(recordings, "heldout", "pi", "blobs"))); err != nil {
		t.Fatal(err)
	}
	var deleted string
	var deletedData []byte
	rewrites := 0
	for i, from := range src {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		path := dst[i]
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
		if i == len(src)/2 {
			// Stopped mid-file, lines written meanwhile, restarted.
			half := len(lines) / 2
			h.write(path, bytes.Join(lines[:half], nil))
			h.stop()
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
			f.Write(bytes.Join(lines[half:], nil))
			f.Close()
			h.start()
			// Its conversion resumed where it stopped: only the new bytes are read.
			if e := h.wait(path, func(e Event) bool { return e.Offset == int64(len(data)) }); e.From != int64(len(bytes.Join(lines[:half], nil))) {
				t.Errorf("restarted, %s was read from %d, not from where it stopped", path, e.From)
			}
			continue
		}
		for j := 0; j < len(lines); {
			switch i % 3 {
			case 0: // steady
				h.write(path, lines[j])
				j++
			case 1: // bursts
				n := min(len(lines), j+3)
				h.write(path, bytes.Join(lines[j:n], nil))
				j = n
			case 2: // each line torn in two
				l := lines[j]
				if len(l) > 1 {
					h.write(path, l[:len(l)/2])
					l = l[len(l)/2:]
				}
				h.write(path, l)
				j++
			}
		}
		switch {
		case strings.Contains(path, "codex") && rewrites < 2:
			// Rewritten in place and saved over the file by rename: a
			// shorter history (its last lines dropped and one added), then
			// a longer one (a line dropped from the middle, a long one
			// added at the end).
			rewritten := append(bytes.Join(lines[:len(lines)/2], nil), lines[len(lines)-2]...)
			if rewrites == 1 {
				rewritten = append(bytes.Join(lines[:3], nil), bytes.Join(lines[4:], nil)...)
				rewritten = append(rewritten, `{"timestamp":"2026-11-20T11:09:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"`+
					strings.Repeat("and again ", 200)+`"}]}}`+"\n"...)
				if len(rewritten) <= len(data) {
					t.Fatal("the rewrite should be longer")
				}
			}
			rewrites++
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, rewritten, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			h.wait(path, func(e Event) bool { return e.Size == int64(len(rewritten)) && e.Offset == e.Size })
		case deleted == "" && strings.Contains(path, "claude") && !strings.Contains(path, "subagents"):
			deleted, deletedData = path, data
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			h.wait(path, func(e Event) bool { return e.Size < 0 })
		}
	}
	h.stop()
	if deleted == "" || rewrites != 2 {
		t.Fatalf("deleted %q, rewrote %d sources", deleted, rewrites)
	}
	// The reference: the final files (the deleted one as it was) imported
	// once into a fresh store.
	if err := os.WriteFile(deleted, deletedData, 0o600); err != nil {
		t.Fatal(err)
	}
	refDir := t.TempDir()
	ref, err := trove.Open(context.Background(), refDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(context.Background(), ref, []string{blobs}, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(context.Background(), ref, dst, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	ref.Close()
	compareSessions(t, refDir, h.store, 20)
}

// sortPairs sorts a by name, b along.
func sortPairs(a, b []string) {
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			if a[j] < a[i] {
				a[i], a[j], b[i], b[j] = a[j], a[i], b[j], b[i]
			}
		}
	}
}

// compareSessions fails the test unless the session files and sidecars
// under two stores are the same, and the second store holds every blob.
func compareSessions(t *testing.T, wantDir, gotDir string, least int) {
	t.Helper()
	read := func(root string) map[string]string {
		out := map[string]string{}
		filepath.WalkDir(filepath.Join(root, "sessions"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(p, ".index") || strings.HasSuffix(p, ".lock") {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = string(b)
			return err
		})
		return out
	}
	want, got := read(wantDir), read(gotDir)
	if len(want) < least {
		t.Fatalf("the reference store holds %d session files", len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nimport: %.2000s\nwatch:  %.2000s", name, w, got[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("watch wrote %s, a one-shot import did not", name)
		}
	}
	st, err := trove.Open(context.Background(), gotDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("check: %v", p)
	}
}

// countingFile counts the bytes read through it.
type countingFile struct {
	*os.File
	n *atomic.Int64
}

func (f countingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.n.Add(int64(n))
	return n, err
}

// TestWatchReadsOnlyNewBytes appends a line to a large watched session:
// the watcher reads the line and the few bytes that tell the file was not
// rewritten, not the file.
func TestWatchReadsOnlyNewBytes(t *testing.T) {
	var read atomic.Int64
	h := newHarness(t, WithOpen(func(p string) (File, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		return countingFile{f, &read}, nil
	}))
	data, err := os.ReadFile(filepath.Join(recordings, "codex/2026/11/20/rollout-2026-11-20T11-00-00-0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// A long session: the recording and 2,000 user turns after it.
	turn := `{"timestamp":"2026-11-20T11:05:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` +
		strings.Repeat("more ", 100) + `"}]}}` + "\n"
	big := append(data, strings.Repeat(turn, 2000)...)
	path := filepath.Join(h.dir, "codex", "2026", "rollout-x.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.write(path, big)
	read.Store(0)
	h.write(path, []byte(turn))
	n := read.Load()
	if n < int64(len(turn)) || n > int64(len(turn))+2*markLen {
		t.Fatalf("an append of %d bytes to a file of %d read %d bytes", len(turn), len(big), n)
	}
}

// TestWatchLetsGoOfIdleSources: a source idle longer than WithIdle lets
// go of its parse state; written again, it resumes from its kept state,
// reading only the new bytes, and the store still ends as a one-shot
// import leaves it.
func TestWatchLetsGoOfIdleSources(t *testing.T) {
	var read atomic.Int64
	h := newHarness(t, WithIdle(0), WithOpen(func(p string) (File, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		return countingFile{f, &read}, nil
	}))
	from := filepath.Join(recordings, "claude-sidechain/-work-web/7c2d9e41-0a6b-4f3e-9d15-3b8a1c0e5f27.jsonl")
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.dir, "claude", "-work-web", filepath.Base(from))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	h.start()
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
	h.write(path, bytes.Join(lines[:len(lines)-1], nil))
	read.Store(0)
	h.write(path, lines[len(lines)-1])
	line := int64(len(lines[len(lines)-1]))
	if n := read.Load(); n < line || n > line+3*markLen { // the line, the marks before it, a tail mark after
		t.Fatalf("an append of %d bytes to an idle source of %d read %d bytes", line, len(data), n)
	}
	h.stop()
	compareSessions(t, reference(t, path), h.store, 2)
}

// reference is the directory of a fresh store into which paths were
// imported at once.
func reference(t *testing.T, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	ref, err := trove.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if _, err := importer.Import(context.Background(), ref, paths, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A subagent's file written whole before its main file (a replay of the
// files side by side) gets its title from the main file's Task call once
// that is written, as a one-shot import of both titles it; also with the
// watcher restarted in between.
func TestWatchSubagentBeforeMain(t *testing.T) {
	for _, restart := range []bool{false, true} {
		h := newHarness(t)
		const rel = "-work-web/7c2d9e41-0a6b-4f3e-9d15-3b8a1c0e5f27"
		from := filepath.Join(recordings, "claude-sidechain")
		main, sub := filepath.Join(h.dir, "claude", rel+".jsonl"), filepath.Join(h.dir, "claude", rel, "subagents", "agent-b81f.jsonl")
		if err := os.MkdirAll(filepath.Dir(sub), 0o700); err != nil {
			t.Fatal(err)
		}
		h.start()
		for _, p := range []string{sub, main} {
			rel, _ := filepath.Rel(filepath.Join(h.dir, "claude"), p)
			data, err := os.ReadFile(filepath.Join(from, rel))
			if err != nil {
				t.Fatal(err)
			}
			h.write(p, data)
			if restart && p == sub {
				h.stop()
				h.start()
			}
		}
		h.stop()
		compareSessions(t, reference(t, main, sub), h.store, 3)
	}
}

// A source with a line trove cannot convert is read again when it
// changes, not at every look at an unchanged file (an attribute change,
// a rescan): a broken file would be read whole over and over.
func TestWatchBrokenSourceWaitsForChange(t *testing.T) {
	var read atomic.Int64 // of the broken file
	h := newHarness(t, WithOpen(func(p string) (File, error) {
		f, err := os.Open(p)
		if err != nil || !strings.HasSuffix(p, "_a.jsonl") {
			return f, err
		}
		return countingFile{f, &read}, nil
	}))
	dir := filepath.Join(h.dir, "pi", "sessions", "--p--")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "2026-11-20T09-00-00-000Z_a.jsonl")
	bad := `{"type":"session","version":3,"id":"0b7e2c44-1f3a-4d5e-8c6b-9a0d1e2f3a4c","timestamp":"2026-11-20T09:00:00.000Z","cwd":"/p"}` + "\n" +
		`{"type":"message","id":"aa000001","parentId":null,"timestamp":"2026-11-20T09:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n"
	h.start()
	if err := os.WriteFile(broken, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := h.wait(broken, func(e Event) bool { return e.Offset == 0 && e.Size == int64(len(bad)) }); e.Err == nil {
		t.Fatalf("no error for a line without milliseconds: %+v", e)
	}
	read.Store(0)
	if err := os.Chmod(broken, 0o640); err != nil { // a notification, no change
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(recordings, "heldout/pi/sessions/--home-dev-web--/2026-11-21T12-00-00-000Z_6c2f8d3e-9b0a-4c4d-8e3f-2a1b7c6d5e4f.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "2026-11-21T12-00-00-000Z_b.jsonl")
	h.write(other, good) // read after the broken file's look
	if n := read.Load(); n != 0 {
		t.Fatalf("the unchanged broken file was read again: %d bytes", n)
	}
	// Changed, it is read again.
	more := `{"type":"message","id":"aa000002","parentId":"aa000001","timestamp":"2026-11-20T09:00:02.000Z","message":{"role":"user","content":"again","timestamp":2}}` + "\n"
	if err := os.WriteFile(broken, []byte(bad+more), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := h.wait(broken, func(e Event) bool { return e.Size == int64(len(bad+more)) }); e.Err == nil || e.From != 0 {
		t.Fatalf("the changed broken file: %+v", e)
	}
}

// A source watched with format auto whose first lines are too few to tell
// its format, however big, waits for more rather than being given up.
func TestWatchAutoWaitsForLines(t *testing.T) {
	h := newHarness(t)
	h.auto = true
	dir := filepath.Join(h.dir, "auto", "-work-app")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(recordings, "claude", "-work-app", "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(from))
	// A line that names no format, bigger than 64 KiB.
	big := `{"type":"file-history-snapshot","messageId":"m0","snapshot":{"note":"` + strings.Repeat("x", 70<<10) + `"}}` + "\n"
	h.start()
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := h.wait(path, func(e Event) bool { return e.Size == int64(len(big)) }); e.Err != nil {
		t.Fatalf("a first line that names no format: %v", e.Err)
	}
	h.write(path, data)
	h.stop()
	compareSessions(t, reference(t, path), h.store, 1)
}

// A state's temporary file left by a watcher killed before its rename is
// removed at the next start once it is old; a young one, which may be
// another watcher's at work, is left.
func TestStaleStateTempsRemoved(t *testing.T) {
	h := newHarness(t)
	dir := strings.TrimSuffix(h.state, ".json") + ".sources"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old, young := filepath.Join(dir, ".tmp-dead"), filepath.Join(dir, ".tmp-live")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte(`{"source":`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(old, then, then); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.stop()
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dead watcher's temporary state file is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temporary state file was removed: %v", err)
	}
}

// A root that is a symbolic link (a dotfiles setup's ~/.claude/projects)
// is followed: a session there before the watcher starts and one in a
// project directory made after are imported as a one-shot import of the
// root (which follows it too) imports them.
func TestWatchSymlinkedRoot(t *testing.T) {
	h := newHarness(t)
	real := filepath.Join(t.TempDir(), "projects")
	if err := os.MkdirAll(filepath.Join(real, "-work-app"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(h.dir, "claude")); err != nil {
		t.Fatal(err)
	}
	const first, second = "-work-app/5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl", "-home-dev-shop/3f8e2b1a-9c4d-4e7f-b2a6-5d1c0e9f8a7b.jsonl"
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := os.WriteFile(filepath.Join(real, first), read(filepath.Join(recordings, "claude", first)), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.wait(filepath.Join(h.dir, "claude", first), func(e Event) bool { return e.Err == nil && e.Offset > 0 })
	if err := os.MkdirAll(filepath.Join(h.dir, "claude", filepath.Dir(second)), 0o700); err != nil {
		t.Fatal(err)
	}
	h.write(filepath.Join(h.dir, "claude", second), read(filepath.Join(recordings, "heldout", "claude", second)))
	h.stop()
	compareSessions(t, reference(t, filepath.Join(h.dir, "claude")), h.store, 6)
}

// A source edited in place, its size unchanged (so the marks at its ends
// may not tell), and appended to after: the edit is seen, the source read
// again whole, and the store ends as a one-shot import of the file.
func TestWatchEditInPlace(t *testing.T) {
	h := newHarness(t)
	const rel = "-work-app/5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl"
	data, err := os.ReadFile(filepath.Join(recordings, "claude", rel))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.dir, "claude", rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	h.start()
	h.write(path, data[:last])
	// In the middle: after the first 512 bytes, before the last 512 read.
	edited := bytes.Replace(data[:last], []byte(`"make it hello"`), []byte(`"make it HELLO"`), 1)
	if i := bytes.Index(edited, []byte("HELLO")); i < 512 || i > last-512 {
		t.Fatalf("the edit is at %d of %d", i, last)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(edited, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A clock's tick may be coarser than the test's pace: the edit's time
	// is made later than the append's.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, time.Time{}, fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	h.wait(path, func(e Event) bool { return e.From == 0 && e.Offset == int64(last) })
	h.write(path, data[last:])
	h.stop()
	compareSessions(t, reference(t, path), h.store, 4)
}
