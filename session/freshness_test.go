package session_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/spy"
	"github.com/trovekit/trove/session"
)

// skewBackends are the backends whose files take their times from the
// real clock: a writer's clock set apart from it is skewed against the
// store's, as two machines on one bucket are.
func skewBackends() map[string]func(t *testing.T) backend.Storage {
	return map[string]func(t *testing.T) backend.Storage{
		"mem": func(t *testing.T) backend.Storage { return newMem(t) },
		"fs": func(t *testing.T) backend.Storage {
			st, err := fs.NewOS(t.TempDir())
			must(t, err)
			return st
		},
		"memblob": func(t *testing.T) backend.Storage { return cloudtest.NewMemblob(t) },
	}
}

// skewedWriter writes a session of one turn on st with its clock off the
// store's by skew, and closes it: its sidecar's time is the writer's.
func skewedWriter(t *testing.T, st backend.Storage, skew time.Duration) *session.Handle {
	t.Helper()
	ctx := t.Context()
	w, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithHost("writer"),
		session.WithClock(func() time.Time { return time.Now().Add(skew) }))
	must(t, err)
	h, err := w.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q1")))
	must(t, h.AppendMessage(ctx, assistantMsg("a1")))
	must(t, h.Close(ctx))
	return h
}

// listOne lists cwd, which must hold one session.
func listOne(t *testing.T, s *session.Store, cwd string) session.Metadata {
	t.Helper()
	got := listAll(t, s, cwd)
	if len(got) != 1 {
		t.Fatalf("listed %d sessions, want 1", len(got))
	}
	return got[0]
}

// A sidecar written by a writer whose clock runs ahead of the store's,
// its file grown after it by another writer (an import killed between
// appending lines and counting them): the file's time is not after the
// sidecar's, yet listings and Metadata count what the file holds.
func TestSidecarAheadOfItsFile(t *testing.T) {
	for name, open := range skewBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := open(t)
			h := skewedWriter(t, st, time.Hour)
			var lines []byte
			parent := h.Session().Leaf().ID()
			for i, m := range [][]byte{userMsg("q2"), assistantMsg("a2")} {
				eid := fmt.Sprintf("b%07d", i)
				lines = fmt.Appendf(lines, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-11-28T10:00:0%d.000Z","message":%s}`+"\n", eid, parent, i, m)
				parent = eid
			}
			w, err := st.OpenWriter(ctx, h.Path(), backend.WriterOptions{})
			must(t, err)
			_, err = w.Write(lines)
			must(t, err)
			must(t, w.Sync())
			must(t, w.Close())

			r := storeOn(t, st)
			if m := listOne(t, r, "/w"); m.MessageCount != 4 || m.TurnCount != 2 {
				t.Errorf("listed with %d messages, %d turns; the file holds 4, 2", m.MessageCount, m.TurnCount)
			}
			m, err := r.Metadata(ctx, h.ID())
			must(t, err)
			if m.MessageCount != 4 || m.TurnCount != 2 {
				t.Errorf("Metadata says %d messages, %d turns; the file holds 4, 2", m.MessageCount, m.TurnCount)
			}
		})
	}
}

// A sidecar written by a writer whose clock runs behind the store's is
// current while its file has the size it recorded: a listing takes it
// without reading the session file.
func TestSidecarBehindItsFileNotRecounted(t *testing.T) {
	for name, open := range skewBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := open(t)
			h := skewedWriter(t, st, -time.Hour)
			// No index: the listing reads each session's sidecar.
			for fi, err := range st.List(ctx, session.IndexDir) {
				if errors.Is(err, iofs.ErrNotExist) {
					break // none written: no bucket here
				}
				must(t, err)
				must(t, st.Unlink(ctx, fi.Name))
			}
			sp := spy.New(st)
			if m := listOne(t, storeOn(t, sp), "/w"); m.MessageCount != 2 || m.TurnCount != 1 {
				t.Errorf("listed with %d messages, %d turns; want 2, 1", m.MessageCount, m.TurnCount)
			}
			reads := 0
			for _, c := range sp.Calls() {
				if c.Name == h.Path() && (c.Op == "ReadFile" || c.Op == "Open" || c.Op == "OpenRange" || c.Op == "OpenInfo") {
					reads++
				}
			}
			if reads != 0 {
				t.Errorf("the listing read the unchanged session file whole %d times; its sidecar is current", reads)
			}
		})
	}
}
