package trove_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// acked is what a fault scenario was told is durable.
type acked struct {
	session  string
	messages []string // markers
	lines    []string // transcript markers
	run      string
	events   []string
	blobs    []cas.Ref
	cps      map[string]string // checkpoint -> content of a.txt
}

// faultScenario drives every layer through the store on st, stopping at the
// first error, and records what each successful call acknowledged.
func faultScenario(ctx context.Context, st backend.Storage, ws afero.Fs, a *acked) error {
	s, err := trove.New(ctx, st, trove.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/w", Model: "m"})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	a.session = h.ID()
	for i := range 2 {
		marker := fmt.Sprintf("message-%d", i)
		img := make([]byte, 2000)
		img[0] = byte(i)
		if err := h.AppendMessage(ctx, conformance.OneStoreImage(marker, img)); err != nil {
			return err
		}
		if err := h.AppendMessage(ctx, conformance.OneStoreReply("reply "+marker)); err != nil {
			return err
		}
		if err := h.AppendTranscript(ctx, json.RawMessage(fmt.Sprintf(`{"marker":"line-%d"}`, i))); err != nil {
			return err
		}
		if err := h.Flush(ctx); err != nil {
			return err
		}
		a.messages = append(a.messages, marker)
		a.lines = append(a.lines, fmt.Sprintf("line-%d", i))
	}
	ref, err := s.Blobs().Put(ctx, []byte(strings.Repeat("a blob of the scenario\n", 100)))
	if err != nil {
		return err
	}
	a.blobs = append(a.blobs, ref)
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: "8f1d7b7a-7e8f-4e0f-9a7c-1c5d0e6b2b7a", SessionID: h.ID()})
	if err != nil {
		return err
	}
	defer w.Close()
	a.run = w.RunID()
	if _, err := w.Event(ctx, map[string]string{"marker": "event-1"}); err != nil {
		return err
	}
	if err := w.Sync(ctx); err != nil {
		return err
	}
	a.events = append(a.events, "event-1")
	m, err := s.CheckpointsOf(checkpoint.FS(ws, "/ws"))
	if err != nil {
		return err
	}
	defer m.Close()
	for i := range 2 {
		content := fmt.Sprintf("version %d\n", i)
		if err := afero.WriteFile(ws, "/ws/a.txt", []byte(content), 0o644); err != nil {
			return err
		}
		name := fmt.Sprintf("cp-%d", i)
		if _, err := m.CreateTree(ctx, name); err != nil {
			return err
		}
		a.cps[name] = content
	}
	if _, err := m.Rewind(ctx, "cp-0", false); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return h.Close(ctx)
}

