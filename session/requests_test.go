package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/session"
)

// On a bucket every request is a round trip: the session store's steps
// stay within a fixed number of requests, whatever the store holds.
func TestBucketRequestCounts(t *testing.T) {
	ctx := context.Background()
	srv, counter := cloudtest.StartCountingS3(t)
	st := srv.New(t)
	store, err := session.OpenStore(ctx, st, session.WithInlineBlobs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		h, err := store.Create(ctx, session.CreateOptions{Cwd: "/w"})
		must(t, err)
		must(t, h.AppendMessage(ctx, userMsg(fmt.Sprint("q", i))))
		must(t, h.AppendMessage(ctx, assistantMsg("a")))
		must(t, h.Close(ctx))
	}
	var h *session.Handle
	counter.AtMost(t, "Create", 3, func() {
		h, err = store.Create(ctx, session.CreateOptions{Cwd: "/w"})
		must(t, err)
	})
	// Creating the file: the conditional create of its name (new: its
	// place needs no look) and its first segment.
	counter.AtMost(t, "the first Flush, which creates the file", 2, func() {
		must(t, h.AppendMessage(ctx, userMsg("q")))
		must(t, h.AppendMessage(ctx, assistantMsg("a")))
		must(t, h.Flush(ctx))
	})
	most, total := 0, 0
	for range 10 {
		c := counter.During(func() {
			must(t, h.AppendMessage(ctx, userMsg("q")))
			must(t, h.AppendMessage(ctx, assistantMsg("a")))
			must(t, h.Flush(ctx))
		})
		most, total = max(most, c.Total()), total+c.Total()
	}
	// A segment and the look that no other writer took the file over;
	// folding is left to a later open (or Compact).
	t.Logf("10 later flushes of 2 messages: %d requests, at most %d in one", total, most)
	if most > 2 {
		t.Errorf("a later flush made %d requests (of %d in 10)", most, total)
	}
	// meta.json, the session's record put into the shared listing index
	// (read and written back), then the open marker and the lease
	// released: another machine lists the cwd without reading it.
	counter.AtMost(t, "Close", 5, func() { must(t, h.Close(ctx)) })
	c := counter.During(func() {
		n := 0
		for _, err := range store.List(ctx, "/w") {
			must(t, err)
			n++
		}
		if n != 21 {
			t.Errorf("listed %d", n)
		}
	})
	t.Logf("list of 21 sessions (the index kept by their writers): %v", c)
	if c.Total() > 3 {
		t.Errorf("a listing of 21 sessions their writers indexed: %v requests, want at most 3", c)
	}
	counter.AtMost(t, "a listing of 21 sessions with the index current", 3, func() {
		for _, err := range store.List(ctx, "/w") {
			must(t, err)
		}
	})
}

// A new session on a store that never saw its cwd (a fresh machine): its
// file is created without a look at its place, since its name is new.
func TestBucketFirstSession(t *testing.T) {
	ctx := context.Background()
	srv, counter := cloudtest.StartCountingS3(t)
	store, err := session.OpenStore(ctx, srv.New(t), session.WithInlineBlobs())
	must(t, err)
	var h *session.Handle
	created := counter.AtMost(t, "Create", 3, func() {
		h, err = store.Create(ctx, session.CreateOptions{Cwd: "/w"})
		must(t, err)
	})
	// The conditional create of its name and its first segment.
	flushed := counter.AtMost(t, "the first Flush of a fresh store's first session", 2, func() {
		must(t, h.AppendMessage(ctx, userMsg("q")))
		must(t, h.AppendMessage(ctx, assistantMsg("a")))
		must(t, h.Flush(ctx))
	})
	if n := created.Total() + flushed.Total(); n > 5 {
		t.Errorf("Create and the first Flush: %d requests, want at most 5", n)
	}
	t.Logf("Create %v, first Flush %v", created, flushed)
	must(t, h.Close(ctx))
	if got := listAll(t, store, "/w"); len(got) != 1 || got[0].MessageCount != 2 {
		t.Errorf("listed %+v", got)
	}
}
