package conformance

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
)

// The backends that live in this repository, so the suite is exercised
// where it is written; each backend's own tests run it too.
var storageBackends = []struct {
	name string
	new  func(tb testing.TB) backend.Storage
}{
	{"mem", func(tb testing.TB) backend.Storage {
		s := mem.New()
		tb.Cleanup(func() { s.Close() })
		return s
	}},
	{"fs", func(tb testing.TB) backend.Storage {
		s, err := fs.NewOS(tb.TempDir())
		if err != nil {
			tb.Fatalf("fs.NewOS: %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}},
	{"fs-memmapfs", func(tb testing.TB) backend.Storage {
		s, err := fs.New(afero.NewMemMapFs(), "/root")
		if err != nil {
			tb.Fatalf("fs.New(MemMapFs): %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}},
}

func TestStorageBackends(t *testing.T) {
	for _, b := range storageBackends {
		t.Run(b.name, func(t *testing.T) { TestStorage(t, b.new) })
	}
}

func BenchmarkStorageBackends(b *testing.B) {
	for _, be := range storageBackends {
		b.Run(be.name, func(b *testing.B) { BenchStorage(b, be.new) })
	}
}
