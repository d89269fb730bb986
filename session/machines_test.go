package session_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/session"
)

// twoMachines opens two stores on one S3 bucket, each with its own
// connection and caches, as two machines would, with the server's
// request counter.
func twoMachines(t *testing.T) (a, b *session.Store, stA backend.Storage, c *cloudtest.Counter) {
	t.Helper()
	srv, c := cloudtest.StartCountingS3(t)
	name := srv.CreateBucket(t)
	stA = srv.Storage(t, name)
	a, err := session.OpenStore(t.Context(), stA, session.WithInlineBlobs(), session.WithHost("a"))
	must(t, err)
	b, err = session.OpenStore(t.Context(), srv.Storage(t, name), session.WithInlineBlobs(), session.WithHost("b"))
	must(t, err)
	return a, b, stA, c
}

// writeSessions has st write n sessions of two messages each, spread
// over cwds, each closed.
func writeSessions(t *testing.T, st *session.Store, n int, cwds ...string) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		h, err := st.Create(ctx, session.CreateOptions{Cwd: cwds[i%len(cwds)], Model: "m"})
		must(t, err)
		must(t, h.AppendMessage(ctx, userMsg(fmt.Sprint("q", i))))
		must(t, h.AppendMessage(ctx, assistantMsg("a")))
		must(t, h.Close(ctx))
	}
}

func listAll(t *testing.T, st *session.Store, cwd string) []session.Metadata {
	t.Helper()
	var out []session.Metadata
	for m, err := range st.List(t.Context(), cwd) {
		must(t, err)
		out = append(out, m)
	}
	return out
}

// rebuilt lists cwd from the files alone: every index removed first.
func rebuilt(t *testing.T, st backend.Storage, s *session.Store, cwd string) []session.Metadata {
	t.Helper()
	ctx := t.Context()
	for fi, err := range st.List(ctx, session.IndexDir) {
		must(t, err)
		must(t, st.Unlink(ctx, fi.Name))
	}
	return listAll(t, s, cwd)
}

// Writers keep the shared listing index current: another machine lists a
// cwd after one wrote 20 sessions there in 3 requests (the index, the
// directory, its segments), every cwd in one more, and lists what the
// files say.
func TestListingAfterAnotherMachine(t *testing.T) {
	a, b, st, counter := twoMachines(t)
	writeSessions(t, a, 20, "/w")
	var got []session.Metadata
	counter.AtMost(t, "listing a cwd of 20 sessions another machine wrote", 3, func() { got = listAll(t, b, "/w") })
	if len(got) != 20 {
		t.Fatalf("listed %d sessions, want 20", len(got))
	}
	writeSessions(t, a, 20, "/x0", "/x1", "/x2", "/x3")
	counter.AtMost(t, "listing 5 cwds another machine wrote", 1+3*5, func() { got = listAll(t, b, "") })
	if len(got) != 40 {
		t.Fatalf("listed %d sessions, want 40", len(got))
	}
	if want := rebuilt(t, st, b, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("listing from the index kept by writers:\n%v\nfrom the files:\n%v", got, want)
	}
}

// What the writers' records say is checked against the files: a session
// a writer changed without a record (killed, or its record lost) is read
// again, never listed as it was, and never hidden.
func TestListingIndexStale(t *testing.T) {
	a, b, st, _ := twoMachines(t)
	ctx := t.Context()
	writeSessions(t, a, 3, "/w")
	first := listAll(t, b, "/w")

	// Resumed on b and grown, its writer never closed (killed): the
	// record's size no longer matches the file.
	h, err := b.Resume(ctx, first[0].ID)
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("more")))
	must(t, h.AppendMessage(ctx, assistantMsg("yes")))
	must(t, h.Flush(ctx))
	// A session created and flushed, never closed: no record at all.
	k, err := a.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, k.AppendMessage(ctx, userMsg("killed")))
	must(t, k.AppendMessage(ctx, assistantMsg("a")))
	must(t, k.Flush(ctx))

	got := listAll(t, a, "/w")
	if len(got) != 4 {
		t.Fatalf("listed %d sessions, want 4", len(got))
	}
	for _, m := range got {
		switch m.ID {
		case first[0].ID:
			if m.MessageCount != 4 {
				t.Errorf("the grown session lists %d messages, want 4", m.MessageCount)
			}
		case k.ID():
			if m.MessageCount != 2 || m.FirstMessage != "killed" {
				t.Errorf("the unclosed session lists as %+v", m)
			}
		}
	}
	if want := rebuilt(t, st, a, "/w"); !reflect.DeepEqual(got, want) {
		t.Errorf("listing:\n%v\nfrom the files:\n%v", got, want)
	}
	must(t, h.Close(ctx))
	must(t, k.Close(ctx))

	// A title changed at Close, the file unmoved: the record says it.
	h, err = a.Resume(ctx, first[1].ID)
	must(t, err)
	h.UpdateMetadata(func(m *session.Metadata) { m.Title = "renamed" })
	must(t, h.Close(ctx))
	for _, m := range listAll(t, b, "/w") {
		if m.ID == first[1].ID && m.Title != "renamed" {
			t.Errorf("the renamed session lists as %q", m.Title)
		}
	}
}

// A record that could not be written keeps the open marker: listings
// read the session's files until a writer closes it again.
func TestListingIndexNotWritten(t *testing.T) {
	srv := cloudtest.StartS3(t)
	name := srv.CreateBucket(t)
	ctx := t.Context()
	idx := session.IndexDir + "/" + session.EncodeCwd("/w")
	var down atomic.Bool
	st := faulty.New(srv.Storage(t, name), faulty.WithHook(func(op, name string) error {
		if down.Load() && op == "PutFile" && name == idx {
			return errors.New("connection lost")
		}
		return nil
	}))
	a, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithHost("a"))
	must(t, err)
	b, err := session.OpenStore(ctx, srv.Storage(t, name), session.WithInlineBlobs(), session.WithHost("b"))
	must(t, err)
	writeSessions(t, a, 1, "/w")
	id := listAll(t, b, "/w")[0].ID
	h, err := a.Resume(ctx, id)
	must(t, err)
	h.UpdateMetadata(func(m *session.Metadata) { m.Title = "renamed" })
	down.Store(true)
	must(t, h.Close(ctx))
	down.Store(false)
	for range 2 {
		if got := listAll(t, b, "/w"); len(got) != 1 || got[0].Title != "renamed" {
			t.Errorf("listed %+v, want the session renamed", got)
		}
	}
}
