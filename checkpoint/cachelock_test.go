package checkpoint

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

// Snapshots of one workspace at once (parallel tool calls' hooks) take
// turns at the stat cache: one that finds its lock held leaves the file to
// the holder, and a read that finds the file damaged while a writer holds
// the lock reads it again once that writer is done, rehashing nothing.
func TestStatCacheWritersTakeTurns(t *testing.T) {
	ctx := t.Context()
	e := &crashEnv{t: t, fs: afero.NewMemMapFs(), st: mem.New(), clk: &clock{t: t0}}
	e.edit(map[string]string{"a.txt": "one\n", "d/b.txt": "two\n"})
	first, _ := e.manager(e.st)
	if _, err := first.CreateTree(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	name := first.cfg.cacheName
	good, err := e.st.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.st.Lock(ctx, first.cacheLockName(), false)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Minute))
	e.edit(map[string]string{"a.txt": "three\n"})
	second, _ := e.manager(e.st)
	if _, err := second.CreateTree(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.st.ReadFile(ctx, name); !bytes.Equal(got, good) {
		t.Fatal("a snapshot wrote the stat cache while another writer held its lock")
	}

	// The holder is half way through its write when a reader comes.
	if err := e.st.WriteFile(ctx, name, good[:len(good)/2]); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{}, 1)
	watched := intercept.New(e.st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		err := next(ctx)
		if c.Op == "ReadFile" && c.Name == name {
			select {
			case read <- struct{}{}:
			default:
			}
		}
		return err
	})
	blobs, err := cas.Open(ctx, watched)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	third, err := newManager(watched, casBlobs{blobs}, FS(e.fs, "/ws"), WithClock(e.clk.now),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatal(err)
	}
	dirs := make(chan int, 1)
	go func() { dirs <- len(third.loadCache(ctx).Dirs) }()
	<-read
	if err := e.st.WriteFile(ctx, name, good); err != nil {
		t.Fatal(err)
	}
	if err := u.Unlock(); err != nil {
		t.Fatal(err)
	}
	if n := <-dirs; n == 0 || strings.Contains(logs.String(), "damaged") {
		t.Fatalf("the reader took the copy it read mid-write for damage (%d directories): %s", n, logs.String())
	}
}
