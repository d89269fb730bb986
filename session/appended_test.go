package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session"
)

// TestMetadataAppended appends entries to a session file as an importer
// does, behind the store's back: the sidecar MetadataAppended writes from
// the appended lines alone equals the one rebuilt from the whole file.
func TestMetadataAppended(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	s := storeOn(t, st)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("first question")))
	must(t, h.AppendMessage(ctx, assistantMsg("first answer")))
	must(t, h.Close(ctx))
	name, id := h.Path(), h.ID()
	meta := session.SidecarDir(name) + "/" + session.MetaFile
	// The sidecar as an import writes it: built from the file.
	must(t, st.Unlink(ctx, meta))
	must(t, s.UpdateMetadata(ctx, id, func(*session.Metadata) {}))
	msgs, err := s.LoadMessages(ctx, id)
	must(t, err)
	parent := msgs[len(msgs)-1].ID()
	var lines []byte
	for i, m := range [][]byte{userMsg("second"), assistantMsg("second answer")} {
		eid := fmt.Sprintf("a%07d", i)
		lines = fmt.Appendf(lines, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-11-28T10:00:0%d.000Z","message":%s}`+"\n", eid, parent, i, m)
		parent = eid
	}
	w, err := st.OpenWriter(ctx, name, backend.WriterOptions{})
	must(t, err)
	_, err = w.Write(lines)
	must(t, err)
	must(t, w.Sync())
	must(t, w.Close())
	must(t, s.MetadataAppended(ctx, name, lines, func(m *session.Metadata) { m.Title = "grown" }))
	got, err := st.ReadFile(ctx, meta)
	must(t, err)

	must(t, st.Unlink(ctx, meta))
	must(t, s.UpdateMetadata(ctx, id, func(m *session.Metadata) { m.Title = "grown" }))
	want, err := st.ReadFile(ctx, meta)
	must(t, err)
	var gm, wm session.Metadata
	must(t, json.Unmarshal(got, &gm))
	must(t, json.Unmarshal(want, &wm))
	gm.UpdatedAt = wm.UpdatedAt // the rebuild takes the file's time
	if gm != wm || gm.MessageCount != 4 || gm.TurnCount != 2 {
		t.Fatalf("counted from the appended lines:\n%+v\nfrom the file:\n%+v", gm, wm)
	}
}
