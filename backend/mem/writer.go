package mem

import (
	"bytes"
	"context"
	"io"
	"slices"

	"github.com/trovekit/trove/backend"
)

// writer appends to one node, which it keeps through renames; after the node
// is unlinked or replaced it writes to a file nobody sees, as on POSIX.
type writer struct {
	s     *memDriver
	n     *node
	name  string // where n was created; it stays there until renamed
	epoch uint64
}

// check reports why the writer can no longer be used: a crash or the
// store's Close came first. Callers hold s.mu.
func (w *writer) check() error {
	if w.epoch != w.s.epoch || w.s.closed.Load() {
		return backend.ErrClosed
	}
	return nil
}

// Write appends p; it is visible at once and durable after Sync.
func (w *writer) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.check(); err != nil {
		return 0, err
	}
	if len(p) > 0 {
		w.n.data = append(w.n.data, p...)
		w.n.mod = w.s.now()
	}
	return len(p), nil
}

// Sync makes everything written durable, and with it the file's directory
// entry when the file was created by this writer.
func (w *writer) Sync() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.check(); err != nil {
		return err
	}
	w.n.synced = clip(w.n.data)
	// A node not yet durable has never been renamed, so it is still at
	// w.name unless it was unlinked or replaced.
	if !w.n.durable && w.s.nodes[w.name] == w.n {
		w.n.durable = true
		for _, d := range backend.Parents(w.name) {
			w.s.nodes[d].durable = true
		}
	}
	return nil
}

// Close fails with ErrClosed when a crash or the store's Close came first.
func (w *writer) Close() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.check()
}

// reader streams a slice taken at open time, which never changes.
type reader struct {
	s    *memDriver
	data []byte
}

func (r *reader) Read(p []byte) (int, error) {
	if r.s.closed.Load() {
		return 0, backend.ErrClosed
	}
	if len(r.data) == 0 {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (r *reader) Close() error { return nil }

// Lock is driver.Locker with locks held in this process only; Close
// wakes the waiters.
func (s *memDriver) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	return s.locks.Acquire(ctx, name, wait, s.done)
}

// crash is Storage.Crash.
func (s *memDriver) crash() {
	if s.closed.Load() {
		return
	}
	s.mu.Lock()
	s.epoch++
	// Name order makes a seeded KeepFunc reproducible.
	names := make([]string, 0, len(s.nodes))
	for name := range s.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := s.nodes[name]
		switch {
		case !n.durable:
			s.unlink(name)
		case !n.dir:
			n.data = s.survivor(name, n)
			n.synced = n.data
		}
	}
	s.mu.Unlock()

	s.locks.ReleaseAll()
}

// survivor is what a crash leaves of file n: its synced content, or with a
// KeepFunc a longer prefix of what was written.
func (s *memDriver) survivor(name string, n *node) []byte {
	synced := clip(n.synced)
	if s.keep == nil || len(n.data) <= len(synced) || !bytes.HasPrefix(n.data, synced) {
		return synced
	}
	k := min(max(s.keep(name, len(synced), len(n.data)), len(synced)), len(n.data))
	return clip(n.data[:k])
}
