package conformance_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/conformance"
)

// backendCase names one backend of the matrix and makes fresh, empty stores.
type backendCase struct {
	name string
	new  func(tb testing.TB) backend.Storage
}

// backends lists every backend the matrix runs; servers live as long as tb.
// fileblob and the GCS and Azure servers join once backend/cloud passes on
// them (see the foundation issue's notes).
func backends(tb testing.TB) []backendCase {
	s3 := cloudtest.StartS3(tb)
	return []backendCase{
		{"fs", func(tb testing.TB) backend.Storage {
			st, err := fs.NewOS(tb.TempDir())
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"fs-memmapfs", func(tb testing.TB) backend.Storage {
			st, err := fs.New(afero.NewMemMapFs(), "/trove")
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"mem", func(tb testing.TB) backend.Storage {
			st := mem.New()
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"memblob", cloudtest.NewMemblob},
		{"fileblob", func(tb testing.TB) backend.Storage {
			st, err := cloud.OpenFileblob(tb.TempDir())
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"s3", s3.New},
	}
}

// suite is one layer's conformance suite.
type suite struct {
	name string
	run  func(t *testing.T, newBackend func(tb testing.TB) backend.Storage)
}

func suites() []suite {
	return []suite{
		{"storage", conformance.TestStorage},
		{"cas", conformance.TestCAS},
		{"session", conformance.TestSession},
		{"checkpoint", conformance.TestCheckpoint},
		{"runlog", conformance.TestRunlog},
	}
}

// TestMatrix runs every suite on every backend as TestMatrix/<backend>/<suite>;
// `make conformance` turns its results into a table.
func TestMatrix(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, s := range suites() {
				t.Run(s.name, func(t *testing.T) { s.run(t, b.new) })
			}
		})
	}
}

// BenchmarkMatrix runs the storage and cas benchmarks on every backend.
func BenchmarkMatrix(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			b.Run("storage", func(b *testing.B) { conformance.BenchStorage(b, be.new) })
			b.Run("cas", func(b *testing.B) { conformance.BenchCAS(b, be.new) })
		})
	}
}
