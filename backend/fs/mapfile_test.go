//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fs_test

import (
	"context"
	"errors"
	iofs "io/fs"
	"strings"
	"testing"

	trovefs "github.com/trovekit/trove/backend/fs"

	"github.com/trovekit/trove/backend"
)

// MapFile returns what ReadFile does, on the OS and on any other tree; a
// mapping keeps the bytes a WriteFile replaced, and its errors are
// ReadFile's.
func TestMapFile(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		big := strings.Repeat("0123456789abcdef", 20000) // several pages
		mustWrite(t, s, "a/big", big)
		mustWrite(t, s, "a/empty", "")
		data, release, err := backend.MapFile(ctx, s, "a/big")
		if err != nil || string(data) != big {
			t.Fatalf("MapFile = %d bytes, %v; want %d", len(data), err, len(big))
		}
		// Replaced whole, as WriteFile does: the mapping keeps what it had.
		mustWrite(t, s, "a/big", "new")
		if string(data) != big {
			t.Fatal("a mapped file changed when WriteFile replaced it")
		}
		if err := release(); err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := release(); err != nil {
			t.Fatalf("second release: %v", err)
		}
		data, release, err = backend.MapFile(ctx, s, "a/big")
		if err != nil || string(data) != "new" {
			t.Fatalf("MapFile after WriteFile = %q, %v", data, err)
		}
		_ = release()
		if data, release, err := backend.MapFile(ctx, s, "a/empty"); err != nil || len(data) != 0 {
			t.Fatalf("MapFile of an empty file = %q, %v", data, err)
		} else if err := release(); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]error{"a/missing": iofs.ErrNotExist, "../x": backend.ErrInvalidPath} {
			_, _, err := backend.MapFile(ctx, s, name)
			var pe *iofs.PathError
			if !errors.Is(err, want) || !errors.As(err, &pe) {
				t.Errorf("MapFile(%q) = %v, want a PathError wrapping %v", name, err, want)
			}
			_, rerr := s.ReadFile(ctx, name)
			if err == nil || rerr == nil || err.Error() != rerr.Error() {
				t.Errorf("MapFile(%q) = %v, ReadFile %v", name, err, rerr)
			}
		}
		if _, _, err := backend.MapFile(ctx, s, "a"); err == nil {
			t.Error("MapFile of a directory: no error")
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := backend.MapFile(cctx, s, "a/big"); !errors.Is(err, context.Canceled) {
			t.Errorf("MapFile with a canceled context = %v", err)
		}
	})
}
