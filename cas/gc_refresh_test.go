package cas_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

// fakeClock is one clock for the store and its backend's modification times.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A Put that finds its blob already present but old makes it young again,
// loose or packed, so a GC right after cannot sweep a ref Put just returned.
func TestPutRefreshesOldBlob(t *testing.T) {
	ctx := context.Background()
	for _, packed := range []bool{false, true} {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		st := mem.New(mem.WithClock(clk.now))
		s, err := cas.Open(ctx, st, cas.WithClock(clk.now), cas.WithGrace(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		data := []byte("an image both sessions hold")
		var ref cas.Ref
		if packed {
			b := s.NewBatch()
			if ref, err = b.Put(ctx, data); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			// Another process's view: the pack has a listed, old time.
			if s, err = cas.Open(ctx, st, cas.WithClock(clk.now), cas.WithGrace(time.Hour)); err != nil {
				t.Fatal(err)
			}
		} else if ref, err = s.Put(ctx, data); err != nil {
			t.Fatal(err)
		}
		clk.add(2 * time.Hour) // the first session is gone; nothing holds the blob
		again, err := s.Put(ctx, data)
		if err != nil || again != ref {
			t.Fatalf("Put again = %v, %v", again, err)
		}
		// GC with no roots: the second session has not recorded the ref yet.
		if _, err := s.GC(ctx, func(func(cas.Ref, error) bool) {}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, ref)
		if err != nil || string(got) != string(data) {
			t.Fatalf("packed=%v: the blob Put just returned was swept: %v", packed, err)
		}
	}
}
