package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// benchStore is a store on the OS file system, its logger quiet.
func benchStore(b *testing.B) *session.Store {
	s, err := session.OpenStore(b.Context(), backendtest.NewOS(b),
		session.WithSessionOptions(tree.WithLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// Checklist item "Persist flag": with persistence off the same API works
// in memory and not one call reaches the storage.
func TestChecklist12PersistFlag(t *testing.T) {
	ctx := t.Context()
	sp := spy.New(mem.New())
	sessions, err := session.OpenSessions(ctx, sp, false)
	must(t, err)
	h, err := sessions.Create(ctx, session.CreateOptions{Cwd: "/w", Model: "m"})
	must(t, err)
	for i := range 50 {
		must(t, h.AppendMessage(ctx, userMsg(fmt.Sprintf("q%d", i))))
		must(t, h.AppendMessage(ctx, assistantMsg(fmt.Sprintf("a%d", i))))
	}
	must(t, h.AppendTranscript(ctx, json.RawMessage(`{"type":"x"}`)))
	must(t, h.Flush(ctx))
	if got := len(h.Session().Context().Messages); got != 100 {
		t.Fatalf("in-memory context has %d messages, want 100", got)
	}
	if m := h.Metadata(); m.MessageCount != 100 || m.TurnCount != 50 {
		t.Fatalf("metadata %+v", m)
	}
	must(t, h.Close(ctx))
	if _, err := sessions.Load(ctx, h.ID()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load from a no-op store = %v, want fs.ErrNotExist", err)
	}
	for range sessions.List(ctx, "") {
		t.Fatal("a no-op store listed a session")
	}
	if _, err := sessions.Fork(ctx, h.ID(), session.ForkOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Fork in a no-op store = %v, want fs.ErrNotExist", err)
	}
	must(t, h.Close(ctx)) // a second Close is harmless
	if n := sp.Count(); n != 0 {
		t.Fatalf("%d storage calls", n)
	}
}

// Group commit against a sync per message, on the OS file system.
func BenchmarkAppendMessage(b *testing.B) {
	for _, c := range []struct {
		name      string
		flushEach bool
	}{{"background-writer", false}, {"fsync-per-message", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := benchStore(b)
			h, err := s.Create(b.Context(), session.CreateOptions{Cwd: "/bench"})
			if err != nil {
				b.Fatal(err)
			}
			msg := assistantMsg(strings.Repeat("x", 400))
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if err := h.AppendMessage(b.Context(), msg); err != nil {
					b.Fatal(err)
				}
				if c.flushEach {
					if err := h.Flush(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := h.Close(b.Context()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// With persistence on, the same call opens the real store on the storage.
func TestOpenSessionsPersist(t *testing.T) {
	ctx := t.Context()
	sp := spy.New(mem.New())
	sessions, err := session.OpenSessions(ctx, sp, true)
	must(t, err)
	h, err := sessions.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q")))
	must(t, h.AppendMessage(ctx, assistantMsg("a")))
	must(t, h.Close(ctx))
	if sp.Count() == 0 {
		t.Fatal("a persisting store wrote nothing")
	}
	msgs, err := sessions.LoadMessages(ctx, h.ID())
	must(t, err)
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
}

// A message that is not one is refused at once, in the caller, and the
// handle goes on: nothing of it reaches the file, and Metadata counts the
// messages that were taken.
func TestHandleRefusesABadMessage(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s := storeOn(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q")))
	for _, bad := range []string{`{"role":"user"`, `[]`, `{"content":"x"}`, `{"role":"assistant","usage":{"input":"3"}}`} {
		if err := h.AppendMessage(ctx, json.RawMessage(bad)); !errors.Is(err, tree.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", bad, err)
		}
	}
	must(t, h.AppendMessage(ctx, assistantMsg("a")))
	if m := h.Metadata(); m.MessageCount != 2 || m.TurnCount != 1 {
		t.Fatalf("metadata counts %d messages, %d turns before a flush", m.MessageCount, m.TurnCount)
	}
	must(t, h.Close(ctx))
	sess, err := tree.Open(ctx, st, h.Path(), tree.ReadOnly())
	must(t, err)
	if n := len(sess.Entries()); n != 2 {
		t.Fatalf("%d entries in the file, want 2", n)
	}
}

// Appends no Flush asks for are written and synced when the sync interval
// runs out: on mem, a crash after that keeps them.
func TestHeldAppendsSyncWithinTheInterval(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithSyncInterval(20*time.Millisecond))
	must(t, err)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q")))
	must(t, h.AppendMessage(ctx, assistantMsg("a")))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, err := st.ReadFile(ctx, h.Path()); err == nil && bytes.Count(data, []byte("\n")) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("appends not written 10 s after a 20 ms sync interval")
		}
		time.Sleep(5 * time.Millisecond) // polling for the timer's write
	}
	st.Crash()
	data, err := st.ReadFile(ctx, h.Path())
	if err != nil || bytes.Count(data, []byte("\n")) != 3 {
		t.Fatalf("after a crash: %d lines, %v", bytes.Count(data, []byte("\n")), err)
	}
}

// A full queue makes senders wait for the writer, never drops: with room
// for two, four goroutines append 200 messages and every one is written.
func TestFullQueueWaitsNeverDrops(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithQueue(2), session.WithSyncInterval(time.Hour))
	must(t, err)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := h.AppendMessage(ctx, userMsg(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := h.Metadata(); m.MessageCount != 200 {
		t.Fatalf("metadata counts %d messages", m.MessageCount)
	}
	must(t, h.Close(ctx))
	sess, err := tree.Open(ctx, st, h.Path(), tree.ReadOnly())
	must(t, err)
	seen := map[string]bool{}
	for _, e := range sess.Entries() {
		seen[tree.MessageText(e.Field("message"))] = true
	}
	for g := range 4 {
		for i := range 50 {
			if !seen[fmt.Sprintf("g%d-%d", g, i)] {
				t.Fatalf("g%d-%d was dropped (%d entries)", g, i, len(sess.Entries()))
			}
		}
	}
}

// An appended message is the caller's no more: reusing its buffer before
// the message is written changes nothing.
func TestAppendCopiesTheMessage(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s := storeOn(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	buf := []byte(`{"role":"user","content":"first"}`)
	must(t, h.AppendMessage(ctx, buf))
	copy(buf, `{"role":"user","content":"XXXXX"}`)
	must(t, h.Close(ctx))
	data, err := st.ReadFile(ctx, h.Path())
	must(t, err)
	if !bytes.Contains(data, []byte(`"content":"first"`)) || bytes.Contains(data, []byte("XXXXX")) {
		t.Fatalf("the file holds what the buffer became:\n%s", data)
	}
}

// A Handle appends entries other than messages through its writer; one the
// tree refuses is returned and later appends go on.
func TestHandleAppendEntry(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s := storeOn(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q")))
	must(t, h.AppendMessage(ctx, assistantMsg("a")))
	if _, err := h.Append(ctx, &tree.Compaction{Summary: "s", FirstKeptEntryID: "nope"}); !errors.Is(err, tree.ErrInvalid) {
		t.Fatalf("a compaction naming no entry: %v", err)
	}
	must(t, h.Flush(ctx))
	first := h.Session().Entries()[0].ID()
	id, err := h.Append(ctx, &tree.Compaction{Summary: "earlier work", FirstKeptEntryID: first, TokensBefore: 10})
	must(t, err)
	if _, err := h.Append(ctx, &tree.Label{TargetID: first, Label: "start"}); err != nil {
		t.Fatal(err)
	}
	must(t, h.AppendMessage(ctx, userMsg("after")))
	must(t, h.Close(ctx))
	sess, err := tree.Open(ctx, st, h.Path(), tree.ReadOnly())
	must(t, err)
	if e := sess.Entry(id); e == nil || e.Type() != tree.TypeCompaction {
		t.Fatalf("compaction %s not in the file", id)
	}
	if got := sess.Labels()[first]; got != "start" {
		t.Errorf("label %q", got)
	}
	if n := len(sess.Entries()); n != 5 {
		t.Errorf("%d entries, want 5", n)
	}
	if _, err := h.Append(ctx, &tree.Label{TargetID: first, Label: "x"}); err == nil {
		t.Error("append after close succeeded")
	}
}
