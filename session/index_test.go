package session_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
)

// listed returns id -> message count of every session the store lists.
func listedCounts(t *testing.T, s *session.Store, q session.Query) map[string]int {
	t.Helper()
	out := map[string]int{}
	for m, err := range s.Query(t.Context(), q) {
		must(t, err)
		out[m.ID] = m.MessageCount
	}
	return out
}

// TestIndexFollowsTheFiles checks the listing index against what the
// files hold: a file another program added, a writer that never closed,
// a title changed while nothing was appended, and the index deleted or
// damaged. It runs on the OS (directory times trusted) and in memory.
func TestIndexFollowsTheFiles(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			var st backend.Storage
			if name == "os" {
				fst, err := fs.NewOS(t.TempDir())
				must(t, err)
				t.Cleanup(func() { fst.Close() })
				st = fst
			} else {
				st = newMem(t)
			}
			// A clock an hour ahead makes every directory old enough for
			// its time to be trusted at once.
			later := func() time.Time { return time.Now().Add(time.Hour) }
			s, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithClock(later))
			must(t, err)
			h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w", Title: "first"})
			must(t, err)
			for i := range 3 {
				must(t, h.AppendMessage(ctx, userMsg(fmt.Sprint("q", i))))
				must(t, h.AppendMessage(ctx, assistantMsg(fmt.Sprint("a", i))))
			}
			must(t, h.Close(ctx))
			a := h.ID()
			if got := listedCounts(t, s, session.Query{}); got[a] != 6 || len(got) != 1 {
				t.Fatalf("listed %v", got)
			}

			// Another program adds a session file: no sidecar, no marker.
			foreign := session.SessionPath("/w", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "f0f0f0f0-aaaa-7bbb-8ccc-000000000001")
			body := `{"type":"session","version":3,"id":"f0f0f0f0-aaaa-7bbb-8ccc-000000000001","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w"}` + "\n"
			for i := range 4 {
				body += fmt.Sprintf(`{"type":"message","id":"e%d","parentId":%s,"timestamp":"2026-01-02T03:04:0%d.000Z","message":{"role":"user","content":"x"}}`+"\n",
					i, map[bool]string{true: "null", false: fmt.Sprintf(`"e%d"`, i-1)}[i == 0], i)
			}
			must(t, st.WriteFile(ctx, foreign, []byte(body)))
			if got := listedCounts(t, s, session.Query{Cwd: "/w"}); got[a] != 6 || got["f0f0f0f0-aaaa-7bbb-8ccc-000000000001"] != 4 {
				t.Fatalf("after a foreign file: %v", got)
			}

			// A writer that flushes and is never closed (killed): its
			// marker makes the listing count from the file.
			h2, err := s.Load(ctx, a)
			must(t, err)
			_ = listedCounts(t, s, session.Query{}) // the index now knows the marker
			must(t, h2.AppendMessage(ctx, userMsg("q3")))
			must(t, h2.Flush(ctx))
			if got := listedCounts(t, s, session.Query{}); got[a] != 7 {
				t.Fatalf("while a writer is at work: %v", got)
			}
			h2.UpdateMetadata(func(m *session.Metadata) { m.Title = "renamed" })
			must(t, h2.Close(ctx))
			for m, err := range s.Query(ctx, session.Query{Match: "RENAMED"}) {
				must(t, err)
				if m.ID != a || m.MessageCount != 7 {
					t.Fatalf("after close: %+v", m)
				}
			}

			// A title changed with nothing appended.
			must(t, s.UpdateMetadata(ctx, a, func(m *session.Metadata) { m.Title = "third" }))
			n := 0
			for m, err := range s.Query(ctx, session.Query{Match: "third"}) {
				must(t, err)
				n++
				if m.ID != a {
					t.Fatalf("matched %s", m.ID)
				}
			}
			if n != 1 {
				t.Fatalf("title change not listed (%d matches)", n)
			}

			// Deleting or damaging the index loses nothing.
			want := listedCounts(t, s, session.Query{})
			idx := session.IndexDir + "/" + session.EncodeCwd("/w")
			must(t, st.WriteFile(ctx, idx, []byte("{\"trove_index\":1}\n[\"x\",1,2]\n")))
			if got := listedCounts(t, s, session.Query{}); !maps.Equal(got, want) {
				t.Fatalf("after damaging the index: %v, want %v", got, want)
			}
			must(t, st.Unlink(ctx, idx))
			if got := listedCounts(t, s, session.Query{}); !maps.Equal(got, want) {
				t.Fatalf("after deleting the index: %v, want %v", got, want)
			}
			// Limit and Since.
			if got := listedCounts(t, s, session.Query{Limit: 1}); len(got) != 1 || got[a] != 7 {
				t.Fatalf("limit 1: %v", got)
			}
			if got := listedCounts(t, s, session.Query{Since: later().Add(-30 * time.Minute)}); len(got) != 1 {
				t.Fatalf("since: %v", got)
			}
		})
	}
}

// TestIndexResolvesAbbreviations creates sessions within one millisecond
// range and resolves each by the abbreviation Abbrev gives.
func TestIndexResolvesAbbreviations(t *testing.T) {
	ctx := t.Context()
	s, err := session.OpenStore(ctx, newMem(t), session.WithInlineBlobs())
	must(t, err)
	var ids []string
	for range 200 {
		h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
		must(t, err)
		must(t, h.AppendMessage(ctx, userMsg("q")))
		must(t, h.AppendMessage(ctx, assistantMsg("a")))
		must(t, h.Close(ctx))
		ids = append(ids, h.ID())
	}
	short := session.Abbrev(ids)
	for i, id := range ids {
		m, err := s.Metadata(ctx, short[i])
		if err != nil || m.ID != id {
			t.Fatalf("%s (for %s): %v %s", short[i], id, err, m.ID)
		}
	}
}
