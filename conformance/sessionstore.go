package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// TestSessionStore checks package session, the session store API (create,
// continue, resume, resume-at, fork, delete, list, metadata, transcript,
// the background writer, locking) on the backends newBackend makes. The
// items of its spec's checklist (the session store API, docs/formats.md) about sessions
// are subtests named Checklist<NN><Item>; the checkpoint items are in
// TestCheckpoint.
func TestSessionStore(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	x := &storeSuite{newBackend: newBackend}
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Checklist01SessionCRUD", x.crud},
		{"Checklist02Continue", x.continueMode},
		{"Checklist03Resume", x.resume},
		{"Checklist04ResumeAt", x.resumeAt},
		{"Checklist05Fork", x.fork},
		{"Checklist06JSONLFormat", x.jsonl},
		{"Checklist11ConcurrentSafety", x.concurrent},
		{"Checklist13Transcript", x.transcript},
		{"Checklist14LargeSessions", x.large},
		{"Metadata", x.metadata},
		{"WriterErrorLatched", x.latched},
		{"FlushIsDurable", x.flushDurable},
		{"ForeignSessions", x.foreign},
		{"Hostile", x.hostile},
	} {
		t.Run(c.name, c.run)
	}
}

type storeSuite struct {
	newBackend func(tb testing.TB) backend.Storage
}

// clock is a strictly increasing clock, so update order is clear even on
// stores with coarse modification times.
func (x *storeSuite) clock() func() time.Time {
	var mu sync.Mutex
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n) * time.Second)
	}
}

func (x *storeSuite) open(t *testing.T, st backend.Storage, opts ...session.Option) *session.Store {
	t.Helper()
	quiet := session.WithSessionOptions(tree.WithLogger(slog.New(slog.DiscardHandler)))
	// The clock ticks a second a call, far faster than real time: leases
	// read on it must outlive the test.
	lease := session.WithLease(24*time.Hour, time.Hour)
	s, err := session.OpenStore(t.Context(), st, append([]session.Option{session.WithClock(x.clock()), lease, quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func storeUser(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1})
	return b
}

func storeAssistant(text string, in, out int, cost float64) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "model": "m-1",
		"content": []any{map[string]any{"type": "text", "text": text}},
		"usage":   map[string]any{"input": in, "output": out, "cost": map[string]any{"total": cost}}, "timestamp": 2})
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// turns appends n user/assistant pairs and flushes.
func turns(t *testing.T, h *session.Handle, prefix string, n int) {
	t.Helper()
	for i := range n {
		must(t, h.AppendMessage(t.Context(), storeUser(fmt.Sprintf("%s q%d", prefix, i))))
		must(t, h.AppendMessage(t.Context(), storeAssistant(fmt.Sprintf("%s a%d", prefix, i), 10, 5, 0.5)))
	}
	must(t, h.Flush(t.Context()))
}

func texts(t *testing.T, es []*tree.Entry) []string {
	t.Helper()
	var out []string
	for _, e := range es {
		var m struct {
			Content any `json:"content"`
		}
		must(t, json.Unmarshal(e.Field("message"), &m))
		switch c := m.Content.(type) {
		case string:
			out = append(out, c)
		case []any:
			out = append(out, c[0].(map[string]any)["text"].(string))
		}
	}
	return out
}

func (x *storeSuite) listIDs(t *testing.T, s *session.Store, cwd string) []string {
	t.Helper()
	var ids []string
	for m, err := range s.List(t.Context(), cwd) {
		must(t, err)
		ids = append(ids, m.ID)
	}
	return ids
}

