package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
)

// Leases: the writer lock of a session on a store without locks (a
// bucket). Each holder has its own generation, an object named
// writer.lease.<gen> created write-once, so exactly one opener wins each
// generation, and a holder's late write to an older generation changes
// nothing. The holder renews its lease every TTL/3; it acknowledges a write
// only while its last renewal, sent at t and answered before its previous
// validity ran out, is less than TTL old (t + TTL on its own monotonic
// clock). A lease whose last renewal stamp is older than TTL + the allowed
// clock skew on the taker's clock has expired: every renewal its holder
// could still count was answered before that, so the taker reads it, and
// the holder stopped acknowledging before the taker takes the next
// generation. Close writes the lease back released; the highest generation
// always stays, so generations never repeat.
const (
	leasePrefix = leaseFile + "."
	genDigits   = 10

	// DefaultLeaseTTL and DefaultLeaseSkew are a lease's time to live and
	// the clock difference between machines that leases tolerate.
	DefaultLeaseTTL  = 30 * time.Second
	DefaultLeaseSkew = 30 * time.Second
)

// ErrLeaseLost is a write a holder did not acknowledge because its lease
// ran out before the write returned (it could not renew it, a partition
// say): another machine may take the session over. It matches ErrLocked.
var ErrLeaseLost = fmt.Errorf("session writer lease ran out: %w", ErrLocked)

// WithLease sets how long a writer lease lives without renewal (ttl) and
// the clock difference between machines that lease expiry allows for
// (skew): another machine takes over a dead writer's session once ttl+skew
// passed on its clock since the lease's last renewal. Defaults:
// DefaultLeaseTTL, DefaultLeaseSkew. Stores with locks ignore it.
func WithLease(ttl, skew time.Duration) Option {
	return func(c *config) {
		if ttl > 0 {
			c.leaseTTL = ttl
		}
		if skew >= 0 {
			c.leaseSkew = skew
		}
	}
}

// WithHost names this machine in the leases and open markers it writes
// (default: os.Hostname).
func WithHost(host string) Option { return func(c *config) { c.host = host } }

func (s *Store) hostName() string {
	if s.cfg.host != "" {
		return s.cfg.host
	}
	h, _ := os.Hostname()
	return h
}

