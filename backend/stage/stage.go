package stage

import (
	"context"

	"github.com/trovekit/trove/backend"
)

// Stager is an optional fast path for files that must become durable in
// an order (a pack before its index, both before the manifest naming
// them): Stage writes and syncs the bytes of name under a temporary name,
// where nothing sees them, and Staged.Commit puts them at name atomically
// and durably, as WriteFile would have. Files staged together are synced
// together; committed one after another, each is durable before the next
// is visible. Use it through the Stage function.
type Stager interface {
	// Stage is done with data when it returns.
	Stage(ctx context.Context, name string, data []byte) (Staged, error)
}

// Staged is a file written by Stage, not yet at its name.
type Staged interface {
	// Commit puts the file at its name, replacing what was there, and
	// returns once that is durable. On failure the name keeps its old
	// content. A second Commit fails with backend.ErrClosed.
	Commit(ctx context.Context) error
	// Abort drops the staged bytes; after Commit it does nothing.
	Abort()
}

// Stage stages data as name through s's Stager fast path. Without it, the
// Staged it returns writes data with WriteFile at Commit: the caller then
// keeps data unchanged until Commit or Abort.
func Stage(ctx context.Context, s backend.Storage, name string, data []byte) (Staged, error) {
	if st, ok := s.(Stager); ok {
		return st.Stage(ctx, name, data)
	}
	return WriteAtCommit(s, name, data), nil
}

// WriteAtCommit is the Staged of a store without the fast path: Commit is
// WriteFile of data (which must not change until then).
func WriteAtCommit(s backend.Storage, name string, data []byte) Staged {
	return &writeAtCommit{s: s, name: name, data: data}
}

type writeAtCommit struct {
	s    backend.Storage
	name string
	data []byte
	done bool
}

func (w *writeAtCommit) Commit(ctx context.Context) error {
	if w.done {
		return backend.PathErr("write", w.name, backend.ErrClosed)
	}
	w.done = true
	return w.s.WriteFile(ctx, w.name, w.data)
}

func (w *writeAtCommit) Abort() { w.done = true }
