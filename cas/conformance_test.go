package cas_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/internal/racebuild"
)

// The cas suite on the local backends; the full matrix (cloud included) runs
// in package conformance. Under -race, afero's MemMapFs is left to that
// matrix: it took 95 of this package's 207 s there, and the cas code it
// drives is the same as on the OS disk and in memory.
func TestConformance(t *testing.T) {
	for _, b := range backendtest.Local() {
		if racebuild.Enabled && b.Name == "fs-memmapfs" {
			continue
		}
		t.Run(b.Name, func(t *testing.T) { conformance.TestCAS(t, b.New) })
	}
}
