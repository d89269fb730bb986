package fs_test

import (
	"context"
	"errors"
	iofs "io/fs"
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	trovefs "github.com/trovekit/trove/backend/fs"
)

// A staged file is invisible until Commit puts it at its name; Abort, a
// cancelled ctx or a closed store leave the name as it was.
func TestStage(t *testing.T) {
	ctx := context.Background()
	eachRaw(t, func(t *testing.T, s *trovefs.Storage, fsys afero.Fs) {
		mustWrite(t, s, "f", "old")
		st, err := s.Stage(ctx, "f", []byte("new"))
		if err != nil {
			t.Fatal(err)
		}
		dg, err := s.Stage(ctx, "d/g", []byte("g"))
		if err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "f"); got != "old" {
			t.Errorf("f before Commit = %q", got)
		}
		if _, err := s.Stat(ctx, "d/g"); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("d/g before Commit: %v", err)
		}
		if err := st.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := dg.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if f, g := mustRead(t, s, "f"), mustRead(t, s, "d/g"); f != "new" || g != "g" {
			t.Errorf("after Commit f = %q, d/g = %q", f, g)
		}
		wantErr(t, st.Commit(ctx), "write", "f", backend.ErrClosed)

		ab, err := s.Stage(ctx, "f", []byte("aborted"))
		if err != nil {
			t.Fatal(err)
		}
		ab.Abort()
		cctx, cancel := context.WithCancel(ctx)
		late, err := s.Stage(cctx, "f", []byte("late"))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		wantErr(t, late.Commit(cctx), "write", "f", context.Canceled)
		if got := mustRead(t, s, "f"); got != "new" {
			t.Errorf("after Abort and a cancelled Commit f = %q", got)
		}
		assertNoTemps(t, s, fsys)

		if _, err := s.Stage(ctx, "d", []byte("x")); !errors.Is(err, backend.ErrIsDir) {
			t.Errorf("Stage over a directory: %v", err)
		}
		closing, err := s.Stage(ctx, "f", []byte("closed"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wantErr(t, closing.Commit(ctx), "write", "f", backend.ErrClosed)
		// Its temp is a crash leftover now, for the next open to remove.
		r, err := trovefs.New(fsys, s.Root())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := mustRead(t, r, "f"); got != "new" {
			t.Errorf("after a Commit on a closed store f = %q", got)
		}
	})
}
