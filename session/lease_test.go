package session_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// machine is one store on a shared bucket with its own host name, wall
// clock and monotonic clock, both stepped by the test.
type machine struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Time
	s    *session.Store
}

func (m *machine) now() time.Time   { m.mu.Lock(); defer m.mu.Unlock(); return m.wall }
func (m *machine) clock() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.mono }
func (m *machine) step(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wall, m.mono = m.wall.Add(d), m.mono.Add(d)
}

const leaseTTL, leaseSkew = 10 * time.Second, 5 * time.Second

func newMachine(t *testing.T, st backend.Storage, host string, offset time.Duration) *machine {
	return newMachineAt(t, st, host, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), offset)
}

// newMachineAt is newMachine with its clocks starting at t0.
func newMachineAt(t *testing.T, st backend.Storage, host string, t0 time.Time, offset time.Duration) *machine {
	m := &machine{wall: t0.Add(offset), mono: t0}
	s, err := session.OpenStore(t.Context(), st, session.WithHost(host), session.WithClock(m.now),
		session.WithMonotonic(m.clock), session.WithLease(leaseTTL, leaseSkew), session.WithoutRenewal(),
		session.WithLogger(slog.New(slog.DiscardHandler)),
		session.WithSessionOptions(tree.WithLogger(slog.New(slog.DiscardHandler))))
	must(t, err)
	m.s = s
	return m
}

// A live holder's session is refused with who holds it; once its lease ran
// out (ttl + skew on the taker's clock) it is taken over, Resume saying
// from whom; the old holder acknowledges nothing after its lease ran out.
func TestLeaseTakeover(t *testing.T) {
	ctx := t.Context()
	st := cloudtest.NewMemblob(t)
	a := newMachine(t, st, "machine-a", 0)
	b := newMachine(t, st, "machine-b", 3*time.Second) // its clock runs 3 s ahead

	h, err := a.s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("a1")))
	must(t, h.AppendMessage(ctx, assistantMsg("a2")))
	must(t, h.Flush(ctx))

	_, err = b.s.Resume(ctx, h.ID())
	var held *session.HeldError
	if !errors.As(err, &held) || !errors.Is(err, session.ErrLocked) || !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("resume of a held session = %v, want a HeldError matching ErrLocked", err)
	}
	if held.Holder.Host != "machine-a" || !held.Holder.Since.Equal(a.now()) || !held.Holder.Expires.Equal(a.now().Add(leaseTTL)) {
		t.Fatalf("holder = %+v", held.Holder)
	}
	if hold, ok, err := b.s.Holder(ctx, h.ID()); err != nil || !ok || hold.Host != "machine-a" {
		t.Fatalf("Holder = %+v %v %v", hold, ok, err)
	}

	// a renews while it lives: b, though its clock is ahead, waits.
	a.step(leaseTTL * 2 / 3)
	b.step(leaseTTL * 2 / 3)
	must(t, session.RenewLease(h))
	a.step(leaseTTL * 2 / 3)
	b.step(leaseTTL * 2 / 3)
	must(t, h.AppendMessage(ctx, userMsg("a3")))
	must(t, h.Flush(ctx)) // valid: renewed 6.7 s ago, ttl 10 s
	if _, err := b.s.Resume(ctx, h.ID()); !errors.As(err, &held) {
		t.Fatalf("resume after a renewal = %v, want held", err)
	}

	// a stops renewing (cut off): its lease runs out on its own clock
	// before b may take it on b's.
	a.step(leaseTTL)
	must(t, h.AppendMessage(ctx, userMsg("a4 after the lease ran out")))
	if err := h.Flush(ctx); !errors.Is(err, session.ErrLeaseLost) || !errors.Is(err, session.ErrLocked) {
		t.Fatalf("a flush after the lease ran out = %v, want ErrLeaseLost", err)
	}
	if err := session.RenewLease(h); !errors.Is(err, session.ErrLeaseLost) {
		t.Fatalf("renewal of a lapsed lease = %v, want ErrLeaseLost", err)
	}
	if err := h.Flush(ctx); !errors.Is(err, session.ErrLeaseLost) {
		t.Fatalf("a lapsed lease came back after a renewal: %v", err)
	}
	b.step(leaseTTL/3 + leaseSkew - 4*time.Second) // 1 s short of ttl+skew since a's renewal, on b's clock
	if _, err := b.s.Resume(ctx, h.ID()); !errors.As(err, &held) {
		t.Fatalf("resume within ttl+skew = %v, want held", err)
	}
	b.step(2 * time.Second)
	h2, err := b.s.Resume(ctx, h.ID())
	must(t, err)
	prev, ok := h2.TookOver()
	if !ok || prev.Host != "machine-a" || !prev.Since.Equal(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("TookOver = %+v %v", prev, ok)
	}
	must(t, h2.AppendMessage(ctx, userMsg("b1")))
	must(t, h2.Flush(ctx))
	if err := h.Close(ctx); err == nil {
		t.Fatal("the old holder's Close succeeded after its lease was taken")
	}
	must(t, h2.Close(ctx))

	msgs, err := b.s.LoadMessages(ctx, h.ID())
	must(t, err)
	var got []string
	for _, e := range msgs {
		got = append(got, tree.MessageText(e.Field("message")))
	}
	// a4 was written before a saw its lease lapse, and never acknowledged:
	// it may be there; every acknowledged message is, in order.
	want := []string{"a1", "a2", "a3", "b1"}
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("messages %q lack acknowledged ones %q", got, want)
	}

	// Released at Close: the next opener takes it at once, from nobody.
	h3, err := a.s.Resume(ctx, h.ID())
	must(t, err)
	if _, ok := h3.TookOver(); ok {
		t.Fatal("a released lease was reported as taken over")
	}
	must(t, h3.Close(ctx))
}

