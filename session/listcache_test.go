package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/session"
)

// cachedLister renders listings through a store's output cache and
// counts the renders.
type cachedLister struct {
	t       *testing.T
	s       *session.Store
	refresh bool // render with Query.Refresh
	renders int
}

// list returns what CachedListing wrote for key and whether it rendered.
func (c *cachedLister) list(key string) (string, bool) {
	c.t.Helper()
	before := c.renders
	var out bytes.Buffer
	err := c.s.CachedListing(c.t.Context(), key, &out, func(ctx context.Context, w io.Writer) error {
		c.renders++
		for m, err := range c.s.Query(ctx, session.Query{Refresh: c.refresh}) {
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s %d %q\n", m.ID, m.MessageCount, m.Title)
		}
		return nil
	})
	must(c.t, err)
	return out.String(), c.renders > before
}

// settle lists until the output is served from the cache, and returns it.
func (c *cachedLister) settle(key string) string {
	c.t.Helper()
	for range 4 {
		if out, rendered := c.list(key); !rendered {
			return out
		}
	}
	c.t.Fatalf("four listings of an unchanged store all rendered")
	return ""
}

// TestCachedListing checks that a cached listing is replayed only while
// nothing it read changed: a new session, an append to an open one, a
// removed session, a removed index, another key, a damaged cache and a
// failed render each make it render again, with the new output.
func TestCachedListing(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	st, err := fs.NewOS(root)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	later := func() time.Time { return time.Now().Add(time.Hour) }
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs(), session.WithClock(later))
	must(t, err)
	c := &cachedLister{t: t, s: s}
	newSession := func(cwd, title string, n int) *session.Handle {
		h, err := s.Create(ctx, session.CreateOptions{Cwd: cwd, Title: title})
		must(t, err)
		for i := range n {
			must(t, h.AppendMessage(ctx, userMsg(fmt.Sprint("q", i))))
		}
		must(t, h.Flush(ctx))
		return h
	}
	a := newSession("/w", "a", 2)
	must(t, a.Close(ctx))
	b := newSession("/v", "b", 1)
	must(t, b.Close(ctx))

	const key = "k1"
	first, _ := c.list(key)
	if got := c.settle(key); got != first {
		t.Fatalf("replayed %q, rendered %q", got, first)
	}
	if out, rendered := c.list(key); rendered || out != first {
		t.Fatalf("unchanged store: rendered %v, %q", rendered, out)
	}

	// Another key is another listing.
	if _, rendered := c.list("k2"); !rendered {
		t.Fatal("a new key replayed another key's listing")
	}

	// A new session in a listed directory.
	d := newSession("/w", "d", 3)
	out, rendered := c.list(key)
	if !rendered || !strings.Contains(out, d.ID()) {
		t.Fatalf("after a new session: rendered %v, %q", rendered, out)
	}
	// A state listed once is remembered, not its output: a store that
	// changes between listings costs no copy of each. (The listing above
	// wrote the index of the new session's directory: this is the first
	// of the new state.)
	if _, rendered := c.list(key); !rendered {
		t.Fatal("a new state was replayed")
	}
	kept, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(session.IndexDir), ".ls-*"))
	must(t, err)
	for _, f := range kept {
		data, err := os.ReadFile(f)
		must(t, err)
		if bytes.Count(data, []byte("\n")) != 1 {
			t.Fatalf("a state listed once kept its output: %q", data)
		}
	}
	// An open session appended to: its file moved, the directory did not.
	c.settle(key)
	must(t, d.AppendMessage(ctx, userMsg("more")))
	must(t, d.Flush(ctx))
	out, rendered = c.list(key)
	if !rendered || !strings.Contains(out, d.ID()+" 4 ") {
		t.Fatalf("after an append to an open session: rendered %v, %q", rendered, out)
	}
	must(t, d.Close(ctx))

	// A removed session.
	c.settle(key)
	must(t, s.Delete(ctx, b.ID()))
	if out, rendered := c.list(key); !rendered || strings.Contains(out, b.ID()) {
		t.Fatalf("after a delete: rendered %v, %q", rendered, out)
	}

	// A removed index: the listing rebuilds it, and renders.
	want := c.settle(key)
	idx, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(session.IndexDir), "--*"))
	must(t, err)
	if len(idx) == 0 {
		t.Fatal("no listing index written")
	}
	must(t, os.Remove(idx[0]))
	if out, rendered := c.list(key); !rendered || out != want {
		t.Fatalf("after the index was removed: rendered %v, %q, want %q", rendered, out, want)
	}

	// A damaged cache is rendered over, not replayed.
	c.settle(key)
	caches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(session.IndexDir), ".ls-*"))
	must(t, err)
	if len(caches) != 2 {
		t.Fatalf("cached listings %v, want one per key", caches)
	}
	for _, f := range caches {
		must(t, os.WriteFile(f, []byte("{not json\n"+want), 0o600))
	}
	if out, rendered := c.list(key); !rendered || out != want {
		t.Fatalf("over a damaged cache: rendered %v, %q", rendered, out)
	}

	// A failed render is the listing's error, and is not kept.
	boom := errors.New("boom")
	err = s.CachedListing(ctx, "k3", io.Discard, func(context.Context, io.Writer) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("render error: %v", err)
	}
	if _, rendered := c.list("k3"); !rendered {
		t.Fatal("a failed render was replayed")
	}
}

// TestCachedListingNeedsSettledTimes: a listing whose directories changed
// within the file system's granularity is not kept (a change in the same
// tick could leave every time as it was), nor is one without a key, on a
// store without trusted directory times, or one that refreshed (it read
// files the state does not cover).
func TestCachedListingNeedsSettledTimes(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		st      func() backend.Storage
		now     func() time.Time
		key     string
		refresh bool
	}{
		{"fresh times", func() backend.Storage { return newOS(t) }, time.Now, "k", false},
		{"no key", func() backend.Storage { return newOS(t) }, func() time.Time { return time.Now().Add(time.Hour) }, "", false},
		{"memory", func() backend.Storage { return newMem(t) }, func() time.Time { return time.Now().Add(time.Hour) }, "k", false},
		{"refresh", func() backend.Storage { return newOS(t) }, func() time.Time { return time.Now().Add(time.Hour) }, "k", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := session.OpenStore(ctx, tc.st(), session.WithInlineBlobs(), session.WithClock(tc.now))
			must(t, err)
			h, err := s.Create(ctx, session.CreateOptions{Cwd: "/w"})
			must(t, err)
			must(t, h.AppendMessage(ctx, userMsg("hi")))
			must(t, h.Close(ctx))
			c := &cachedLister{t: t, s: s, refresh: tc.refresh}
			for i := range 4 {
				if _, rendered := c.list(tc.key); !rendered {
					t.Fatalf("listing %d replayed", i)
				}
			}
		})
	}
}

func newOS(t *testing.T) backend.Storage {
	st, err := fs.NewOS(t.TempDir())
	must(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}