func (x *storeSuite) crud(t *testing.T) {
	ctx := t.Context()
	st := x.newBackend(t)
	s := x.open(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w", Model: "m-0", AgentName: "coder"})
	must(t, err)
	id := h.ID()
	turns(t, h, "crud", 2)
	must(t, st.WriteFile(ctx, backend.Join(h.CheckpointDir(), "cp1.json"), []byte(`{}`)))
	must(t, h.Close(ctx))
	if ids := x.listIDs(t, s, "/w"); !slices.Equal(ids, []string{id}) {
		t.Fatalf("List(/w) = %v, want [%s]", ids, id)
	}
	msgs, err := s.LoadMessages(ctx, id)
	must(t, err)
	if got := texts(t, msgs); !slices.Equal(got, []string{"crud q0", "crud a0", "crud q1", "crud a1"}) {
		t.Fatalf("LoadMessages = %q", got)
	}
	h2, err := s.Load(ctx, id)
	must(t, err)
	turns(t, h2, "more", 1)
	must(t, h2.Close(ctx))
	msgs, err = s.LoadMessages(ctx, id)
	must(t, err)
	if len(msgs) != 6 {
		t.Fatalf("after a second writer session: %d messages, want 6", len(msgs))
	}
	must(t, s.Delete(ctx, id))
	if ids := x.listIDs(t, s, ""); len(ids) != 0 {
		t.Fatalf("List after Delete = %v", ids)
	}
	if _, err := s.Load(ctx, id); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load after Delete = %v, want fs.ErrNotExist", err)
	}
	for fi, err := range backend.Walk(ctx, st, session.SessionsDir) {
		must(t, err)
		if !fi.IsDir {
			t.Errorf("Delete left %s", fi.Name)
		}
	}
	if err := s.Delete(ctx, id); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Delete = %v, want fs.ErrNotExist", err)
	}
}

func (x *storeSuite) continueMode(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	mk := func(cwd, text string) string {
		h, err := s.Create(ctx, session.CreateOptions{Cwd: cwd})
		must(t, err)
		turns(t, h, text, 1)
		must(t, h.Close(ctx))
		return h.ID()
	}
	older := mk("/a", "older")
	newer := mk("/a", "newer")
	mk("/b", "other cwd")
	// Updating the older one makes it the most recent.
	h, err := s.Continue(ctx, "/a")
	must(t, err)
	if h.ID() != newer {
		t.Fatalf("Continue(/a) = %s, want the newest %s", h.ID(), newer)
	}
	must(t, h.Close(ctx))
	h, err = s.Load(ctx, older)
	must(t, err)
	turns(t, h, "older again", 1)
	must(t, h.Close(ctx))
	h, err = s.Continue(ctx, "/a")
	must(t, err)
	defer h.Close(ctx)
	if h.ID() != older {
		t.Fatalf("Continue(/a) after updating %s = %s", older, h.ID())
	}
	if _, err := s.Continue(ctx, "/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Continue of a cwd without sessions = %v", err)
	}
}

func (x *storeSuite) resume(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	mk := func(id string) {
		h, err := s.Create(ctx, session.CreateOptions{ID: id, Cwd: "/r"})
		must(t, err)
		turns(t, h, id, 1)
		must(t, h.Close(ctx))
	}
	mk("abc111")
	mk("abc222")
	mk("xyz333")
	if _, err := s.Create(ctx, session.CreateOptions{ID: "abc111", Cwd: "/elsewhere"}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create with a taken id = %v, want fs.ErrExist", err)
	}
	for _, ref := range []string{"xyz333", "xy", "abc1"} {
		h, err := s.Resume(ctx, ref)
		must(t, err)
		if !strings.HasPrefix(h.ID(), ref) {
			t.Errorf("Resume(%s) = %s", ref, h.ID())
		}
		must(t, h.Close(ctx))
	}
	_, err := s.Resume(ctx, "abc")
	var ae *session.AmbiguousError
	if !errors.As(err, &ae) || !errors.Is(err, session.ErrAmbiguous) {
		t.Fatalf("Resume(abc) = %v, want an AmbiguousError", err)
	}
	var cands []string
	for _, c := range ae.Candidates {
		cands = append(cands, c.ID)
	}
	slices.Sort(cands)
	if !slices.Equal(cands, []string{"abc111", "abc222"}) || !strings.Contains(err.Error(), "abc111") {
		t.Fatalf("candidates %v in %q", cands, err)
	}
	if _, err := s.Resume(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Resume(nope) = %v", err)
	}
}

func (x *storeSuite) resumeAt(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/r"})
	must(t, err)
	turns(t, h, "t", 3)
	id := h.ID()
	must(t, h.Close(ctx))
	msgs, err := s.LoadMessages(ctx, id)
	must(t, err)
	at := msgs[3].ID() // "t a1"
	upTo, err := s.LoadMessagesUpTo(ctx, id, at)
	must(t, err)
	if got := texts(t, upTo); !slices.Equal(got, []string{"t q0", "t a0", "t q1", "t a1"}) {
		t.Fatalf("LoadMessagesUpTo = %q", got)
	}
	h, err = s.ResumeAt(ctx, id, at)
	must(t, err)
	if got := len(h.Session().Context().Messages); got != 4 {
		t.Fatalf("ResumeAt context has %d messages, want 4", got)
	}
	turns(t, h, "branch", 1)
	must(t, h.Close(ctx))
	msgs, err = s.LoadMessages(ctx, id)
	must(t, err)
	if got := texts(t, msgs); !slices.Equal(got, []string{"t q0", "t a0", "t q1", "t a1", "branch q0", "branch a0"}) {
		t.Fatalf("after ResumeAt and two appends the path is %q", got)
	}
	if _, err := s.ResumeAt(ctx, id, "no-such-message"); err == nil {
		t.Fatal("ResumeAt an unknown message succeeded")
	}
}

