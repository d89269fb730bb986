package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	stdmaps "maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// TestTrove runs the whole store (trove.New) on a backend: blobs by
// default, GC over every layer's roots, fsck.
func TestTrove(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	t.Run("GCKeepsEveryLayer", func(t *testing.T) { oneStoreGC(t, newBackend(t)) })
	t.Run("CheckFindsDamage", func(t *testing.T) { oneStoreCheck(t, newBackend(t)) })
	t.Run("DurablePrompt", func(t *testing.T) { oneStoreDurablePrompt(t, newBackend(t)) })
	t.Run("WritesStrictFiles", func(t *testing.T) { oneStoreStrict(t, newBackend(t)) })
}

// oneStoreStrict writes sessions through every path (the store's writer
// with loose assistant messages, compaction, branch summary and label
// entries, forks whole, at a message and of the last messages) and checks
// every file against the writing contract.
func oneStoreStrict(t *testing.T, st backend.Storage) {
	ctx := context.Background()
	s, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/strict", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		`{"role":"user","content":"q","timestamp":1}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"}],"usage":{"input":2},"timestamp":2}`, // loose: filled on write
		`{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false,"timestamp":3}`,
	} {
		if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := tree.Open(ctx, st, h.Path())
	if err != nil {
		t.Fatal(err)
	}
	first := sess.Entries()[0]
	if _, err := sess.Append(ctx, &tree.Compaction{Summary: "sum", FirstKeptEntryID: first.ID(), TokensBefore: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.SetLabel(ctx, first.ID(), "l"); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.BranchWithSummary(ctx, first.ID(), tree.BranchSummary{Summary: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendMessage(ctx, OneStoreReply("after the branch")); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range []session.ForkOptions{{}, {At: first.ID()}, {Last: 2}} {
		if _, err := s.Sessions().ForkSession(ctx, h.ID(), o); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for m, err := range s.Sessions().List(ctx, "/work/strict") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		data, err := st.ReadFile(ctx, m.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Check(data); err != nil {
			t.Errorf("%s: %v\n%s", m.Path, err, data)
		}
	}
	if n != 4 {
		t.Errorf("%d sessions, want 4", n)
	}
}

// oneStoreDurablePrompt: once Flush returns, a prompt that has no reply yet
// is on the store (through a crash where the backend can simulate one),
// listed, and found by Continue.
func oneStoreDurablePrompt(t *testing.T, st backend.Storage) {
	ctx := context.Background()
	s, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/p", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"the prompt that must survive","timestamp":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c, ok := st.(backend.Crasher); ok {
		c.Crash() // the process dies before the first reply, the handle never closed
	} else {
		defer h.Close(ctx)
	}
	s2, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for m, err := range s2.Sessions().List(ctx, "/work/p") {
		if err != nil {
			t.Fatal(err)
		}
		listed = listed || m.ID == h.ID()
	}
	if !listed {
		t.Error("a flushed prompt-only session is not listed")
	}
	msgs, err := s2.Sessions().LoadMessages(ctx, h.ID())
	if err != nil || len(msgs) != 1 || !strings.Contains(string(msgs[0].JSON()), "the prompt that must survive") {
		t.Fatalf("the flushed prompt: %d messages, %v", len(msgs), err)
	}
	if _, ok := st.(backend.Crasher); ok {
		h2, err := s2.Sessions().Continue(ctx, "/work/p")
		if err != nil {
			t.Fatalf("Continue after the crash: %v", err)
		}
		if h2.ID() != h.ID() {
			t.Errorf("Continue found %s, want %s", h2.ID(), h.ID())
		}
		if err := h2.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// OneStoreImage is the JSON of a user message holding one inline image
// block of data.
func OneStoreImage(text string, data []byte) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q},{"type":"image","data":%q,"mimeType":"image/png"}],"timestamp":1}`,
		text, base64.StdEncoding.EncodeToString(data)))
}

// OneStoreReply is a strict assistant message of pi session v3.
func OneStoreReply(text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}`, text))
}

// OneStoreToolResult is a tool result message whose text is text.
func OneStoreToolResult(text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":%q}],"isError":false,"timestamp":3}`, text))
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// oneStoreFixture fills a store with sessions (images on and off the leaf
// path, a long tool output, an image two sessions share), a checkpoint and
// a run log, and returns what each holds.
type oneStoreFixture struct {
	s                  *trove.Store
	shared, onlyA      []byte // image bytes
	offLeaf, toolOut   []byte
	sessA, sessB       string // ids
	sessAPath          string
	ws                 string
	runOutput, orphan  cas.Ref
	checkpointFileData []byte
}

