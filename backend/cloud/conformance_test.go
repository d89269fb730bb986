package cloud_test

import (
	"testing"

	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/conformance"
)

// The matrix in package conformance runs every suite on every server; these
// keep the package's own tests honest with the buckets that need no server.
func TestStorageMemblob(t *testing.T) { conformance.TestStorage(t, cloudtest.NewMemblob) }

func TestStorageFileblob(t *testing.T) { conformance.TestStorage(t, cloudtest.NewFileblob) }
