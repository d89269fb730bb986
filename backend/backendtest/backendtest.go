// Package backendtest gives tests fresh, empty stores on the local backends
// (mem, fs on the OS, fs on afero's MemMapFs), so each layer's own tests run
// its conformance suite on them without spelling them out again. The
// conformance matrix adds the cloud backends (backend/cloud/cloudtest).
//
// Imports: the standard library, afero, backend, backend/fs, backend/mem.
package backendtest

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// Case names one backend and makes fresh, empty stores on it, closed when
// the test ends.
type Case struct {
	Name string
	New  func(tb testing.TB) backend.Storage
}

// Local lists the backends that need no server: mem, fs, fs-memmapfs.
func Local() []Case {
	return []Case{{"fs", NewOS}, {"fs-memmapfs", NewMemMapFs}, {"mem", NewMem}}
}

// NewOS returns a store on a fresh temporary directory.
func NewOS(tb testing.TB) backend.Storage {
	st, err := fs.NewOS(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return closing(tb, st)
}

// NewMemMapFs returns a store on a fresh afero MemMapFs.
func NewMemMapFs(tb testing.TB) backend.Storage {
	st, err := fs.New(afero.NewMemMapFs(), "/trove")
	if err != nil {
		tb.Fatal(err)
	}
	return closing(tb, st)
}

// NewMem returns a fresh memory store.
func NewMem(tb testing.TB) backend.Storage { return closing(tb, mem.New()) }

func closing(tb testing.TB, st backend.Storage) backend.Storage {
	tb.Cleanup(func() { st.Close() })
	return st
}