// checkAcked reopens the store and finds everything the scenario was told
// is durable.
func checkAcked(t *testing.T, st backend.Storage, a *acked) {
	t.Helper()
	ctx := context.Background()
	s, err := trove.New(ctx, st, trove.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.messages) > 0 || len(a.lines) > 0 {
		meta, err := s.Sessions().Metadata(ctx, a.session)
		if err != nil {
			t.Fatalf("acknowledged session %s: %v", a.session, err)
		}
		var problems []string
		sess, err := tree.Open(ctx, st, meta.Path, tree.ReadOnly(), tree.WithBlobStore(s.Blobs()),
			tree.WithReport(func(p tree.Problem) {
				if errors.Is(p, tree.ErrBlob) {
					problems = append(problems, p.Error())
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, e := range sess.Entries() {
			all.Write(e.JSON())
		}
		for _, m := range a.messages {
			if strings.Count(all.String(), `"`+m+`"`) != 1 {
				t.Errorf("acknowledged message %s: %d copies", m, strings.Count(all.String(), `"`+m+`"`))
			}
		}
		if len(problems) > 0 {
			t.Errorf("acknowledged images unavailable: %v", problems)
		}
		var lines strings.Builder
		for l, err := range s.Sessions().Transcript(ctx, a.session) {
			if err == nil {
				lines.Write(l)
			}
		}
		for _, m := range a.lines {
			if strings.Count(lines.String(), m) != 1 {
				t.Errorf("acknowledged transcript line %s: %d copies", m, strings.Count(lines.String(), m))
			}
		}
	}
	for _, r := range a.blobs {
		if _, err := s.Blobs().Get(ctx, r); err != nil {
			t.Errorf("acknowledged blob %s: %v", r, err)
		}
	}
	if len(a.events) > 0 {
		var raw strings.Builder
		for e, err := range s.Runs().Records(ctx, a.run, runlog.Unresolved()) {
			if err == nil {
				raw.Write(e.Raw)
			}
		}
		for _, m := range a.events {
			if !strings.Contains(raw.String(), m) {
				t.Errorf("acknowledged run event %s lost", m)
			}
		}
	}
	for name, content := range a.cps {
		found := false
		for man, err := range checkpoint.Manifests(ctx, st) {
			if err != nil || !strings.HasSuffix(man, "/"+name+".json") {
				continue
			}
			m, err := checkpoint.LoadManifest(ctx, st, s.Blobs(), man)
			if err != nil {
				t.Errorf("acknowledged checkpoint %s: %v", name, err)
				break
			}
			for _, f := range m.Files {
				if f.Path == "a.txt" {
					ref, _ := cas.ParseRef(f.Digest)
					data, err := s.Blobs().Get(ctx, ref)
					found = err == nil && string(data) == content
				}
			}
		}
		if !found {
			t.Errorf("acknowledged checkpoint %s does not hold its content", name)
		}
	}
}

// TestFaultsAtEveryCall fails each storage call of a scenario that drives
// every layer in turn (an error, EIO, ENOSPC, and each followed by a crash
// that drops what was not synced), and checks that whatever a layer
// acknowledged before the fault is found after it.
func TestFaultsAtEveryCall(t *testing.T) {
	ctx := context.Background()
	// Atomic: a checkpoint writes its manifest and stat cache at once.
	var counted atomic.Int64
	{
		st := faulty.New(mem.New(), faulty.WithHook(func(string, string) error { counted.Add(1); return nil }))
		a := &acked{cps: map[string]string{}}
		if err := faultScenario(ctx, st, afero.NewMemMapFs(), a); err != nil {
			t.Fatalf("the scenario fails without faults: %v", err)
		}
		checkAcked(t, st.Inner(), a)
	}
	calls := int(counted.Load())
	t.Logf("the scenario makes %d storage calls", calls)
	// Each fault at every call (short writes and sync failures at every
	// write and sync), then the same followed by a crash.
	faults := map[string]func(n int) faulty.Option{
		"error":    func(n int) faulty.Option { return faulty.FailNth(n, nil) },
		"eio":      func(n int) faulty.Option { return faulty.FailNth(n, syscall.EIO) },
		"enospc":   func(n int) faulty.Option { return faulty.FailNth(n, syscall.ENOSPC) },
		"deadline": func(n int) faulty.Option { return faulty.FailNth(n, context.DeadlineExceeded) },
		// The nth Writer.Write passes half its bytes, then fails.
		"short-write": faulty.ShortWrite,
		// The nth Writer.Sync fails with EIO, syncing nothing.
		"eio-on-sync": faulty.FailSync,
	}
	for name, fault := range faults {
		for _, crash := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/crash=%v", name, crash), func(t *testing.T) {
				for n := 1; n <= calls; n++ {
					inner := mem.New()
					st := faulty.New(inner, fault(n))
					a := &acked{cps: map[string]string{}}
					// The scenario stops at its first error; what it recorded
					// before is what the layers acknowledged.
					_ = faultScenario(ctx, st, afero.NewMemMapFs(), a)
					if st.Faults() == 0 {
						continue // a call the scenario makes only sometimes
					}
					st.Clear()
					if crash {
						inner.Crash()
					}
					if t.Failed() {
						return
					}
					t.Run(fmt.Sprint(n), func(t *testing.T) { checkAcked(t, inner, a) })
				}
			})
		}
	}
}
