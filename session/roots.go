package session

import (
	"context"
	"iter"

	"github.com/trovekit/trove/cas"
)

// Roots lists every blob ref the store's sessions hold, for GC and fsck:
// every line of every session file (all branches, not only the leaf's
// path, and lines a load would skip) and of every sidecar (transcripts,
// metadata). Refs are found in the raw bytes, so no format change or
// damaged line can hide one from GC.
func (s *Store) Roots(ctx context.Context) iter.Seq2[cas.Root, error] {
	return cas.ScanTree(ctx, s.st, SessionsDir)
}