func (x *storeSuite) fork(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/f", AgentName: "coder"})
	must(t, err)
	turns(t, h, "src", 3)
	src := h.ID()
	must(t, h.Close(ctx))
	msgs, err := s.LoadMessages(ctx, src)
	must(t, err)
	for _, c := range []struct {
		name string
		o    session.ForkOptions
		want []string
	}{
		{"whole", session.ForkOptions{}, []string{"src q0", "src a0", "src q1", "src a1", "src q2", "src a2"}},
		{"at", session.ForkOptions{At: msgs[1].ID()}, []string{"src q0", "src a0"}},
		{"last", session.ForkOptions{Last: 3}, []string{"src a1", "src q2", "src a2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := s.Fork(ctx, src, c.o)
			must(t, err)
			if f.ID() == src || f.Metadata().ParentID != src || f.Session().Header().ParentSession != src {
				t.Fatalf("fork %s: id %s, parent %q / %q", c.name, f.ID(), f.Metadata().ParentID, f.Session().Header().ParentSession)
			}
			turns(t, f, "fork-only", 1)
			must(t, f.Close(ctx))
			got, err := s.LoadMessages(ctx, f.ID())
			must(t, err)
			if g := texts(t, got); !slices.Equal(g, append(slices.Clone(c.want), "fork-only q0", "fork-only a0")) {
				t.Fatalf("fork %s holds %q", c.name, g)
			}
			orig, err := s.LoadMessages(ctx, src)
			must(t, err)
			if len(orig) != 6 {
				t.Fatalf("the source changed: %d messages", len(orig))
			}
		})
	}
}

func (x *storeSuite) jsonl(t *testing.T) {
	ctx := t.Context()
	st := x.newBackend(t)
	s := x.open(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/j"})
	must(t, err)
	turns(t, h, "j", 2)
	id, path := h.ID(), h.Path()
	must(t, h.Close(ctx))
	data, err := st.ReadFile(ctx, path)
	must(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 5 { // header + 4 messages
		t.Fatalf("%d lines, want 5:\n%s", len(lines), data)
	}
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d is not one JSON value: %q", i+1, l)
		}
	}
	// A partial write (a torn last line) loses only that line.
	must(t, st.WriteFile(ctx, path, append(data, `{"type":"message","id":"torn","parentId":"x","mess`...)))
	msgs, err := s.LoadMessages(ctx, id)
	must(t, err)
	if len(msgs) != 4 {
		t.Fatalf("after a torn line: %d messages, want 4", len(msgs))
	}
	h, err = s.Load(ctx, id)
	must(t, err)
	turns(t, h, "after-torn", 1)
	must(t, h.Close(ctx))
	msgs, err = s.LoadMessages(ctx, id)
	must(t, err)
	if got := texts(t, msgs); len(got) != 6 || got[5] != "after-torn a0" {
		t.Fatalf("appending after a torn line: %q", got)
	}
}

