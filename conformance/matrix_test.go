package conformance_test

import (
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

// backends lists every backend the matrix runs; servers live as long as tb.
func backends(tb testing.TB) []backendtest.Case {
	return append(backendtest.Local(),
		backendtest.Case{Name: "memblob", New: cloudtest.NewMemblob},
		backendtest.Case{Name: "fileblob", New: cloudtest.NewFileblob},
		backendtest.Case{Name: "s3", New: cloudtest.StartS3(tb).New},
		backendtest.Case{Name: "gcs", New: cloudtest.StartGCS(tb).New},
		backendtest.Case{Name: "azure", New: cloudtest.StartAzure(tb).New},
		backendtest.Case{Name: "seaweedfs", New: cloudtest.StartSeaweedFS(tb).New},
	)
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
		{"session", conformance.TestSessionTree},
		{"checkpoint", conformance.TestCheckpoint},
		{"runlog", conformance.TestRunlog},
		{"store", conformance.TestSessionStore},
		{"trove", conformance.TestTrove},
	}
}

// TestMatrix runs every suite on every backend as TestMatrix/<backend>/<suite>;
// `make conformance` turns its results into a table.
// Each backend runs again encrypted, as crypt-<backend> (matrix_crypt_test.go).
func TestMatrix(t *testing.T) {
	plain := backends(t)
	for _, b := range append(plain, encryptedBackends(plain)...) {
		// No backend runs in parallel with another: the suites that bound
		// what a read allocates measure the whole process (make
		// conformance runs the slow real engine's two in processes of
		// their own instead).
		t.Run(b.Name, func(t *testing.T) {
			for _, s := range suites() {
				t.Run(s.name, func(t *testing.T) {
					s.run(t, b.New)
					if s.name == "store" && b.Name == "fs" {
						t.Run("TwoProcesses", storeTwoProcesses)
						t.Run("Kill9", storeKill9)
					}
				})
			}
		})
	}
}

// BenchmarkMatrix runs the storage and cas benchmarks on every backend.
func BenchmarkMatrix(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			b.Run("storage", func(b *testing.B) { conformance.BenchStorage(b, be.New) })
			b.Run("cas", func(b *testing.B) { conformance.BenchCAS(b, be.New) })
		})
	}
}