func newOneStoreFixture(t *testing.T, st backend.Storage) *oneStoreFixture {
	ctx := context.Background()
	s, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	f := &oneStoreFixture{s: s, shared: randomBytes(r, 3000), onlyA: randomBytes(r, 3000), offLeaf: randomBytes(r, 3000)}
	f.toolOut = []byte(strings.Repeat("line of tool output\n", 4000)) // 80 KB > 64 KiB

	// Session A through the store: images and a long tool output.
	hA, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/a", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []json.RawMessage{OneStoreImage("shared", f.shared), OneStoreReply("seen"),
		OneStoreImage("only a", f.onlyA), OneStoreToolResult(string(f.toolOut)), OneStoreReply("done")} {
		if err := hA.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := hA.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.sessA, f.sessAPath = hA.ID(), hA.Path()
	if strings.Contains(readString(t, st, f.sessAPath), base64.StdEncoding.EncodeToString(f.shared)) {
		t.Fatal("the session file holds an image inline: blobs are not the default")
	}

	// Session B written with the session API: a branch off the leaf path
	// holds an image, and B shares A's first image.
	path := session.SessionPath("/work/b", hA.Metadata().CreatedAt, "b0000000-0000-7000-8000-000000000001")
	sb, err := tree.Create(st, path, tree.Header{ID: "b0000000-0000-7000-8000-000000000001", Cwd: "/work/b"},
		tree.WithBlobStore(s.Blobs()))
	if err != nil {
		t.Fatal(err)
	}
	first, err := sb.AppendMessage(ctx, OneStoreImage("shared", f.shared))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.AppendMessage(ctx, OneStoreReply("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.AppendMessage(ctx, OneStoreImage("off the leaf", f.offLeaf)); err != nil {
		t.Fatal(err)
	}
	if err := sb.Branch(first.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.AppendMessage(ctx, OneStoreReply("another way")); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.sessB = "b0000000-0000-7000-8000-000000000001"

	// A checkpoint of a workspace and a run log with an externalized output.
	f.ws = t.TempDir()
	f.checkpointFileData = randomBytes(r, 5000)
	if err := os.WriteFile(filepath.Join(f.ws, "data.bin"), f.checkpointFileData, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := s.Checkpoints(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTree(ctx, "before-edit"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a", SessionID: f.sessA})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, &runlog.ToolOutput{Tool: "bash", ToolCallID: "c9", ResultRaw: strings.Repeat("run output\n", 10000)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.runOutput, _ = cas.Sum(cas.SHA256, []byte(strings.Repeat("run output\n", 10000)))
	if ok, err := s.Blobs().Has(ctx, f.runOutput); err != nil || !ok {
		t.Fatalf("run output not in the blob store: %v %v", ok, err)
	}
	// A blob nothing refers to.
	if f.orphan, err = s.Blobs().Put(ctx, randomBytes(r, 2000)); err != nil {
		t.Fatal(err)
	}
	return f
}

func readString(t *testing.T, st backend.Storage, name string) string {
	t.Helper()
	b, err := st.ReadFile(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hasBlob(t *testing.T, s *trove.Store, data []byte) bool {
	t.Helper()
	ref, _ := cas.Sum(cas.SHA256, data)
	ok, err := s.Blobs().Has(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// loadsWhole opens every session file of the store with its blobs and
// checks none is missing and the given images come back.
func loadsWhole(t *testing.T, f *oneStoreFixture, texts [][]byte, images ...[]byte) {
	t.Helper()
	ctx := context.Background()
	var all bytes.Buffer
	for info, err := range f.s.Sessions().Discover(ctx, session.Discovery{All: true}) {
		if err != nil {
			t.Fatal(err)
		}
		var problems []tree.Problem
		sess, err := tree.Open(ctx, f.s.Storage(), info.Path, tree.ReadOnly(),
			tree.WithBlobStore(f.s.Blobs()), tree.WithReport(func(p tree.Problem) { problems = append(problems, p) }))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			if errors.Is(p, tree.ErrBlob) {
				t.Errorf("%s: %v", info.Path, p)
			}
		}
		for _, e := range sess.Entries() {
			all.Write(e.JSON())
		}
	}
	for _, img := range images {
		if !bytes.Contains(all.Bytes(), []byte(base64.StdEncoding.EncodeToString(img))) {
			t.Errorf("an image of %d bytes does not come back", len(img))
		}
	}
	for _, text := range texts {
		q, _ := json.Marshal(string(text))
		if !bytes.Contains(all.Bytes(), q[1:len(q)-1]) {
			t.Errorf("a tool output of %d bytes does not come back", len(text))
		}
	}
}

func oneStoreGC(t *testing.T, st backend.Storage) {
	ctx := context.Background()
	f := newOneStoreFixture(t, st)
	s := f.s
	rep, err := s.GC(ctx, trove.GCGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted) != 1 || rep.Deleted[0] != f.orphan {
		t.Fatalf("gc deleted %v, want only the orphan %v", rep.Deleted, f.orphan)
	}
	if rep.SessionRefs < 4 || rep.CheckpointRefs < 1 || rep.RunRefs < 1 {
		t.Errorf("roots: sessions %d checkpoints %d runs %d", rep.SessionRefs, rep.CheckpointRefs, rep.RunRefs)
	}
	loadsWhole(t, f, [][]byte{f.toolOut}, f.shared, f.onlyA, f.offLeaf)
	if !hasBlob(t, s, f.checkpointFileData) {
		t.Error("gc removed a checkpoint's file content")
	}
	if ok, _ := s.Blobs().Has(ctx, f.runOutput); !ok {
		t.Error("gc removed a run log's output")
	}
	if crep, err := s.Check(ctx); err != nil || !crep.OK() {
		t.Fatalf("fsck after gc: %v %v", crep.Problems, err)
	}

	// Delete A: its own blobs go, the one B shares stays.
	if err := s.Sessions().Delete(ctx, f.sessA); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx, trove.GCGrace(0)); err != nil {
		t.Fatal(err)
	}
	if hasBlob(t, s, f.onlyA) || hasBlob(t, s, f.toolOut) {
		t.Error("the deleted session's own blobs survived gc")
	}
	if !hasBlob(t, s, f.shared) || !hasBlob(t, s, f.offLeaf) {
		t.Error("gc removed a blob another session holds")
	}
	loadsWhole(t, f, nil, f.shared, f.offLeaf)
}

func oneStoreCheck(t *testing.T, st backend.Storage) {
	ctx := context.Background()
	f := newOneStoreFixture(t, st)
	s := f.s
	rep, err := s.Check(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("fsck of a healthy store: %v %v", rep.Problems, err)
	}
	if rep.Sessions != 2 || rep.Checkpoints != 1 || rep.Runs != 1 || rep.Blobs == 0 {
		t.Errorf("fsck read %+v", rep)
	}
	// A deleted blob, a truncated session file.
	onlyA, _ := cas.Sum(cas.SHA256, f.onlyA)
	if err := s.Blobs().Delete(ctx, onlyA); err != nil {
		t.Fatal(err)
	}
	data := readString(t, st, f.sessAPath)
	if err := st.WriteFile(ctx, f.sessAPath, []byte(data[:len(data)-40])); err != nil {
		t.Fatal(err)
	}
	before := snapshotStore(t, st)
	rep, err = s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshotStore(t, st); !stdmaps.Equal(before, after) {
		t.Errorf("fsck changed the store:\n%v\n%v", before, after)
	}
	var lines []string
	for _, p := range rep.Problems {
		lines = append(lines, p.String())
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, f.sessAPath+":") || !strings.Contains(text, onlyA.String()) {
		t.Errorf("fsck did not name the truncated file and the missing blob:\n%s", text)
	}
	for _, l := range lines {
		if strings.Contains(l, "\n") {
			t.Errorf("problem on more than one line: %q", l)
		}
	}
}

// snapshotStore lists every file of st with its size.
func snapshotStore(t *testing.T, st backend.Storage) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for fi, err := range backend.Walk(context.Background(), st, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir {
			out[fi.Name] = fi.Size
		}
	}
	return out
}