func (x *storeSuite) concurrent(t *testing.T) {
	ctx := t.Context()
	st := x.newBackend(t)
	s := x.open(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/c"})
	must(t, err)
	must(t, h.AppendMessage(ctx, storeUser("start")))
	must(t, h.AppendMessage(ctx, storeAssistant("ok", 1, 1, 0)))
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if err := h.AppendMessage(ctx, storeUser(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// A second writer of the same session is refused, never interleaved.
	// (Flushed first: until then the writer may hold the appends and the
	// file may not be there to find.)
	must(t, h.Flush(ctx))
	if h2, err := s.Load(ctx, h.ID()); !errors.Is(err, session.ErrLocked) || !errors.Is(err, backend.ErrLocked) {
		if h2 != nil {
			h2.Close(ctx)
		}
		t.Fatalf("a second writer = %v, want ErrLocked", err)
	}
	must(t, h.Close(ctx))
	msgs, err := s.LoadMessages(ctx, h.ID())
	must(t, err)
	if len(msgs) != 2+writers*each {
		t.Fatalf("%d messages, want %d", len(msgs), 2+writers*each)
	}
	seen := map[string]bool{}
	for _, txt := range texts(t, msgs) {
		if seen[txt] {
			t.Fatalf("%q twice", txt)
		}
		seen[txt] = true
	}
	// Per writer, order is kept.
	for g := range writers {
		last := -1
		for _, txt := range texts(t, msgs) {
			var gg, i int
			if n, _ := fmt.Sscanf(txt, "g%d-%d", &gg, &i); n == 2 && gg == g {
				if i != last+1 {
					t.Fatalf("writer %d: message %d after %d", g, i, last)
				}
				last = i
			}
		}
	}
}

func (x *storeSuite) transcript(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/t"})
	must(t, err)
	turns(t, h, "t", 1) // the session file appears with the first answer
	var want []string
	for i := range 5 {
		m := fmt.Sprintf(`{"type":"stream_event","n":%d,"nested":{"a":[1,2]}}`, i)
		want = append(want, m)
		must(t, h.AppendTranscript(ctx, json.RawMessage(m)))
	}
	if err := h.AppendTranscript(ctx, json.RawMessage(`{"broken`)); !errors.Is(err, tree.ErrInvalid) {
		t.Fatalf("AppendTranscript of bad JSON = %v, want ErrInvalid", err)
	}
	must(t, h.Close(ctx))
	var got []string
	for m, err := range s.Transcript(ctx, h.ID()) {
		must(t, err)
		got = append(got, string(m))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transcript = %q, want %q", got, want)
	}
}

func (x *storeSuite) large(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/l"})
	must(t, err)
	const n = 1000
	for i := range n {
		must(t, h.AppendMessage(ctx, storeUser(fmt.Sprintf("q%d %s", i, strings.Repeat("x", 200)))))
		must(t, h.AppendMessage(ctx, storeAssistant(fmt.Sprintf("a%d", i), 3, 2, 0.001)))
	}
	must(t, h.Close(ctx))
	msgs, err := s.LoadMessages(ctx, h.ID())
	must(t, err)
	if len(msgs) != 2*n {
		t.Fatalf("%d messages, want %d", len(msgs), 2*n)
	}
	var m session.Metadata
	for mm, err := range s.List(ctx, "/l") {
		must(t, err)
		m = mm
	}
	if m.MessageCount != 2*n || m.TurnCount != n || m.TotalTokens != 5*n {
		t.Fatalf("metadata %+v", m)
	}
}

func (x *storeSuite) metadata(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/m", Model: "m-0", AgentName: "coder", Title: "T"})
	must(t, err)
	turns(t, h, "m", 3)
	h.UpdateMetadata(func(m *session.Metadata) { m.ExitReason = "completed" })
	must(t, h.Close(ctx))
	var got session.Metadata
	for m, err := range s.List(ctx, "/m") {
		must(t, err)
		got = m
	}
	if got.MessageCount != 6 || got.TurnCount != 3 || got.InputTokens != 30 || got.OutputTokens != 15 ||
		got.TotalTokens != 45 || got.CostUSD != 1.5 || got.Model != "m-1" || got.ExitReason != "completed" ||
		got.AgentName != "coder" || got.Title != "T" || got.FirstMessage != "m q0" || !got.UpdatedAt.After(got.CreatedAt) ||
		got.ProjectHash != session.EncodeCwd("/m") {
		t.Fatalf("metadata = %+v", got)
	}
	must(t, s.UpdateMetadata(ctx, h.ID(), func(m *session.Metadata) { m.Title = "renamed"; m.ID = "forged" }))
	for m, err := range s.List(ctx, "/m") {
		must(t, err)
		if m.Title != "renamed" || m.ID != h.ID() {
			t.Fatalf("after UpdateMetadata: %+v", m)
		}
	}
}

func (x *storeSuite) latched(t *testing.T) {
	ctx := t.Context()
	boom := errors.New("disk on fire")
	fst := faulty.New(x.newBackend(t))
	s := x.open(t, fst)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/e"})
	must(t, err)
	turns(t, h, "ok", 1)
	fst.Inject(faulty.FailFrom(1, boom, "Writer.Write", "Writer.Sync", "WriteFile"))
	must(t, h.AppendMessage(ctx, storeUser("lost?")))
	must(t, h.AppendMessage(ctx, storeAssistant("lost?", 1, 1, 0)))
	if err := h.Flush(ctx); !errors.Is(err, boom) {
		t.Fatalf("Flush after a failed write = %v, want the write's error", err)
	}
	if err := h.AppendMessage(ctx, storeUser("later")); !errors.Is(err, boom) {
		t.Fatalf("AppendMessage after the error = %v, want it latched", err)
	}
	if err := h.Close(ctx); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want the latched error", err)
	}
	fst.Clear()
	msgs, err := s.LoadMessages(ctx, h.ID())
	must(t, err)
	if got := texts(t, msgs); len(got) < 2 || got[0] != "ok q0" || got[1] != "ok a0" {
		t.Fatalf("the flushed messages are gone: %q", got)
	}
}

func (x *storeSuite) flushDurable(t *testing.T) {
	ctx := t.Context()
	st := x.newBackend(t)
	c, ok := st.(backend.Crasher)
	if !ok {
		t.Skip("backend cannot simulate a crash")
	}
	s := x.open(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/d"})
	must(t, err)
	turns(t, h, "durable", 5)
	id := h.ID()
	must(t, h.AppendMessage(ctx, storeUser("maybe")))
	c.Crash()        // the handle is gone with the "process"
	_ = h.Close(ctx) // stops its writer; the store under it is gone
	s = x.open(t, st)
	msgs, err := s.LoadMessages(ctx, id)
	must(t, err)
	if got := texts(t, msgs); len(got) < 10 || got[9] != "durable a4" {
		t.Fatalf("after a crash, flushed messages are missing: %q", got)
	}
	if err := s.BreakLock(ctx, id); err != nil {
		t.Fatal(err)
	}
	h, err = s.Load(ctx, id)
	must(t, err)
	must(t, h.Close(ctx))
}

// foreign: a session written by another v3 implementation (no sidecar) is
// listed, resumed and forked.
func (x *storeSuite) foreign(t *testing.T) {
	ctx := t.Context()
	st := x.newBackend(t)
	path := session.SessionPath("/p", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "f0f0f0f0")
	lines := []string{
		`{"type":"session","version":3,"id":"f0f0f0f0","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/p"}`,
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hi","timestamp":1}}`,
		`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"model":"x","usage":{"input":4,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":7,"cost":{"total":0.25}},"timestamp":2}}`,
	}
	must(t, st.WriteFile(ctx, path, []byte(strings.Join(lines, "\n")+"\n")))
	s := x.open(t, st)
	if ids := x.listIDs(t, s, "/p"); !slices.Equal(ids, []string{"f0f0f0f0"}) {
		t.Fatalf("List = %v", ids)
	}
	h, err := s.Resume(ctx, "f0f0")
	must(t, err)
	if m := h.Metadata(); m.MessageCount != 2 || m.TotalTokens != 7 || m.Model != "x" {
		t.Fatalf("metadata rebuilt from the file: %+v", m)
	}
	turns(t, h, "trove", 1)
	must(t, h.Close(ctx))
	f, err := s.Fork(ctx, "f0f0f0f0", session.ForkOptions{Last: 2})
	must(t, err)
	must(t, f.Close(ctx))
	msgs, err := s.LoadMessages(ctx, f.ID())
	must(t, err)
	if got := texts(t, msgs); !slices.Equal(got, []string{"trove q0", "trove a0"}) {
		t.Fatalf("fork of the last 2: %q", got)
	}
}

func (x *storeSuite) hostile(t *testing.T) {
	ctx := t.Context()
	s := x.open(t, x.newBackend(t))
	for _, id := range []string{"../x", "a/b", "a_b", "", "\x00"} {
		if id == "" {
			continue // the empty id means "make one"
		}
		if _, err := s.Create(ctx, session.CreateOptions{ID: id, Cwd: "/h"}); !errors.Is(err, tree.ErrInvalid) {
			t.Errorf("Create(id %q) = %v, want ErrInvalid", id, err)
		}
	}
	if _, err := s.Load(ctx, ""); !errors.Is(err, tree.ErrInvalid) {
		t.Errorf("Load(\"\") = %v, want ErrInvalid", err)
	}
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/h"})
	must(t, err)
	defer h.Close(ctx)
	for _, bad := range []string{`not json`, `[1,2]`, `{"content":"no role"}`} {
		if err := h.AppendMessage(ctx, json.RawMessage(bad)); !errors.Is(err, tree.ErrInvalid) {
			t.Errorf("AppendMessage(%s) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := h.Flush(ctx); err != nil {
		t.Errorf("a refused message poisoned the session: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := h.Flush(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a cancelled context = %v", err)
	}
}
