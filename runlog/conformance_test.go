package runlog_test

import (
	"testing"

	"github.com/spf13/afero"
	"gocloud.dev/blob/memblob"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/conformance"
)

// The runlog suite on the local backends; the conformance package's matrix
// runs it on every backend.
func TestConformance(t *testing.T) {
	for _, b := range []struct {
		name string
		new  func(tb testing.TB) backend.Storage
	}{
		{"mem", func(tb testing.TB) backend.Storage {
			st := mem.New()
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"fs", func(tb testing.TB) backend.Storage {
			st, err := fs.NewOS(tb.TempDir())
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"fs-memmapfs", func(tb testing.TB) backend.Storage {
			st, err := fs.New(afero.NewMemMapFs(), "/trove")
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
		{"memblob", func(tb testing.TB) backend.Storage {
			st, err := cloud.New(memblob.OpenBucket(nil))
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(b.name, func(t *testing.T) { conformance.TestRunlog(t, b.new) })
	}
}
