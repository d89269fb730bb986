package cas_test

import (
	"testing"

	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/conformance"
)

// BenchmarkCAS runs conformance.BenchCAS on the local backends (`make bench`).
func BenchmarkCAS(b *testing.B) {
	for _, be := range backendtest.Local() {
		if be.Name == "fs-memmapfs" {
			continue
		}
		b.Run(be.Name, func(b *testing.B) { conformance.BenchCAS(b, be.New) })
	}
}
