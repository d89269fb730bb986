package runlog

import (
	"context"
	"iter"

	"github.com/trovekit/trove/cas"
)

// Roots lists every blob ref the run logs and state snapshots hold, for GC
// and fsck. Like session.Store.Roots it reads raw bytes, so a record type
// or field this version does not know still keeps its blobs.
func (s *Store) Roots(ctx context.Context) iter.Seq2[cas.Root, error] {
	return func(yield func(cas.Root, error) bool) {
		for _, dir := range []string{RunsDir, StateDir} {
			for r, err := range cas.ScanTree(ctx, s.st, dir) {
				if !yield(r, err) || err != nil {
					return
				}
			}
		}
	}
}
