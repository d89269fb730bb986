package trove

import (
	"context"

	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// ReadSession opens the session ref (an id or a unique prefix) read-only,
// with its blobs resolved, taking no lock: exporting and viewing never get
// in a writer's way.
func (s *Store) ReadSession(ctx context.Context, ref string) (*tree.Session, session.Metadata, error) {
	meta, err := s.sessions.Metadata(ctx, ref)
	if err != nil {
		return nil, meta, err
	}
	sess, err := tree.Open(ctx, s.st, meta.Path, tree.ReadOnly(), tree.WithBlobStore(s.blobs))
	if err != nil {
		return nil, meta, err
	}
	return sess, meta, nil
}
