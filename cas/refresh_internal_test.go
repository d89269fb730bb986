package cas

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
)

// TestBatchTakesLaterRefresh: a batch made before the store loads its
// indexes does not list the index directory again for its first blob,
// while one made after still does, so that it dedups against packs other
// processes wrote since.
func TestBatchTakesLaterRefresh(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	var lists atomic.Int64
	st := intercept.New(inner, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		if c.Op == "List" && strings.HasSuffix(c.Name, "index") {
			lists.Add(1)
		}
		return next(ctx)
	})
	writer, err := Open(ctx, inner)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := writer.PutMany(ctx, [][]byte{[]byte("written by another process")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	before := s.NewBatch()
	if err := s.LoadIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	n := lists.Load()
	if n == 0 {
		t.Fatal("loading the indexes listed no index directory")
	}
	if _, err := before.Put(ctx, []byte("first blob")); err != nil {
		t.Fatal(err)
	}
	if got := lists.Load(); got != n {
		t.Errorf("the batch made before the load listed the indexes again (%d lists, %d before)", got, n)
	}
	before.Discard()

	// Another process writes a pack; a batch made now must see it.
	more, err := writer.PutMany(ctx, [][]byte{[]byte("written later by another process")})
	if err != nil {
		t.Fatal(err)
	}
	after := s.NewBatch()
	for _, data := range [][]byte{[]byte("written by another process"), []byte("written later by another process")} {
		if _, err := after.Put(ctx, data); err != nil {
			t.Fatal(err)
		}
	}
	if got := lists.Load(); got != n+1 {
		t.Errorf("a batch made after the load listed the indexes %d times, want once", got-n)
	}
	after.mu.Lock()
	pending := len(after.pending)
	after.mu.Unlock()
	if pending != 0 {
		t.Errorf("%d blobs stored again, want both deduplicated (%s, %s)", pending, shared[0], more[0])
	}
	after.Discard()
}
