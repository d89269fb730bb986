package cloud_test

import (
	"errors"
	"fmt"
	"io/fs"
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

// Unlink leaves a claim above an appended file's numbers: a writer still
// open fails at its next Sync, and a file made again under the name, by
// any call, holds only its own bytes.
func TestUnlinkFencesWriter(t *testing.T) {
	st, _ := newRaw(t, cloud.WithCompactEvery(0))
	ctx := t.Context()
	a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	syncRec(t, a, "a1\n")
	if err := st.Unlink(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("Sync after Unlink = %v, want ErrLocked", err)
	}
	if _, err := st.Stat(ctx, "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after Unlink = %v, want not exist", err)
	}
	if err := st.WriteFile(ctx, "f", []byte("whole\n")); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", "whole\n")
	appendSynced(t, st, "f", "more\n")
	wantFile(t, st, "f", "whole\nmore\n")
	if err := st.Unlink(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := backend.Storage(st).(backend.WholeFile).PutFile(ctx, "f", []byte("put\n")); err != nil {
		t.Fatal(err)
	}
	wantFile(t, st, "f", "put\n")
	if err := st.Unlink(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	// The claim left is no file: an exclusive open makes one, once.
	w, err := st.OpenWriter(ctx, "f", backend.WriterOptions{Exclusive: true})
	if err != nil {
		t.Fatalf("an exclusive open after Unlink: %v", err)
	}
	syncRec(t, w, "x\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.OpenWriter(ctx, "f", backend.WriterOptions{Exclusive: true}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second exclusive open = %v, want ErrExist", err)
	}
	wantFile(t, st, "f", "x\n")
}

// A writer that made its file exclusively and has not synced yet looks at
// nothing before its first segment (one request), so if the file is
// unlinked and made again meanwhile, its first segment joins the new file.
func TestUnsyncedCreatorAfterUnlinkAndRecreate(t *testing.T) {
	t.Skip("known gap: a creator's first Sync takes number 1 without a look, and Unlink of a file without segments leaves no claim to fence it")
	st, _ := newRaw(t, cloud.WithCompactEvery(0))
	ctx := t.Context()
	a, err := st.OpenWriter(ctx, "f", backend.WriterOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := st.Unlink(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, "f", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("stale\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); !errors.Is(err, backend.ErrLocked) && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the unlinked file's creator's first Sync = %v, want ErrLocked", err)
	}
	wantFile(t, st, "f", "new\n")
}
