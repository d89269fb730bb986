package trove

import (
	"context"
	"iter"

	"github.com/trovekit/trove/redact"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// Secret is one secret Scan found.
type Secret struct {
	Detector  string `json:"detector"`
	SessionID string `json:"session_id"`
	EntryID   string `json:"entry_id"` // "" for the session header (its title)
	Excerpt   string `json:"excerpt"`  // the text around it, every secret masked
}

// Scan looks for secrets in the sessions named by ids (ids or unique
// prefixes; none: every session of the store): message text, thinking,
// tool calls and tool results, with outputs kept as blobs read back.
func (s *Store) Scan(ctx context.Context, d *redact.Detector, ids ...string) iter.Seq2[Secret, error] {
	return func(yield func(Secret, error) bool) {
		if len(ids) == 0 {
			for m, err := range s.sessions.Query(ctx, session.Query{}) {
				if err != nil {
					yield(Secret{}, err)
					return
				}
				if !s.scanSession(ctx, d, m, yield) {
					return
				}
			}
			return
		}
		for _, id := range ids {
			m, err := s.sessions.Metadata(ctx, id)
			if err != nil {
				yield(Secret{}, err)
				return
			}
			if !s.scanSession(ctx, d, m, yield) {
				return
			}
		}
	}
}

func (s *Store) scanSession(ctx context.Context, d *redact.Detector, m session.Metadata, yield func(Secret, error) bool) bool {
	sess, err := tree.Open(ctx, s.st, m.Path, tree.ReadOnly(), tree.WithBlobStore(s.blobs))
	if err != nil {
		return yield(Secret{}, err)
	}
	for _, f := range d.Find(sess.Header().Title) {
		if !yield(Secret{Detector: f.Detector, SessionID: m.ID, Excerpt: f.Excerpt}, nil) {
			return false
		}
	}
	for _, e := range sess.Entries() {
		if err := ctx.Err(); err != nil {
			return yield(Secret{}, err)
		}
		_, found, err := d.JSON(e.JSON(), nil)
		if err != nil {
			return yield(Secret{}, err)
		}
		for _, f := range found {
			if !yield(Secret{Detector: f.Detector, SessionID: m.ID, EntryID: e.ID(), Excerpt: f.Excerpt}, nil) {
				return false
			}
		}
	}
	return true
}
