package session

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/trovekit/trove/backend"
)

// BreakLock ends the writer lease of a session whose writer died without
// releasing it (backends without locks; a file lock dies with its process),
// so the next opener takes it at once instead of after its expiry.
func (s *Store) BreakLock(ctx context.Context, ref string) error {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return err
	}
	return s.breakLease(ctx, name)
}

// LockHolder is who holds a session's writer lock, as far as the store
// can tell.
type LockHolder struct {
	Host  string    `json:"host,omitempty"`
	PID   int       `json:"pid,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Lease is true on stores without locks: the holder is what its lease
	// records, alive or not. False: a live process holds a file lock.
	Lease bool `json:"lease"`
	// Renewed and Expires are the lease's last renewal and when it runs
	// out, on its holder's clock (zero for a lease of an older trove,
	// which never expires).
	Renewed time.Time `json:"renewed,omitzero"`
	Expires time.Time `json:"expires,omitzero"`
}

// Holder tells whether the session ref's writer lock is held, and by
// whom: a live process's file lock (backends with locks: it dies with its
// process), or a lease (buckets: until its writer closes, or it expires:
// see WithLease).
func (s *Store) Holder(ctx context.Context, ref string) (LockHolder, bool, error) {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return LockHolder{}, false, err
	}
	dir := SidecarDir(name)
	u, err := s.st.Lock(ctx, backend.Join(dir, lockFile), false)
	switch {
	case err == nil:
		return LockHolder{}, false, u.Unlock()
	case errors.Is(err, backend.ErrLocked):
		return LockHolder{}, true, nil
	case !errors.Is(err, backend.ErrNotSupported):
		return LockHolder{}, false, err
	}
	now := s.cfg.now()
	st, err := s.readLeases(ctx, dir)
	if err != nil {
		return LockHolder{}, false, err
	}
	if st.legacy {
		data, err := s.st.ReadFile(ctx, backend.Join(dir, leaseFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return LockHolder{}, false, err
		}
		var h LockHolder
		_ = json.Unmarshal(data, &h) // an older lease records only since
		h.Lease = true
		return h, err == nil, nil
	}
	if st.gen == 0 || s.expired(st.body, now) {
		return LockHolder{}, false, nil
	}
	return st.body.holder(), true, nil
}

// writerLock is a session's writer lock: a file lock, or a lease.
type writerLock struct {
	unlock func()
	lease  *lease      // nil with a file lock
	prev   *LockHolder // the expired lease this one took over
}

// lockRef finds the session ref names and takes its writer lock.
func (s *Store) lockRef(ctx context.Context, ref string) (string, *writerLock, error) {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return "", nil, err
	}
	wl, err := s.lock(ctx, name, false)
	return name, wl, err
}

// lock takes the session's writer lock: a file lock where the backend has
// locks, else a lease (lease.go). fresh: the session is new, so no lease
// can exist yet.
func (s *Store) lock(ctx context.Context, name string, fresh bool) (*writerLock, error) {
	dir := SidecarDir(name)
	u, err := s.st.Lock(ctx, backend.Join(dir, lockFile), s.cfg.wait)
	switch {
	case err == nil:
		return &writerLock{unlock: func() { u.Unlock() }}, nil
	case errors.Is(err, backend.ErrLocked):
		return nil, backend.PathErr("lock", name, ErrLocked)
	case !errors.Is(err, backend.ErrNotSupported):
		return nil, err
	}
	l, prev, err := s.takeLease(ctx, name, fresh)
	if err != nil {
		return nil, err
	}
	return &writerLock{lease: l, prev: prev, unlock: func() { l.release(ctx) }}, nil
}
