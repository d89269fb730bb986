package conformance

import (
	"testing"

	"github.com/trovekit/trove/backend"
)

// TestSession runs TestSessionTree.
//
// Deprecated: the suite is named after the package it tests: use
// TestSessionTree.
func TestSession(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	TestSessionTree(t, newBackend)
}

// TestStore runs TestSessionStore.
//
// Deprecated: use TestSessionStore.
func TestStore(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	TestSessionStore(t, newBackend)
}

// TestOneStore runs TestTrove.
//
// Deprecated: use TestTrove.
func TestOneStore(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	TestTrove(t, newBackend)
}
