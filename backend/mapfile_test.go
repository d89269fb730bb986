package backend_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

// A store without the Mapper fast path is read with ReadFile.
func TestMapFileReads(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	if err := s.WriteFile(ctx, "d/f", []byte("bytes")); err != nil {
		t.Fatal(err)
	}
	data, release, err := backend.MapFile(ctx, s, "d/f")
	if err != nil || string(data) != "bytes" {
		t.Fatalf("MapFile = %q, %v", data, err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := backend.MapFile(ctx, s, "d/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("MapFile of a missing file = %v", err)
	}
}
