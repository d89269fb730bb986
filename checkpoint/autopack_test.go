package checkpoint_test

import (
	"fmt"
	"testing"

	"github.com/trovekit/trove/cas"
)

// A snapshot writes a pack; past cas.DefaultAutoPack of them, the one that
// crosses the limit merges them, so the index listing every command makes
// stays bounded, and every checkpoint still rewinds to its own bytes.
func TestSnapshotsKeepPackCountBounded(t *testing.T) {
	e := newFormatEnv(t)
	const n = cas.DefaultAutoPack*2 + 5
	for i := range n {
		e.write("a.txt", fmt.Sprintf("version %d\n", i), 0o644)
		e.write(fmt.Sprintf("d/f%d.txt", i), "new file\n", 0o644)
		if _, err := e.m.CreateTree(e.ctx, fmt.Sprintf("cp%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	indexes := 0
	for _, err := range e.st.List(e.ctx, "blobs/index") {
		if err != nil {
			t.Fatal(err)
		}
		indexes++
	}
	if indexes > cas.DefaultAutoPack+1 {
		t.Fatalf("%d pack indexes after %d snapshots, want at most %d", indexes, n, cas.DefaultAutoPack+1)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if _, err := e.m.Rewind(e.ctx, fmt.Sprintf("cp%d", i), false); err != nil {
			t.Fatal(err)
		}
		if got, want := e.read("a.txt"), fmt.Sprintf("version %d\n", i); got != want {
			t.Fatalf("rewound to cp%d: a.txt = %q, want %q", i, got, want)
		}
	}
	for ref, err := range e.blobs.Verify(e.ctx) {
		if err != nil {
			t.Fatalf("verify %v: %v", ref, err)
		}
	}
}
