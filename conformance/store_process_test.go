package conformance_test

// The store's cross-process tests: real child processes (this test binary
// re-executed) on fs on the OS, run in the matrix's fs row as
// TestMatrix/fs/store/TwoProcesses and TestMatrix/fs/store/Kill9.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	trovefs "github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func userMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1})
	return b
}

func assistantMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"usage": map[string]any{"input": 1, "output": 1}, "timestamp": 2})
	return b
}

func openOSStore(t testing.TB, dir string, opts ...session.Option) *session.Store {
	t.Helper()
	st, err := trovefs.NewOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := session.OpenStore(context.Background(), st,
		append([]session.Option{session.WithSessionOptions(tree.WithLogger(slog.New(slog.DiscardHandler)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHelperStoreProcess is not a test: it is the child process of the
// cross-process tests, run by re-executing the test binary.
func TestHelperStoreProcess(t *testing.T) {
	dir, id, mode := os.Getenv("TROVE_STORE_DIR"), os.Getenv("TROVE_STORE_ID"), os.Getenv("TROVE_STORE_MODE")
	if dir == "" {
		t.Skip("child process only")
	}
	ctx := context.Background()
	s := openOSStore(t, dir, session.WithLockWait())
	h, err := s.Load(ctx, id)
	must(t, err)
	n, _ := strconv.Atoi(os.Getenv("TROVE_STORE_N"))
	tag := os.Getenv("TROVE_STORE_TAG")
	for i := range n {
		must(t, h.AppendMessage(ctx, userMsg(fmt.Sprintf("%s q%d", tag, i))))
		must(t, h.AppendMessage(ctx, assistantMsg(fmt.Sprintf("%s a%d", tag, i))))
		if mode == "kill" || i%10 == 9 {
			must(t, h.Flush(ctx))
		}
		if mode == "kill" {
			fmt.Printf("flushed %d\n", 2*(i+1))
		}
	}
	must(t, h.Close(ctx))
}

func child(t *testing.T, dir, id, tag, mode string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStoreProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TROVE_STORE_DIR="+dir, "TROVE_STORE_ID="+id, "TROVE_STORE_TAG="+tag,
		"TROVE_STORE_MODE="+mode, "TROVE_STORE_N="+strconv.Itoa(n))
	return cmd
}

func newOSSession(t *testing.T, dir string) string {
	t.Helper()
	s := openOSStore(t, dir)
	h, err := s.Create(t.Context(), session.CreateOptions{Cwd: "/proc"})
	must(t, err)
	must(t, h.AppendMessage(t.Context(), userMsg("start")))
	must(t, h.AppendMessage(t.Context(), assistantMsg("ok")))
	must(t, h.Close(t.Context()))
	return h.ID()
}

// Two processes appending to one session take turns through the writer
// lock: every line whole, nothing interleaved, each one's order kept.
func storeTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	id := newOSSession(t, dir)
	const n = 60
	a, b := child(t, dir, id, "A", "", n), child(t, dir, id, "B", "", n)
	var outA, outB strings.Builder
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = &outA, &outA, &outB, &outB
	must(t, a.Start())
	must(t, b.Start())
	if err := a.Wait(); err != nil {
		t.Fatalf("child A: %v\n%s", err, outA.String())
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("child B: %v\n%s", err, outB.String())
	}
	s := openOSStore(t, dir)
	msgs, err := s.LoadMessages(t.Context(), id)
	must(t, err)
	if len(msgs) != 2+4*n {
		t.Fatalf("%d messages, want %d", len(msgs), 2+4*n)
	}
	next := map[string]int{}
	for _, e := range msgs[2:] {
		var m struct {
			Content any `json:"content"`
		}
		must(t, json.Unmarshal(e.Field("message"), &m))
		text := fmt.Sprint(m.Content)
		if c, ok := m.Content.([]any); ok {
			text = c[0].(map[string]any)["text"].(string)
		}
		var tag, kind string
		var i int
		if _, err := fmt.Sscanf(text, "%s %1s%d", &tag, &kind, &i); err != nil {
			t.Fatalf("unexpected message %q", text)
		}
		key := tag + kind
		if i != next[key] {
			t.Fatalf("%s: message %d where %d was due", key, i, next[key])
		}
		next[key]++
	}
	sess, err := tree.Open(t.Context(), mustStorage(t, dir), findPath(t, s, id), tree.ReadOnly())
	must(t, err)
	if p := sess.Problems(); len(p) != 0 {
		t.Fatalf("the file has problems: %v", p)
	}
}

func mustStorage(t *testing.T, dir string) *trovefs.Storage {
	st, err := trovefs.NewOS(dir)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func findPath(t *testing.T, s *session.Store, id string) string {
	for m, err := range s.List(t.Context(), "") {
		must(t, err)
		if m.ID == id {
			return m.Path
		}
	}
	t.Fatalf("session %s not listed", id)
	return ""
}

// A writer killed with SIGKILL mid-append loses nothing it had flushed; the
// file loads, and the lock died with the process.
func storeKill9(t *testing.T) {
	dir := t.TempDir()
	id := newOSSession(t, dir)
	cmd := child(t, dir, id, "K", "kill", 100000)
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	flushed := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "flushed "); ok {
			flushed, _ = strconv.Atoi(n)
			if flushed >= 60 {
				break
			}
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	if flushed < 60 {
		t.Fatalf("the child flushed only %d messages before it ended", flushed)
	}
	s := openOSStore(t, dir)
	msgs, err := s.LoadMessages(t.Context(), id)
	must(t, err)
	if len(msgs) < 2+flushed {
		t.Fatalf("%d messages after kill -9, want at least the %d flushed", len(msgs), 2+flushed)
	}
	h, err := s.Load(t.Context(), id) // the lock is free
	must(t, err)
	must(t, h.AppendMessage(t.Context(), userMsg("after")))
	must(t, h.AppendMessage(t.Context(), assistantMsg("the crash")))
	must(t, h.Close(t.Context()))
	msgs2, err := s.LoadMessages(t.Context(), id)
	must(t, err)
	if len(msgs2) != len(msgs)+2 {
		t.Fatalf("appending after the crash: %d messages, want %d", len(msgs2), len(msgs)+2)
	}
}
