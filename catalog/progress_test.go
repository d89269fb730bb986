package catalog

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// A refresh tells its progress: 0 of its files once it knows them, then
// after each transaction, and all of them when it is through; a refresh
// with nothing to do tells nothing.
func TestProgress(t *testing.T) {
	ctx := context.Background()
	st := newMem()
	sessions := randomStore(t, st, rand.New(rand.NewPCG(4, 4)), 9)
	type step struct{ done, total int }
	var steps []step
	c, err := Open(ctx, t.TempDir(), st, nil, WithProgress(func(done, total int) { steps = append(steps, step{done, total}) }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.cfg.batchLen = 4
	if err := c.Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	if want := []step{{0, 9}, {4, 9}, {8, 9}, {9, 9}}; !slices.Equal(steps, want) {
		t.Fatalf("a build told %v, want %v", steps, want)
	}
	steps = nil
	if err := c.Refresh(ctx, false); err != nil || len(steps) != 0 {
		t.Fatalf("a refresh with nothing to read told %v (%v)", steps, err)
	}
	s := sessions[2]
	appendFile(t, st, s.path(), append(s.message("late", "", map[string]any{"role": "user", "content": "late words"}), '\n'))
	if err := c.Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	if want := []step{{0, 1}, {1, 1}}; !slices.Equal(steps, want) {
		t.Fatalf("a refresh of one grown file told %v, want %v", steps, want)
	}
}
