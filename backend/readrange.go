package backend

import (
	"context"
	"errors"
	"io"
)

// RangeReader is an optional fast path of stores on a local disk:
// ReadRange reads len(p) bytes of name from offset off in one positioned
// read, without the reader OpenRange returns (a search reads back a line
// of each of a few dozen files: open, read, close, not six system calls
// and a reader's allocations each). Like io.ReaderAt, fewer than len(p)
// bytes come with an error: io.EOF when name ends first.
type RangeReader interface {
	ReadRange(ctx context.Context, name string, off int64, p []byte) (int, error)
}

// ReadRange reads len(p) bytes of name from off through s's RangeReader
// fast path, else through OpenRange (ReadRangeOpen).
func ReadRange(ctx context.Context, s Storage, name string, off int64, p []byte) (int, error) {
	if r, ok := s.(RangeReader); ok {
		return r.ReadRange(ctx, name, off, p)
	}
	return ReadRangeOpen(ctx, s, name, off, p)
}

// ReadRangeOpen reads len(p) bytes of name from off through a reader of
// s.OpenRange: what a RangeReader falls back on. Fewer than len(p) bytes
// come with an error: io.EOF when name ends first.
func ReadRangeOpen(ctx context.Context, s Storage, name string, off int64, p []byte) (int, error) {
	rc, err := s.OpenRange(ctx, name, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}
