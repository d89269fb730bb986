package walk_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/walk"
)

// walkTree is a store with files at every depth and empty directories.
func walkTree(t *testing.T) backend.Storage {
	t.Helper()
	st := mem.New()
	ctx := t.Context()
	for _, name := range []string{"top", "a/1", "a/2", "a/b/1", "a/b/c/1", "a/b/c/2", "a/d/1", "z/9", "m/n/o/p"} {
		if err := st.WriteFile(ctx, name, []byte("data of "+name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"empty", "a/b/empty"} {
		if err := st.EnsureDir(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// steps is a walk as names, with "!" and the error where one was yielded.
func steps(seq iter.Seq2[backend.Info, error]) []string {
	var out []string
	for fi, err := range seq {
		if err != nil {
			out = append(out, "!"+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("%s dir=%v", fi.Name, fi.IsDir))
	}
	return out
}

func TestAheadIsWalk(t *testing.T) {
	st := walkTree(t)
	for _, dir := range []string{".", "a", "a/b", "missing", "top"} {
		want := steps(backend.Walk(t.Context(), st, dir))
		for _, n := range []int{0, 2, 16} {
			if got := steps(walk.Ahead(t.Context(), st, dir, n)); !slices.Equal(got, want) {
				t.Errorf("WalkAhead(%q, %d) = %q, want Walk's %q", dir, n, got, want)
			}
		}
	}
}

func TestAheadYieldsListingErrorsWhereWalkDoes(t *testing.T) {
	boom := errors.New("boom")
	st := faulty.New(walkTree(t), faulty.WithHook(func(op, name string) error {
		if op == "List" && name == "a/b" {
			return boom
		}
		return nil
	}))
	want := steps(backend.Walk(t.Context(), st, "."))
	if !slices.ContainsFunc(want, func(s string) bool { return s[0] == '!' }) {
		t.Fatalf("Walk met no error: %q", want)
	}
	if got := steps(walk.Ahead(t.Context(), st, ".", 4)); !slices.Equal(got, want) {
		t.Errorf("WalkAhead = %q, want Walk's %q", got, want)
	}
}

func TestFilesInWalkOrder(t *testing.T) {
	st := walkTree(t)
	var want []string
	for fi, err := range backend.Walk(t.Context(), st, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir {
			want = append(want, "data of "+fi.Name)
		}
	}
	read := func(ctx context.Context, fi backend.Info) string {
		b, err := st.ReadFile(ctx, fi.Name)
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	for _, n := range []int{1, 3, 16} {
		var got []string
		for s, err := range walk.Files(t.Context(), st, ".", n, read) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("WalkFiles(n=%d) = %q, want %q", n, got, want)
		}
	}
}

// Stopping after the first result ends the calls still under way, through
// their context, before WalkFiles returns.
func TestFilesStopsItsCalls(t *testing.T) {
	st := walkTree(t)
	var running, calls atomic.Int64
	first := "a/1" // the first file in walk order
	f := func(ctx context.Context, fi backend.Info) string {
		calls.Add(1)
		running.Add(1)
		defer running.Add(-1)
		if fi.Name != first {
			<-ctx.Done()
		}
		return fi.Name
	}
	for name, err := range walk.Files(t.Context(), st, ".", 4, f) {
		if err != nil || name != first {
			t.Fatalf("first result %q, %v; want %q", name, err, first)
		}
		break
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d calls still running after WalkFiles returned", n)
	}
	if calls.Load() == 0 {
		t.Error("no call made")
	}
}
