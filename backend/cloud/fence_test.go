package cloud_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud"
)

// syncRec writes rec to w and syncs it, failing the test on an error.
func syncRec(t *testing.T, w backend.Writer, rec string) {
	t.Helper()
	if _, err := w.Write([]byte(rec)); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync of %q: %v", rec, err)
	}
}

// A writer whose file is unlinked, then made again by another writer,
// never adds its bytes to the new file: its next Sync fails, whether the
// new file's numbers are still below its own or have reached them.
func TestStaleWriterAfterUnlinkAndRecreate(t *testing.T) {
	for _, newSyncs := range []int{0, 1, 2, 3} {
		t.Run(fmt.Sprint(newSyncs), func(t *testing.T) {
			t.Skip("known gap: not fixed yet")
			st, _ := newRaw(t, cloud.WithCompactEvery(0))
			ctx := t.Context()
			a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			syncRec(t, a, "a1\n")
			syncRec(t, a, "a2\n")
			if err := st.Unlink(ctx, "f"); err != nil {
				t.Fatal(err)
			}
			b, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for i := range newSyncs {
				rec := fmt.Sprintf("b%d\n", i)
				want.WriteString(rec)
				syncRec(t, b, rec)
			}
			if _, err := a.Write([]byte("stale\n")); err != nil {
				t.Fatal(err)
			}
			if err := a.Sync(); !errors.Is(err, backend.ErrLocked) {
				t.Fatalf("the unlinked file's writer's Sync = %v, want ErrLocked", err)
			}
			wantFile(t, st, "f", want.String())
			syncRec(t, b, "last\n")
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			wantFile(t, st, "f", want.String()+"last\n")
		})
	}
}

// A fold whose tier starts at a stale writer's last number (its next
// number is the first the tier holds) does not let that writer take the
// number again: its Sync fails instead of reporting bytes that the tier
// hides from every reader. The stale writer's last part is a tier of its
// own (a writer folding at Sync), the newer writer's tier starts there.
func TestStaleWriterAtTierStart(t *testing.T) {
	st, _ := newRaw(t, cloud.WithCompactEvery(0), cloud.WithCompactOpen(3))
	ctx := t.Context()
	// A big base, so that folds make tiers rather than a new base.
	want := strings.Repeat("base\n", 200)
	if err := st.WriteFile(ctx, "f", []byte(want)); err != nil {
		t.Fatal(err)
	}
	// a claims 1, writes 2 and 3 and folds 1..3 into a tier (0, 3].
	a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, rec := range []string{"a1\n", "a2\n"} {
		want += rec
		syncRec(t, a, rec)
	}
	// b claims 4, writes 5 and 6 and folds 4..6 into a tier (3, 6].
	b, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{"b1\n", "b2\n"} {
		want += rec
		syncRec(t, b, rec)
	}
	if _, err := a.Write([]byte("stale\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("the stale writer's Sync = %v, want ErrLocked", err)
	}
	wantFile(t, st, "f", want)
	syncRec(t, b, "last\n")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", want+"last\n")
}
