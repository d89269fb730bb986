package cloud_test

import (
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

func newFileblob(tb testing.TB) backend.Storage {
	st, err := cloud.OpenFileblob(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// The matrix in package conformance runs every suite on every server; these
// keep the package's own tests honest without a server.
func TestStorageMemblob(t *testing.T) { conformance.TestStorage(t, cloudtest.NewMemblob) }

func TestStorageFileblob(t *testing.T) { conformance.TestStorage(t, newFileblob) }
