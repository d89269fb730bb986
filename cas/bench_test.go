package cas_test

import (
	"testing"

	"github.com/trovekit/trove/conformance"
)

// BenchmarkCAS runs conformance.BenchCAS on the local backends (`make bench`).
func BenchmarkCAS(b *testing.B) {
	for _, be := range localBackends() {
		if be.name == "fs-memmapfs" {
			continue
		}
		b.Run(be.name, func(b *testing.B) { conformance.BenchCAS(b, be.new) })
	}
}
