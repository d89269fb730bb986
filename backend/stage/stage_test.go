package stage_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/stage"
)

// Where the driver does not stage files (mem), Stage writes nothing until
// Commit, and Abort writes nothing at all.
func TestStageWithoutStager(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	defer s.Close()
	st, err := stage.Stage(ctx, s, "a/b", []byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	ab, err := stage.Stage(ctx, s, "a/c", []byte("dropped"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "a/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a/b before Commit: %v", err)
	}
	if err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ab.Abort()
	if got, err := s.ReadFile(ctx, "a/b"); err != nil || string(got) != "data" {
		t.Errorf("a/b after Commit = %q, %v", got, err)
	}
	if _, err := s.Stat(ctx, "a/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a/c after Abort: %v", err)
	}
	if err := st.Commit(ctx); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("second Commit: %v", err)
	}
}
