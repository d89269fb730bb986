package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"iter"
	"time"

	"github.com/google/uuid"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session/tree"
)

// NoopStore is the store for persistence off (the session store API's persistSession:
// false): Create gives a handle that keeps its conversation in memory, and
// nothing touches any storage. There is nothing to load, list or fork.
type NoopStore struct {
	opts []tree.Option
}

var _ Sessions = (*Store)(nil)
var _ Sessions = NoopStore{}

// NewNoopStore returns a store that persists nothing; the options that
// concern sessions (WithSessionOptions, WithClock, ...) apply to the
// in-memory sessions it creates.
func NewNoopStore(opts ...Option) NoopStore {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return NoopStore{opts: cfg.session}
}

// OpenSessions opens what an agent loop appends to: the session store on st
// or, with persist false (the session store API's persistSession: false), a NoopStore that
// never touches st. Store options that concern sessions apply to both.
func OpenSessions(ctx context.Context, st backend.Storage, persist bool, opts ...Option) (Sessions, error) {
	if persist {
		return OpenStore(ctx, st, opts...)
	}
	return NewNoopStore(opts...), nil
}

// Create starts an in-memory session.
func (n NoopStore) Create(ctx context.Context, o CreateOptions) (*Handle, error) {
	id := o.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		id = u.String()
	}
	now := time.Now().UTC()
	path := SessionPath(o.Cwd, now, id)
	sess, err := tree.Create(nil, path, tree.Header{ID: id, Cwd: o.Cwd, Title: o.Title, ParentSession: o.ParentID}, append(n.opts, tree.InMemory())...)
	if err != nil {
		return nil, err
	}
	meta := Metadata{ID: id, Path: path, ProjectHash: EncodeCwd(o.Cwd), Cwd: o.Cwd, Title: o.Title, Model: o.Model, CreatedAt: now, UpdatedAt: now,
		ParentID: o.ParentID, AgentName: o.AgentName}
	return newHandle(ctx, nil, sess, meta, 256), nil
}

func nothing(op, ref string) error { return backend.PathErr(op, ref, fs.ErrNotExist) }

// Load finds nothing: no session was ever persisted.
func (NoopStore) Load(_ context.Context, ref string) (*Handle, error) {
	return nil, nothing("load", ref)
}

// Resume finds nothing.
func (NoopStore) Resume(_ context.Context, ref string) (*Handle, error) {
	return nil, nothing("load", ref)
}

// Continue finds nothing.
func (NoopStore) Continue(_ context.Context, cwd string) (*Handle, error) {
	return nil, nothing("continue", cwd)
}

// ResumeAt finds nothing.
func (NoopStore) ResumeAt(_ context.Context, ref, _ string) (*Handle, error) {
	return nil, nothing("load", ref)
}

// Fork finds nothing to fork.
func (NoopStore) Fork(_ context.Context, ref string, _ ForkOptions) (*Handle, error) {
	return nil, nothing("fork", ref)
}

// Delete finds nothing.
func (NoopStore) Delete(_ context.Context, ref string) error { return nothing("delete", ref) }

// List yields nothing.
func (NoopStore) List(context.Context, string) iter.Seq2[Metadata, error] {
	return func(func(Metadata, error) bool) {}
}

// UpdateMetadata finds nothing.
func (NoopStore) UpdateMetadata(_ context.Context, ref string, _ func(*Metadata)) error {
	return nothing("update", ref)
}

// LoadMessages finds nothing.
func (NoopStore) LoadMessages(_ context.Context, ref string) ([]*tree.Entry, error) {
	return nil, nothing("load", ref)
}

// LoadMessagesUpTo finds nothing.
func (NoopStore) LoadMessagesUpTo(_ context.Context, ref, _ string) ([]*tree.Entry, error) {
	return nil, nothing("load", ref)
}

// Transcript yields nothing.
func (NoopStore) Transcript(context.Context, string) iter.Seq2[json.RawMessage, error] {
	return func(func(json.RawMessage, error) bool) {}
}