// BreakLock ends a lease at once, and two takers of one expired lease
// never both win.
func TestLeaseBreakAndRace(t *testing.T) {
	ctx := t.Context()
	st := cloudtest.NewMemblob(t)
	a := newMachine(t, st, "a", 0)
	h, err := a.s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("q")))
	must(t, h.AppendMessage(ctx, assistantMsg("r")))
	must(t, h.Flush(ctx))
	id := h.ID()

	b := newMachine(t, st, "b", 0)
	must(t, b.s.BreakLock(ctx, id))
	if _, held, err := b.s.Holder(ctx, id); err != nil || held {
		t.Fatalf("after BreakLock: held %v, %v", held, err)
	}
	h2, err := b.s.Resume(ctx, id)
	must(t, err)
	must(t, h2.Close(ctx))
	h.Close(ctx) // its file was taken: it fails; nothing to check

	// Takers racing for one expired lease: exactly one wins.
	c := newMachine(t, st, "c", 0)
	hc, err := c.s.Resume(ctx, id)
	must(t, err)
	_ = hc // killed: never closed, never renewed
	var wg sync.WaitGroup
	wins := make(chan *session.Handle, 4)
	for i := range 4 {
		m := newMachine(t, st, string(rune('d'+i)), 0)
		m.step(leaseTTL + leaseSkew + time.Second)
		wg.Go(func() {
			if h, err := m.s.Resume(ctx, id); err == nil {
				wins <- h
			} else if !errors.Is(err, session.ErrLocked) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(wins)
	n := 0
	for h := range wins {
		n++
		must(t, h.Close(ctx))
	}
	if n != 1 {
		t.Fatalf("%d takers won one expired lease, want 1", n)
	}
}

// A machine that takes a dead writer's session leaves its sidecar
// counting what the file holds: by closing it without a message, or by
// UpdateMetadata. The dead writer's sidecar (written at Create) lagged the
// file, and its open marker had listings count from the file; the taker
// takes the marker. A listing then trusted the old sidecar whenever the
// dead writer's clock ran ahead of the bucket's: the file's time was not
// after the sidecar's, so it was taken as current (make fleet FAULTS=1:
// listed with 0 messages, its file holding 1).
func TestTakeoverRecountsTheSidecar(t *testing.T) {
	for _, c := range []struct {
		name string
		take func(ctx context.Context, m *machine, id string) error
	}{
		{"resume-close", func(ctx context.Context, m *machine, id string) error {
			h, err := m.s.Resume(ctx, id)
			if err != nil {
				return err
			}
			if _, ok := h.TookOver(); !ok {
				t.Error("the dead writer's lease was not taken over")
			}
			return h.Close(ctx)
		}},
		{"update-metadata", func(ctx context.Context, m *machine, id string) error {
			return m.s.UpdateMetadata(ctx, id, func(md *session.Metadata) { md.Title = "taken" })
		}},
	} {
		t.Run(c.name, func(t *testing.T) { takeoverRecounts(t, c.take) })
	}
}

func takeoverRecounts(t *testing.T, take func(ctx context.Context, m *machine, id string) error) {
	ctx := t.Context()
	st := cloudtest.NewMemblob(t)
	now := time.Now().UTC()
	a := newMachineAt(t, st, "machine-a", now, leaseSkew-time.Second) // ahead of the bucket, within the skew allowed
	b := newMachineAt(t, st, "machine-b", now, 0)

	h, err := a.s.Create(ctx, session.CreateOptions{Cwd: "/w"})
	must(t, err)
	must(t, h.AppendMessage(ctx, userMsg("a1")))
	must(t, h.Flush(ctx)) // then a dies, its handle never closed

	b.step(leaseTTL + 2*leaseSkew)
	must(t, take(ctx, b, h.ID()))

	c := newMachineAt(t, st, "machine-c", now, 0)
	for _, m := range []*machine{b, c} {
		var n int
		for meta, err := range m.s.List(ctx, "/w") {
			must(t, err)
			if meta.ID == h.ID() {
				n++
				if meta.MessageCount != 1 || meta.TurnCount != 1 || meta.FirstMessage != "a1" {
					t.Errorf("listed with %d messages, %d turns, first %q; its file holds 1, \"a1\"", meta.MessageCount, meta.TurnCount, meta.FirstMessage)
				}
			}
		}
		if n != 1 {
			t.Fatalf("the session is listed %d times", n)
		}
	}
}
