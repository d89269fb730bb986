package crypt_test

import (
	"bytes"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/conformance"
)

// testKey is a fixed master key: the suites test the format, not the KDF.
var testKey = bytes.Repeat([]byte{7}, crypt.KeySize)

func encrypted(newInner func(testing.TB) backend.Storage) func(testing.TB) backend.Storage {
	return func(tb testing.TB) backend.Storage {
		c, err := crypt.New(newInner(tb), testKey)
		if err != nil {
			tb.Fatal(err)
		}
		return c.Crashable()
	}
}

// TestStorageConformance runs the storage suite on an encrypted memory
// store; the conformance matrix runs every suite encrypted on every backend.
func TestStorageConformance(t *testing.T) {
	conformance.TestStorage(t, encrypted(backendtest.NewMem))
}
