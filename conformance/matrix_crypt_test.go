package conformance_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/backendtest"
	"github.com/trovekit/trove/backend/crypt"
)

// cryptPrefix names the encrypted backends of the matrix: crypt-<backend>.
const cryptPrefix = "crypt-"

// fullyEncrypted are the backends every suite runs on encrypted; on the
// others (the servers, fileblob, MemMapFs) the storage, cas and session
// suites run encrypted, to keep the matrix within CI's time.
var fullyEncrypted = map[string]bool{"mem": true, "fs": true, "memblob": true}

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

// skipEncrypted says whether suite is left out on the backend name.
func skipEncrypted(name, suite string) bool {
	inner, ok := strings.CutPrefix(name, cryptPrefix)
	if !ok || fullyEncrypted[inner] {
		return false
	}
	return suite != "storage" && suite != "cas" && suite != "session"
}
