package runlog

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"iter"

	"github.com/trovekit/trove/cas"
)

// BlobRefs yields the blob refs the run logs hold (tool outputs in cas/),
// the roots cas GC must keep. Lines that are not records are skipped; an
// I/O error ends the iteration. Refs may repeat.
func (s *Store) BlobRefs(ctx context.Context) iter.Seq2[cas.Ref, error] {
	return func(yield func(cas.Ref, error) bool) {
		for info, err := range s.Runs(ctx) {
			if err != nil {
				yield(cas.Ref{}, err)
				return
			}
			stop := false
			_, err := s.scan(ctx, info.Path, false, func(e Entry, _ error) bool {
				t, ok := e.Record.(*ToolOutput)
				if !ok || t.OutputRef == nil || !bytes.Contains(e.Raw, []byte("blob:")) {
					return true
				}
				ref, perr := cas.ParseRef(t.OutputRef.ID)
				if perr != nil {
					return true
				}
				if !yield(ref, nil) {
					stop = true
					return false
				}
				return true
			})
			if stop {
				return
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				yield(cas.Ref{}, err)
				return
			}
		}
	}
}
