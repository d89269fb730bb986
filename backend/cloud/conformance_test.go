package cloud_test

import (
	"testing"

	"gocloud.dev/blob/fileblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

func newFileblob(tb testing.TB) backend.Storage {
	b, err := fileblob.OpenBucket(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := cloud.New(b, cloud.WithLimits(backend.MaxNameBytes, cloud.FileblobElemBytes))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// The matrix in package conformance runs every suite on every server; these
// keep the package's own tests honest without a server.
func TestStorageMemblob(t *testing.T) { conformance.TestStorage(t, cloudtest.NewMemblob) }

// fileblob is left out of the suite until its quirks are handled: it writes
// the ".attrs" sidecar in place (a concurrent reader can catch it empty),
// its IfNotExist is not atomic, and it leaves empty directories on disk that
// a later file of the same name cannot be renamed over.
var _ = newFileblob
