package session_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/conformance"
)

// The conformance suite runs here on the local backends; the conformance
// package's matrix runs it on every backend.
func TestConformance(t *testing.T) {
	for _, b := range backendtest.Local() {
		t.Run(b.Name, func(t *testing.T) { conformance.TestSessionTree(t, b.New) })
	}
}
