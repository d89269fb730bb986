package session_test

import (
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/conformance"
)

// The conformance suite runs here on mem and the OS file system; the
// conformance package's matrix runs it on every backend.
func TestConformanceMem(t *testing.T) {
	conformance.TestSession(t, func(tb testing.TB) backend.Storage { return newMem(tb) })
}

func TestConformanceFS(t *testing.T) {
	conformance.TestSession(t, func(tb testing.TB) backend.Storage {
		st, err := fs.NewOS(tb.TempDir())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	})
}
