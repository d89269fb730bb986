package checkpoint_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/conformance"
)

// The suite runs here on the in-repository backends; the conformance matrix
// runs it on every backend (a "checkpoint" row per backend).
func TestConformance(t *testing.T) {
	backends := []struct {
		name string
		new  func(tb testing.TB) backend.Storage
	}{
		{"mem", func(tb testing.TB) backend.Storage {
			s := mem.New()
			tb.Cleanup(func() { s.Close() })
			return s
		}},
		{"fs", func(tb testing.TB) backend.Storage {
			s, err := fs.NewOS(tb.TempDir())
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		}},
		{"fs-memmapfs", func(tb testing.TB) backend.Storage {
			s, err := fs.New(afero.NewMemMapFs(), "/trove")
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { conformance.TestCheckpoint(t, b.new) })
	}
}
