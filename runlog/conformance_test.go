package runlog_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

// The runlog suite on the local backends and memblob; the conformance
// package's matrix runs it on every backend.
func TestConformance(t *testing.T) {
	for _, b := range append(backendtest.Local(), backendtest.Case{Name: "memblob", New: cloudtest.NewMemblob}) {
		t.Run(b.Name, func(t *testing.T) { conformance.TestRunlog(t, b.New) })
	}
}
