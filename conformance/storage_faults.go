package conformance

import (
	"testing"
)

func testFaults(t *testing.T, nb newStorage) {
	t.Skip("backend/faulty is not available yet")
}
