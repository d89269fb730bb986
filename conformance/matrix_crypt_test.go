package conformance_test

import (
	"bytes"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/crypt"
)

// cryptPrefix names the encrypted backends of the matrix: crypt-<backend>.
const cryptPrefix = "crypt-"

// encryptedBackends wraps each backend in backend/crypt, under a fixed
// master key: the suites test the format, not the key derivation.
func encryptedBackends(plain []backendtest.Case) []backendtest.Case {
	key := bytes.Repeat([]byte{0x5a}, crypt.KeySize)
	var out []backendtest.Case
	for _, b := range plain {
		newInner := b.New
		out = append(out, backendtest.Case{Name: cryptPrefix + b.Name, New: func(tb testing.TB) backend.Storage {
			c, err := crypt.New(newInner(tb), key)
			if err != nil {
				tb.Fatal(err)
			}
			return c.Crashable()
		}})
	}
	return out
}
