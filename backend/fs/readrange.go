package fs

import (
	"context"
	"io"

	"github.com/trovekit/trove/backend"
)

var _ backend.RangeReader = (*Storage)(nil)

// ReadRange reads len(p) bytes of name from off (backend.RangeReader):
// on the OS an open beneath the root, one positioned read and a close;
// anything that path cannot answer (another tree, a symlink, an error)
// goes through OpenRange, whose errors name the path as every other
// call's do.
func (s *Storage) ReadRange(ctx context.Context, name string, off int64, p []byte) (int, error) {
	if n, ok := s.readRange(ctx, name, off, p); ok {
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return backend.ReadRangeOpen(ctx, s, name, off, p)
}
