package backend_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

// A store without the RangeReader fast path is read through OpenRange,
// with io.ReaderAt's rule: fewer bytes than asked come with io.EOF.
func TestReadRangeReads(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	if err := s.WriteFile(ctx, "d/f", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off, n int
		want   string
		err    error
	}{{2, 4, "2345", nil}, {7, 5, "789", io.EOF}, {10, 3, "", io.EOF}, {0, 0, "", nil}} {
		p := make([]byte, c.n)
		n, err := backend.ReadRange(ctx, s, "d/f", int64(c.off), p)
		if string(p[:n]) != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("ReadRange(%d, %d) = %q, %v; want %q, %v", c.off, c.n, p[:n], err, c.want, c.err)
		}
	}
	if _, err := backend.ReadRange(ctx, s, "d/missing", 0, make([]byte, 1)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadRange of a missing file = %v", err)
	}
}
