package trove_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/cloud/cloudtest"
	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// A store with a session holding an image, a checkpoint and a run log
// mirrors to S3 and back: every copy checks clean, loads the image, and a
// second mirror copies nothing.
func TestMirrorLocalS3AndBack(t *testing.T) {
	ctx := context.Background()
	srcDir, ws := t.TempDir(), t.TempDir()
	src, err := trove.Open(ctx, srcDir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	id, img := fillStore(t, src, ws)

	s3 := cloudtest.StartS3(t)
	bucket := s3.New(t)
	dry, err := trove.Mirror(ctx, src.Storage(), bucket, trove.MirrorDryRun())
	if err != nil {
		t.Fatal(err)
	}
	if dry.Copied == 0 {
		t.Fatal("dry run would copy nothing")
	}
	rep, err := trove.Mirror(ctx, src.Storage(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != dry.Copied {
		t.Errorf("copied %d files, dry run said %d", rep.Copied, dry.Copied)
	}
	checkMirror(t, bucket, id, img)
	again, err := trove.Mirror(ctx, src.Storage(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	if again.Copied != 0 || again.Skipped != rep.Copied {
		t.Errorf("second mirror: %+v, want nothing copied and %d skipped", again, rep.Copied)
	}

	// A changed session file is copied again, whole.
	h2, err := src.Sessions().Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.AppendMessage(ctx, conformance.OneStoreReply("more")); err != nil {
		t.Fatal(err)
	}
	h2.Close(ctx)
	third, err := trove.Mirror(ctx, src.Storage(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	if third.Copied < 1 {
		t.Errorf("after an append: %+v, want the session file copied", third)
	}

	// Interrupted after its first file, a mirror to a fresh bucket leaves
	// it partial (the copies under way beside it may land too, but no
	// later group starts); the rerun finishes it.
	half := s3.New(t)
	cctx, cancel := context.WithCancel(ctx)
	landed := 0
	_, err = trove.Mirror(cctx, src.Storage(), half, trove.MirrorProgress(func(trove.MirrorAction) { landed++; cancel() }))
	cancel()
	if err == nil {
		t.Fatal("interrupted mirror reported success")
	}
	rest, err := trove.Mirror(ctx, src.Storage(), half)
	if err != nil {
		t.Fatal(err)
	}
	if total := third.Copied + third.Skipped; rest.Skipped < landed || rest.Skipped >= total || rest.Copied+rest.Skipped != total {
		t.Errorf("rerun after interruption (%d landed before): %+v, want the other %d of %d copied", landed, rest, total-landed, total)
	}
	checkMirror(t, half, id, img)

	back, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := trove.Mirror(ctx, bucket, back.Storage()); err != nil {
		t.Fatal(err)
	}
	checkMirror(t, back.Storage(), id, img)
}

func checkMirror(t *testing.T, st backend.Storage, id string, img []byte) {
	t.Helper()
	ctx := context.Background()
	s, err := trove.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Sessions != 1 || rep.Checkpoints != 1 || rep.Runs < 1 {
		t.Errorf("check of the mirror: %+v", rep)
	}
	msgs, err := s.Sessions().LoadMessages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := base64.StdEncoding.EncodeToString(img)
	found := false
	for _, e := range msgs {
		if strings.Contains(string(e.JSON()), want) {
			found = true
		}
	}
	if !found {
		t.Errorf("mirrored session lost its image (%d messages)", len(msgs))
	}
}

// Pack indexes land after their packs, and staging objects, writer locks,
// open markers, the listing index, the pack index cache, the pack
// merges' lock and a stat cache's writers' lock are left behind.
func TestMirrorOrderAndSkips(t *testing.T) {
	ctx := context.Background()
	src, dst := mem.New(), mem.New()
	for _, n := range []string{"sessions/--a--/x.jsonl", "blobs/index/p1", "blobs/packs/p1/p1", "blobs/tmp/123", "blobs/sha256/ab/abcd",
		"sessions/--a--/x/writer.lock", "sessions/--a--/x/writer.lease", "sessions/--a--/x.open", "sessions/.index/--a--", "blobs/index.cache", "blobs/autopack.lock",
		"checkpoints/--w--/stat.cache.lock"} {
		if err := src.WriteFile(ctx, n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := trove.Mirror(ctx, mem.New(), dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty source: %v, want fs.ErrNotExist", err)
	}
	var order []string
	if _, err := trove.Mirror(ctx, src, dst, trove.MirrorProgress(func(a trove.MirrorAction) {
		order = append(order, a.Name)
		if a.Done != len(order) || a.Total != 4 {
			t.Errorf("%s: done %d of %d, want %d of 4", a.Name, a.Done, a.Total, len(order))
		}
	})); err != nil {
		t.Fatal(err)
	}
	// The two blob objects are copied at once, in either order.
	if len(order) == 4 {
		slices.Sort(order[:2])
	}
	want := "blobs/packs/p1/p1 blobs/sha256/ab/abcd blobs/index/p1 sessions/--a--/x.jsonl"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// Mirror copies eight files at once, never more, and starts a group only
// once the group before it is all in place: no pack index is written
// before every blob object and pack has landed, nor any other file before
// every pack index. The blob copies wait until eight are under way (a
// sequential copy would never get there: the deadline fails it), and are
// of 1 MiB, so a copy of a later group started beside them is seen.
func TestMirrorParallelInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	src := mem.New()
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("blobs/sha256/%02x/%02x%062d", i, i, 0))
	}
	for i := range 4 {
		names = append(names, fmt.Sprintf("blobs/packs/p%d/p%d", i, i), fmt.Sprintf("blobs/index/p%d", i),
			fmt.Sprintf("sessions/--a--/s%d.jsonl", i), fmt.Sprintf("checkpoints/c%d.json", i))
	}
	for _, n := range names {
		if err := src.WriteFile(ctx, n, bytes.Repeat([]byte(n), (1<<20)/len(n))); err != nil {
			t.Fatal(err)
		}
	}
	group := func(name string) int {
		switch {
		case strings.HasPrefix(name, "blobs/index/"):
			return 1
		case strings.HasPrefix(name, "blobs/"):
			return 0
		}
		return 2
	}
	var (
		mu             sync.Mutex
		landed         = map[string]bool{}
		inFlight, most int
		early          []string
	)
	eight := make(chan struct{})
	eightAtOnce := sync.OnceFunc(func() { close(eight) })
	dst := intercept.New(mem.New(), func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		if c.Op != "WriteFrom" {
			return next(ctx)
		}
		mu.Lock()
		for _, n := range names {
			if group(n) < group(c.Name) && !landed[n] {
				early = append(early, c.Name+" before "+n)
			}
		}
		inFlight++
		if most = max(most, inFlight); inFlight == 8 {
			eightAtOnce()
		}
		mu.Unlock()
		if group(c.Name) == 0 {
			select {
			case <-eight:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := next(ctx)
		mu.Lock()
		defer mu.Unlock()
		inFlight--
		landed[c.Name] = err == nil
		return err
	})
	rep, err := trove.Mirror(ctx, src, dst)
	if err != nil {
		t.Fatalf("mirror: %v (most copies at once: %d)", err, most)
	}
	if rep.Copied != len(names) {
		t.Errorf("copied %d, want %d", rep.Copied, len(names))
	}
	if most != 8 {
		t.Errorf("at most %d copies at once, want 8", most)
	}
	if len(early) > 0 {
		t.Errorf("%d copies started before a file of an earlier group landed, such as %s", len(early), early[0])
	}
	for _, n := range names {
		a, _ := src.ReadFile(ctx, n)
		if b, err := dst.ReadFile(ctx, n); err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes copied of %d, %v", n, len(b), len(a), err)
		}
	}
}

// fillStore writes a session holding an image, a checkpoint of ws and a
// run log into s; it returns the session's id and the image.
func fillStore(t *testing.T, src *trove.Store, ws string) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	img := bytes.Repeat([]byte("PNGDATA-"), 4096)
	h, err := src.Sessions().Create(ctx, session.CreateOptions{Cwd: ws, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, conformance.OneStoreImage("look", img)); err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, conformance.OneStoreReply("seen")); err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cps, err := src.SessionCheckpoints(h, ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cps.Create(ctx, "before-edit", []string{"main.go"}); err != nil {
		t.Fatal(err)
	}
	cps.Close()
	w, err := src.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "go"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return id, img
}

// A file removed from the source after Mirror listed it (a GC or a fold of
// a store in use) is skipped and counted, not an error; the rest is
// copied.
func TestMirrorSourceFileGone(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	for _, name := range []string{"blobs/packs/aa/gone", "sessions/a.jsonl", "sessions/b.jsonl"} {
		if err := inner.WriteFile(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	// Removed as Mirror opens it: after the listing, before the copy.
	src := intercept.New(inner, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		if c.Op == "Open" && c.Name == "blobs/packs/aa/gone" {
			if err := inner.Unlink(ctx, c.Name); err != nil {
				return err
			}
		}
		return next(ctx)
	})
	dst := mem.New()
	rep, err := trove.Mirror(ctx, src, dst)
	if err != nil {
		t.Fatalf("mirror of a source that lost a file meanwhile: %v", err)
	}
	if rep.Gone != 1 || rep.Copied != 2 {
		t.Fatalf("report %+v, want gone 1, copied 2", rep)
	}
	for _, name := range []string{"sessions/a.jsonl", "sessions/b.jsonl"} {
		if b, err := dst.ReadFile(ctx, name); err != nil || string(b) != name {
			t.Fatalf("%s: %q %v", name, b, err)
		}
	}
	if _, err := dst.Stat(ctx, "blobs/packs/aa/gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the gone file reached the destination: %v", err)
	}
}
