package cas

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

// statCounter counts the Stats of loose object names.
type statCounter struct {
	backend.Storage
	loose atomic.Int64
}

func (c *statCounter) Stat(ctx context.Context, name string) (backend.Info, error) {
	if strings.HasPrefix(name, "blobs/sha256/") {
		c.loose.Add(1)
	}
	return c.Storage.Stat(ctx, name)
}

// A put looks for a loose copy only where the store has loose objects: a
// batch into a store of packs Stats none, and a loose blob, whether this
// Store or another wrote it first, is still found and not stored again.
func TestPutLooksForLooseCopies(t *testing.T) {
	ctx := t.Context()
	st := &statCounter{Storage: mem.New()}
	open := func() *Store {
		s, err := Open(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var blobs [][]byte
	for i := range 50 {
		blobs = append(blobs, sourceLike(1000+i, i))
	}
	s := open()
	if _, err := s.PutMany(ctx, blobs); err != nil {
		t.Fatal(err)
	}
	if n := st.loose.Load(); n != 0 {
		t.Fatalf("a batch into a store without loose objects looked for %d loose copies", n)
	}
	// packed reports whether a fresh store finds data's blob in a pack.
	packed := func(data []byte) bool {
		t.Helper()
		info, err := open().Stat(ctx, Ref{algo: SHA256, digest: SHA256.sum(data)})
		if err != nil {
			t.Fatal(err)
		}
		return info.Packed
	}
	// This Store writes a loose object, then puts the same bytes in a batch.
	mine := sourceLike(3000, 100)
	if _, err := s.Put(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMany(ctx, [][]byte{mine}); err != nil {
		t.Fatal(err)
	}
	if packed(mine) {
		t.Error("a loose blob this Store wrote was stored again in a pack")
	}
	// Another process wrote one before this Store's first put.
	theirs := sourceLike(3000, 101)
	if _, err := open().Put(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := open().PutMany(ctx, [][]byte{theirs}); err != nil {
		t.Fatal(err)
	}
	if packed(theirs) {
		t.Error("a loose blob another Store wrote was stored again in a pack")
	}
}
