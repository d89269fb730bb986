package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

var leafIDField = regexp.MustCompile(`"leafId":("[^"]*"|null)`)

// TestForkProperty forks random trees whole and at random entries and
// compares the context the fork rebuilds with the source's.
func TestForkProperty(t *testing.T) {
	ctx := context.Background()
	trees := 600
	if testing.Short() {
		trees = 100
	}
	var (
		st    backend.Storage
		store *session.Store
	)
	created := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	mismatches := 0
	for seed := range uint64(trees) {
		// A fresh store every 50 trees: each fork lists its directory, and
		// one store of 1,800 sessions made this test quadratic (4 minutes
		// under -race) without testing more of what a fork does.
		if seed%50 == 0 {
			fresh := mem.New()
			t.Cleanup(func() { fresh.Close() })
			st = fresh
			var err error
			if store, err = session.OpenStore(ctx, st, session.WithInlineBlobs()); err != nil {
				t.Fatal(err)
			}
		}
		data, version := generateTree(seed)
		id := fmt.Sprintf("src-%d", seed)
		name := session.SessionPath("/w", created, id)
		if err := st.WriteFile(ctx, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		src, err := tree.Open(ctx, st, name, tree.ReadOnly(), tree.WithReport(func(tree.Problem) {}))
		if err != nil {
			t.Fatal(err)
		}
		compare := func(what string, want *tree.Context, forkID string) {
			t.Helper()
			meta, err := store.Metadata(ctx, forkID)
			if err != nil {
				t.Fatalf("seed %d %s: the fork: %v", seed, what, err)
			}
			fork, err := tree.Open(ctx, st, meta.Path, tree.ReadOnly(), tree.WithReport(func(tree.Problem) {}))
			if err != nil {
				t.Fatal(err)
			}
			got, wantJSON := contextJSON(fork.Context()), contextJSON(want)
			if version < 3 {
				// Migration mints ids anew at every load of a v1 file.
				got, wantJSON = leafIDField.ReplaceAllString(got, ""), leafIDField.ReplaceAllString(wantJSON, "")
			}
			if got != wantJSON {
				mismatches++
				if mismatches < 4 {
					t.Errorf("seed %d (v%d) %s: fork context differs\nsource: %.600s\nfork:   %.600s\nfile:\n%s", seed, version, what, wantJSON, got, data)
				}
			}
			for _, ref := range regexp.MustCompile(`blob:sha256:[0-9a-f]{64}`).FindAllString(data, -1) {
				if in := readStore(t, st, meta.Path); what == "whole" && version == 3 && !strings.Contains(in, ref) {
					t.Errorf("seed %d: the whole fork lost the ref %s", seed, ref)
				}
			}
		}
		meta, err := store.ForkSession(ctx, id, session.ForkOptions{})
		if err != nil {
			t.Fatalf("seed %d: fork: %v", seed, err)
		}
		compare("whole", src.Context(), meta.ID)
		if version < 3 {
			continue // ids differ between loads of a v1 file: no entry to name
		}
		var msgs []*tree.Entry
		for _, e := range src.Entries() {
			if e.Type() == tree.TypeMessage && src.Entry(e.ID()) == e {
				msgs = append(msgs, e)
			}
		}
		if len(msgs) == 0 {
			continue
		}
		at := msgs[int(seed)%len(msgs)].ID()
		want, err := src.ContextAt(at)
		if err != nil {
			t.Fatal(err)
		}
		meta, err = store.ForkSession(ctx, id, session.ForkOptions{At: at})
		if err != nil {
			t.Fatalf("seed %d: fork --at %s: %v", seed, at, err)
		}
		compare("at "+at, want, meta.ID)
	}
	if mismatches > 0 {
		t.Errorf("%d of %d forks open unlike their source", mismatches, trees)
	}
}

func readStore(t *testing.T, st backend.Storage, name string) string {
	t.Helper()
	b, err := st.ReadFile(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A fork of a session holding only a prompt is written, listed and
// resumable; a fork does no blob reads or writes.
func TestForkOfPromptOnly(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	blobs := &countingBlobs{}
	store, err := session.OpenStore(ctx, st, session.WithSessionOptions(tree.WithBlobStore(blobs)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, h.AppendMessage(ctx, []byte(`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"blob:sha256:`+strings.Repeat("ab", 32)+`","mimeType":"image/png"}],"timestamp":1}`)))
	must(t, h.Close(ctx))
	before := blobs.calls
	meta, err := store.ForkSession(ctx, h.ID(), session.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if blobs.calls != before {
		t.Errorf("the fork made %d blob calls", blobs.calls-before)
	}
	if !strings.Contains(readStore(t, st, meta.Path), "blob:sha256:"+strings.Repeat("ab", 32)) {
		t.Error("the fork does not hold the ref")
	}
	listed := false
	for m, err := range store.List(ctx, "/w") {
		must(t, err)
		listed = listed || m.ID == meta.ID
	}
	if !listed || meta.MessageCount != 1 || meta.ParentID != h.ID() {
		t.Errorf("fork listed=%v meta=%+v", listed, meta)
	}
	// Its first message is the source's text, the image left out, not a
	// note that the image could not be read.
	src, err := store.Metadata(ctx, h.ID())
	must(t, err)
	if meta.FirstMessage != "look" || src.FirstMessage != "look" {
		t.Errorf("first message of the fork %q, of its source %q", meta.FirstMessage, src.FirstMessage)
	}
	if _, err := st.Stat(ctx, backend.Join(session.SidecarDir(meta.Path), "writer.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ForkSession left a writer lock: %v", err)
	}
	h2, err := store.Resume(ctx, meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	must(t, h2.Close(ctx))
	// Fork, which also opens the fork to append to, reads no blob either.
	before = blobs.calls
	h3, err := store.Fork(ctx, h.ID(), session.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, h3.Close(ctx))
	if blobs.calls != before {
		t.Errorf("Fork made %d blob calls", blobs.calls-before)
	}
}

// countingBlobs counts every call and holds nothing.
type countingBlobs struct{ calls int }

func (c *countingBlobs) Put(context.Context, []byte) (cas.Ref, error) {
	c.calls++
	return cas.Ref{}, errors.New("no puts here")
}

func (c *countingBlobs) PutReader(context.Context, io.Reader) (cas.Ref, error) {
	c.calls++
	return cas.Ref{}, errors.New("no puts here")
}

func (c *countingBlobs) Get(context.Context, cas.Ref) ([]byte, error) {
	c.calls++
	return nil, fs.ErrNotExist
}

func (c *countingBlobs) Open(context.Context, cas.Ref) (io.ReadCloser, error) {
	c.calls++
	return nil, fs.ErrNotExist
}

func (c *countingBlobs) Has(context.Context, cas.Ref) (bool, error) {
	c.calls++
	return false, nil
}

// A writer killed between creating its file and the first write leaves an
// empty file: it is listed, forks, and resumes.
func TestEmptySessionFileResumes(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	store, err := session.OpenStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.Create(ctx, session.CreateOptions{Cwd: "/w", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, h.Close(ctx))
	must(t, st.WriteFile(ctx, h.Path(), nil)) // what the kill leaves
	listed := false
	for m, err := range store.List(ctx, "/w") {
		must(t, err)
		listed = listed || m.ID == h.ID()
	}
	if !listed {
		t.Error("an empty session file is not listed")
	}
	meta, err := store.ForkSession(ctx, h.ID(), session.ForkOptions{})
	if err != nil {
		t.Fatalf("fork of an empty session file: %v", err)
	}
	if meta.ParentID != h.ID() {
		t.Errorf("fork parent %q", meta.ParentID)
	}
	h2, err := store.Resume(ctx, h.ID())
	if err != nil {
		t.Fatalf("resume of an empty session file: %v", err)
	}
	must(t, h2.AppendMessage(ctx, []byte(`{"role":"user","content":"again","timestamp":1}`)))
	must(t, h2.Close(ctx))
	msgs, err := store.LoadMessages(ctx, h.ID())
	if err != nil || len(msgs) != 1 {
		t.Fatalf("after resume: %d messages, %v", len(msgs), err)
	}
}

// A kill that tore the last transcript line loses no acknowledged line:
// the next append is not glued to the torn bytes.
func TestTranscriptTornTail(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	store, err := session.OpenStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, h.AppendMessage(ctx, []byte(`{"role":"user","content":"q","timestamp":1}`)))
	must(t, h.AppendTranscript(ctx, []byte(`{"n":1}`)))
	must(t, h.Close(ctx))
	name := backend.Join(session.SidecarDir(h.Path()), session.TranscriptFile)
	old := readStore(t, st, name)
	must(t, st.WriteFile(ctx, name, []byte(old+`{"n":2,"torn`))) // what a kill leaves
	h2, err := store.Resume(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	must(t, h2.AppendTranscript(ctx, []byte(`{"n":3}`)))
	must(t, h2.Close(ctx))
	var got []string
	for line, err := range store.Transcript(ctx, h.ID()) {
		must(t, err)
		got = append(got, string(line))
	}
	if strings.Join(got, " ") != `{"n":1} {"n":3}` {
		t.Errorf("transcript after a torn tail: %v\n%s", got, readStore(t, st, name))
	}
}

// A sidecar that lags the file after a kill does not make a resumed
// handle count from it.
func TestResumeRecountsStaleMetadata(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	store, err := session.OpenStore(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, h.AppendMessage(ctx, []byte(`{"role":"user","content":"q1","timestamp":1}`)))
	must(t, h.Flush(ctx))
	metaName := backend.Join(session.SidecarDir(h.Path()), session.MetaFile)
	stale := readStore(t, st, metaName) // 1 message
	for i := range 4 {
		must(t, h.AppendMessage(ctx, []byte(fmt.Sprintf(`{"role":"user","content":"q%d","timestamp":1}`, i+2))))
	}
	must(t, h.Close(ctx))
	must(t, st.WriteFile(ctx, metaName, []byte(stale))) // the kill came before the sidecar caught up
	h2, err := store.Resume(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Metadata().MessageCount; got != 5 {
		t.Errorf("resumed handle counts %d messages, the file holds 5", got)
	}
	must(t, h2.AppendMessage(ctx, []byte(`{"role":"user","content":"q6","timestamp":1}`)))
	must(t, h2.Close(ctx))
	if m, err := store.Metadata(ctx, h.ID()); err != nil || m.MessageCount != 6 {
		t.Errorf("metadata after resume: %d, %v", m.MessageCount, err)
	}
}
