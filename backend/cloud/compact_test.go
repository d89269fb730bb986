package cloud_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
)

// segObjects counts the objects of a file's segment directory.
func segObjects(keys []string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, ".~seg/") {
			n++
		}
	}
	return n
}

// Without background folds a writer never folds: each Sync adds one
// segment. Compact, beside the open writer, folds all but its last parts;
// the writer goes on syncing, a stale writer is still fenced off, and
// every byte reads back in order.
func TestCompactBesideWriter(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactEvery(0))
	ctx := t.Context()
	stale, w := twoWriters(t, st)
	var want strings.Builder
	write := func(n int) {
		t.Helper()
		for range n {
			rec := fmt.Sprintf("record %d\n", want.Len())
			want.WriteString(rec)
			if _, err := w.Write([]byte(rec)); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err != nil {
				t.Fatalf("Sync: %v", err)
			}
		}
	}
	write(100)
	// Two claims, then one segment per Sync.
	if got := segObjects(keys(t, b)); got != 102 {
		t.Fatalf("100 syncs left %d segment objects, want 102 (no folds at Sync)", got)
	}
	if err := backend.Compact(ctx, st, "f"); err != nil {
		t.Fatal(err)
	}
	// Tiers of 8 (at most 7 a level), the two claims, the last two.
	if got := segObjects(keys(t, b)); got > 2*7+2+2 {
		t.Fatalf("Compact left %d segment objects: %q", got, keys(t, b))
	}
	wantFile(t, st, "f", want.String())
	write(30)
	if err := backend.Compact(ctx, st, "f"); err != nil {
		t.Fatal(err)
	}
	// Tiers of 8 (at most 7 a level), the claims, the last two.
	if got := segObjects(keys(t, b)); got > 3*7+2+2 {
		t.Fatalf("the second Compact left %d segment objects: %q", got, keys(t, b))
	}
	write(3)
	wantFile(t, st, "f", want.String())
	wantFenced(t, st, stale, w, want.String())
}

// An opener folds what earlier writers left, so reads of a file written
// in many short sessions stay a few requests.
func TestOpenFolds(t *testing.T) {
	st, b := newRaw(t)
	var want strings.Builder
	for i := range 40 {
		rec := fmt.Sprintf("r%d\n", i)
		want.WriteString(rec)
		appendSynced(t, st, "f", rec)
	}
	// Each open claims a number and folds what came before: at most 7
	// parts per level stay beyond the base.
	if got := segObjects(keys(t, b)); got > 2*8 {
		t.Fatalf("40 writers left %d segment objects: %q", got, keys(t, b))
	}
	wantFile(t, st, "f", want.String())
	// Compact of a file written whole, and of a missing one.
	if err := st.WriteFile(t.Context(), "g", []byte("g")); err != nil {
		t.Fatal(err)
	}
	if err := backend.Compact(t.Context(), st, "g"); err != nil {
		t.Fatal(err)
	}
	if err := backend.Compact(t.Context(), st, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Compact of a missing file = %v", err)
	}
}

// A writer that stays open folds in the background every n Syncs: the
// Syncs go on beside the folds, a stale writer is still fenced off, and
// Close waits for the last fold.
func TestBackgroundCompaction(t *testing.T) {
	st, b := newRaw(t, cloud.WithCompactEvery(16))
	stale, w := twoWriters(t, st)
	var want strings.Builder
	for i := range 300 {
		rec := fmt.Sprintf("record %d\n", i)
		want.WriteString(rec)
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("Sync %d beside a background fold: %v", i, err)
		}
	}
	wantFenced(t, st, stale, w, want.String())
	got := keys(t, b)
	// How far the folds got depends on how many Syncs ran beside each; the
	// first, started after 16 and waited for by Close, made tiers of them.
	if !slices.ContainsFunc(got, func(k string) bool { return strings.Contains(k, "t1") || strings.Contains(k, "t2") }) || segObjects(got) > 302-14 {
		t.Fatalf("300 syncs with background folds left %d segment objects: %q", segObjects(got), got)
	}
	// What they left folds into tiers of 8 segments and of 8 tiers, at
	// most 7 a level, beside the claims and the last two.
	if err := backend.Compact(t.Context(), st, "f"); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, b); segObjects(got) > 3*7+2+2 {
		t.Fatalf("Compact after the background folds left %d segment objects: %q", segObjects(got), got)
	}
	wantFile(t, st, "f", want.String())
}
