package fs_test

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"testing"

	trovefs "github.com/trovekit/trove/backend/fs"

	"github.com/trovekit/trove/backend"
)

// ReadRange reads what OpenRange does, on the OS and on any other tree,
// fewer bytes than asked only with io.EOF, and its errors are
// OpenRange's.
func TestReadRange(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		mustWrite(t, s, "a/f", "0123456789")
		for _, c := range []struct {
			off, n int
			want   string
			err    error
		}{{0, 10, "0123456789", nil}, {2, 4, "2345", nil}, {7, 5, "789", io.EOF}, {10, 3, "", io.EOF}, {50, 3, "", io.EOF}, {4, 0, "", nil}} {
			p := make([]byte, c.n)
			n, err := s.ReadRange(ctx, "a/f", int64(c.off), p)
			if string(p[:n]) != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Errorf("ReadRange(%d, %d) = %q, %v; want %q, %v", c.off, c.n, p[:n], err, c.want, c.err)
			}
		}
		for name, want := range map[string]error{"a/missing": iofs.ErrNotExist, "../x": backend.ErrInvalidPath} {
			_, err := s.ReadRange(ctx, name, 0, make([]byte, 4))
			var pe *iofs.PathError
			if !errors.Is(err, want) || !errors.As(err, &pe) {
				t.Errorf("ReadRange(%q) = %v, want a PathError wrapping %v", name, err, want)
			}
			_, oerr := s.OpenRange(ctx, name, 0, 4)
			if err == nil || oerr == nil || err.Error() != oerr.Error() {
				t.Errorf("ReadRange(%q) = %v, OpenRange %v", name, err, oerr)
			}
		}
		if _, err := s.ReadRange(ctx, "a/f", -1, make([]byte, 4)); !errors.Is(err, backend.ErrInvalidRange) {
			t.Errorf("ReadRange at -1 = %v, want ErrInvalidRange", err)
		}
		if _, err := s.ReadRange(ctx, "a", 0, make([]byte, 4)); err == nil {
			t.Error("ReadRange of a directory: no error")
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.ReadRange(cctx, "a/f", 0, make([]byte, 4)); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadRange with a canceled context = %v", err)
		}
	})
}
