package cas_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/conformance"
)

// The cas suite on the local backends; the full matrix (cloud included) runs
// in package conformance.
func TestConformance(t *testing.T) {
	for _, b := range backendtest.Local() {
		t.Run(b.Name, func(t *testing.T) { conformance.TestCAS(t, b.New) })
	}
}
