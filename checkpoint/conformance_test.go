package checkpoint_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/conformance"
)

// The suite runs here on the local backends; the conformance matrix runs it
// on every backend (a "checkpoint" row per backend).
func TestConformance(t *testing.T) {
	for _, b := range backendtest.Local() {
		t.Run(b.Name, func(t *testing.T) { conformance.TestCheckpoint(t, b.New) })
	}
}