// leaseBody is what a lease object holds.
type leaseBody struct {
	Host     string    `json:"host,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Renewed  time.Time `json:"renewed,omitzero"`
	TTLms    int64     `json:"ttl_ms,omitempty"`
	Released bool      `json:"released,omitempty"`
}

func (b leaseBody) holder() LockHolder {
	h := LockHolder{Host: b.Host, PID: b.PID, Since: b.Since, Lease: true, Renewed: b.Renewed}
	if b.TTLms > 0 {
		h.Expires = b.Renewed.Add(time.Duration(b.TTLms) * time.Millisecond)
	}
	return h
}

func leaseName(dir string, gen uint64) string {
	return backend.Join(dir, fmt.Sprintf("%s%0*d", leasePrefix, genDigits, gen))
}

// lease is one held generation.
type lease struct {
	s    *Store
	name string
	body leaseBody
	ttl  time.Duration

	mu    sync.Mutex
	valid time.Time // acknowledge only before this (monotonic)
	lost  bool

	stop chan struct{}
	done chan struct{}
}

// check is nil while the lease is valid; once it ran out, never again.
func (l *lease) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lost && l.s.cfg.mono().Before(l.valid) {
		return nil
	}
	l.lost = true
	return backend.PathErr("lease", l.name, ErrLeaseLost)
}

// renewLoop writes the lease again every ttl/3 until stopped. A renewal
// counts only if answered while the lease was still valid.
func (l *lease) renewLoop() {
	defer close(l.done)
	if l.s.cfg.noRenew {
		<-l.stop
		return
	}
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if l.check() != nil {
			return // lapsed: it never comes back
		}
		if errors.Is(l.renew(), backend.ErrClosed) {
			return // the store closed under its handle
		}
	}
}

// renew writes the lease again, stamped now; it extends the lease only if
// answered while the lease was still valid.
func (l *lease) renew() error {
	if err := l.check(); err != nil {
		return err // lapsed: it never comes back
	}
	start := l.s.cfg.mono()
	l.mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), l.valid.Sub(start))
	l.mu.Unlock()
	defer cancel()
	body := l.body
	body.Renewed = l.s.cfg.now().UTC()
	err := l.s.putLease(ctx, l.name, body, false)
	l.mu.Lock()
	if err == nil && !l.lost && l.s.cfg.mono().Before(l.valid) {
		l.valid = start.Add(l.ttl)
	}
	l.mu.Unlock()
	if err != nil && !errors.Is(err, backend.ErrClosed) {
		l.s.cfg.log.Warn("trove/session: could not renew a writer lease", "lease", l.name, "err", err)
	}
	return err
}

// release stops renewing and writes the lease back released, unless it
// lapsed (then a taker may hold the next generation; nothing to undo).
func (l *lease) release(ctx context.Context) {
	close(l.stop)
	<-l.done
	if l.check() != nil {
		return
	}
	body := l.body
	body.Released, body.Renewed = true, l.s.cfg.now().UTC()
	if err := l.s.putLease(context.WithoutCancel(ctx), l.name, body, false); err != nil {
		l.s.cfg.log.Warn("trove/session: leaving a writer lease", "lease", l.name, "err", err)
	}
}

func (s *Store) putLease(ctx context.Context, name string, b leaseBody, fresh bool) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if !fresh {
		return backend.PutFile(ctx, s.st, name, data)
	}
	if s.st.Capabilities().WriteOnce {
		// A native create-if-absent, atomic: one request on a bucket.
		// (The CreateFile fallback looks, then writes: not a lock.)
		return backend.CreateFile(ctx, s.st, name, data)
	}
	w, err := s.st.OpenWriter(ctx, name, backend.WriterOptions{Exclusive: true})
	if err != nil {
		return err
	}
	if _, err = w.Write(data); err == nil {
		err = w.Close()
	} else {
		w.Close()
	}
	if err != nil {
		s.st.Unlink(context.WithoutCancel(ctx), name)
	}
	return err
}

// leaseState is what a session's sidecar says of its leases: the highest
// generation and its body, and whether a lease of the older, unnumbered
// kind (which never expires) is there.
type leaseState struct {
	gen    uint64
	body   leaseBody
	older  []string // lower generations, garbage
	legacy bool
}

func (s *Store) readLeases(ctx context.Context, dir string) (leaseState, error) {
	var st leaseState
	var gens []uint64
	for fi, err := range s.st.List(ctx, dir) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return st, err
		}
		base := backend.Base(fi.Name)
		if base == leaseFile {
			st.legacy = true
			continue
		}
		if g, ok := strings.CutPrefix(base, leasePrefix); ok {
			if n, err := strconv.ParseUint(g, 10, 64); err == nil {
				gens = append(gens, n)
			}
		}
	}
	if len(gens) == 0 {
		return st, nil
	}
	slices.Sort(gens)
	st.gen = gens[len(gens)-1]
	for _, g := range gens[:len(gens)-1] {
		st.older = append(st.older, leaseName(dir, g))
	}
	data, err := s.st.ReadFile(ctx, leaseName(dir, st.gen))
	if errors.Is(err, fs.ErrNotExist) {
		return s.readLeases(ctx, dir) // released and replaced meanwhile
	}
	if err != nil {
		return st, err
	}
	if json.Unmarshal(data, &st.body) != nil {
		// Torn or foreign: treat it as a lease that never renewed.
		st.body = leaseBody{}
	}
	return st, nil
}

// expired reports whether a lease's holder can no longer acknowledge
// anything, on this store's clock.
func (s *Store) expired(b leaseBody, now time.Time) bool {
	if b.Released {
		return true
	}
	ttl := time.Duration(b.TTLms) * time.Millisecond
	if ttl <= 0 {
		ttl = s.cfg.leaseTTL
	}
	last := b.Renewed
	if last.IsZero() {
		last = b.Since
	}
	return now.After(last.Add(ttl + s.cfg.leaseSkew))
}

// takeLease takes the next generation of the session's lease, over an
// expired or released one (prev names its holder then), or fails with
// ErrLocked naming the live holder.
func (s *Store) takeLease(ctx context.Context, name string, fresh bool) (*lease, *LockHolder, error) {
	dir := SidecarDir(name)
	var st leaseState
	var prev *LockHolder
	if !fresh {
		// The clock is read before the lease: every renewal its holder
		// could still count was answered before now, so it is seen.
		now := s.cfg.now()
		var err error
		if st, err = s.readLeases(ctx, dir); err != nil {
			return nil, nil, err
		}
		if st.legacy {
			return nil, nil, backend.PathErr("lock", name, fmt.Errorf("%w (lease %s; trove unlock removes a stale one)", ErrLocked, backend.Join(dir, leaseFile)))
		}
		if st.gen > 0 {
			if !s.expired(st.body, now) {
				h := st.body.holder()
				return nil, nil, backend.PathErr("lock", name, &HeldError{Holder: h})
			}
			if !st.body.Released {
				h := st.body.holder()
				prev = &h
			}
		}
	}
	now := s.cfg.now().UTC()
	l := &lease{s: s, name: leaseName(dir, st.gen+1), ttl: s.cfg.leaseTTL,
		body: leaseBody{Host: s.hostName(), PID: os.Getpid(), Since: now, Renewed: now, TTLms: s.cfg.leaseTTL.Milliseconds()},
		stop: make(chan struct{}), done: make(chan struct{})}
	start := s.cfg.mono()
	if err := s.putLease(ctx, l.name, l.body, true); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, nil, backend.PathErr("lock", name, fmt.Errorf("%w: another writer took lease %s first", ErrLocked, l.name))
		}
		return nil, nil, err
	}
	l.valid = start.Add(l.ttl)
	if prev != nil {
		s.cfg.log.Warn("trove/session: took over the writer lease of a holder that stopped renewing it",
			"session", name, "host", prev.Host, "pid", prev.PID, "since", prev.Since, "renewed", prev.Renewed)
	}
	// Older generations are garbage now that a higher one exists.
	if st.gen > 0 {
		st.older = append(st.older, leaseName(dir, st.gen))
	}
	for _, o := range st.older {
		if err := backend.RemoveFile(ctx, s.st, o); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.log.Warn("trove/session: could not remove an old writer lease", "lease", o, "err", err)
		}
	}
	go l.renewLoop()
	return l, prev, nil
}

// HeldError is a session whose writer lease a live holder keeps. It
// matches ErrLocked.
type HeldError struct{ Holder LockHolder }

func (e *HeldError) Error() string {
	h := e.Holder
	msg := fmt.Sprintf("%v: held by host %s pid %d since %s", ErrLocked, h.Host, h.PID, h.Since.Format(time.RFC3339))
	if !h.Expires.IsZero() {
		msg += fmt.Sprintf(", lease renewed %s, expires %s", h.Renewed.Format(time.RFC3339), h.Expires.Format(time.RFC3339))
	}
	return msg
}

func (e *HeldError) Unwrap() error { return ErrLocked }

// breakLease ends the session's lease whoever holds it: a released next
// generation, so a live holder's next renewal no longer counts for anyone
// and the next opener takes the one after.
func (s *Store) breakLease(ctx context.Context, name string) error {
	dir := SidecarDir(name)
	st, err := s.readLeases(ctx, dir)
	if err != nil {
		return err
	}
	if st.legacy {
		if err := backend.RemoveFile(ctx, s.st, backend.Join(dir, leaseFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if st.gen == 0 || st.body.Released {
		return nil
	}
	now := s.cfg.now().UTC()
	err = s.putLease(ctx, leaseName(dir, st.gen+1), leaseBody{Host: s.hostName(), PID: os.Getpid(), Since: now, Renewed: now, Released: true}, true)
	if errors.Is(err, fs.ErrExist) {
		return nil // someone took or broke it meanwhile
	}
	return err
}
