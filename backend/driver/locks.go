package driver

import (
	"context"
	"sync"

	"github.com/trovekit/trove/backend"
)

// LocalLocks is a table of locks held in this process, for drivers: a
// waiter blocks on the holder's channel, closed at release, so nobody
// polls. The zero value is ready to use.
type LocalLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// Acquire takes the lock name. With wait it blocks until the lock is free,
// ctx ends (ctx's error) or done is closed (ErrClosed; done may be nil);
// without, a held lock is ErrLocked. Unlock releases the lock it took,
// and nothing once ReleaseAll has released it: a late Unlock never frees
// a later holder's lock.
func (l *LocalLocks) Acquire(ctx context.Context, name string, wait bool, done <-chan struct{}) (backend.Unlocker, error) {
	for {
		l.mu.Lock()
		ch, busy := l.held[name]
		if !busy {
			if l.held == nil {
				l.held = map[string]chan struct{}{}
			}
			mine := make(chan struct{})
			l.held[name] = mine
			l.mu.Unlock()
			return &localLock{l: l, name: name, ch: mine}, nil
		}
		l.mu.Unlock()
		if !wait {
			return nil, backend.ErrLocked
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-done:
			return nil, backend.ErrClosed
		}
	}
}

// ReleaseAll releases every lock, waking their waiters.
func (l *LocalLocks) ReleaseAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, ch := range l.held {
		delete(l.held, name)
		close(ch)
	}
}

type localLock struct {
	l    *LocalLocks
	name string
	ch   chan struct{}
}

// Unlock releases the lock if it is still this holder's: whoever removes
// ch from the table closes it.
func (u *localLock) Unlock() error {
	u.l.mu.Lock()
	defer u.l.mu.Unlock()
	if u.l.held[u.name] == u.ch {
		delete(u.l.held, u.name)
		close(u.ch)
	}
	return nil
}
