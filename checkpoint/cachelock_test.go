package checkpoint

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend/fs"
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
	go func() { dirs <- third.loadCache(ctx).NumDirs() }()
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

// A writer replaces the stat cache, never writes over it: a reader that
// has the old file mapped (WithMappedStatCache) keeps its bytes, and one
// that finds no file while the writer holds the lock waits for the new.
func TestStatCacheReplacedUnderMappedReader(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := fs.NewOS(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := filepath.Join(dir, "ws")
	write := func(files map[string]string) {
		t.Helper()
		old := time.Now().Add(-time.Hour)
		for p, c := range files {
			writeAged(t, ws, p, []byte(c), old)
		}
	}
	open := func() *Manager {
		t.Helper()
		m, err := OpenDir(ctx, st, ws, WithMappedStatCache())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	write(map[string]string{"b/one.txt": "1\n", "b/two.txt": "2\n", "c/three.txt": "3\n"})
	if _, err := open().CreateTree(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	reader := open()
	names := map[string][]string{}
	for d, r := range fullCache(reader.loadCache(ctx)).Dirs {
		names[d] = slices.Clone(r.Names)
	}
	// Names that sort first move every byte of the file after them.
	write(map[string]string{"a/aa.txt": "x\n", "a/ab.txt": "y\n", "aa/z.txt": "z\n"})
	if _, err := open().CreateTree(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	for d, r := range fullCache(reader.loadCache(ctx)).Dirs {
		if !slices.Equal(r.Names, names[d]) {
			t.Fatalf("the mapped cache changed under its reader: %q lists %q, was %q", d, r.Names, names[d])
		}
	}
	if res, err := reader.Diff(ctx, "first"); err != nil || len(res.Files) != 3 {
		t.Fatalf("Diff on the cache mapped before the second snapshot = %+v, %v; want the 3 files added", res, err)
	}

	// Between a writer's unlink and its new file there is none.
	name := reader.cfg.cacheName
	good, err := st.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.Lock(ctx, reader.cacheLockName(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Unlink(ctx, name); err != nil {
		t.Fatal(err)
	}
	missed := make(chan struct{}, 1)
	watched := intercept.New(st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		err := next(ctx)
		if c.Op == "ReadFile" && c.Name == name && errors.Is(err, iofs.ErrNotExist) {
			select {
			case missed <- struct{}{}:
			default:
			}
		}
		return err
	})
	late, err := OpenDir(ctx, watched, ws, WithMappedStatCache())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	dirs := make(chan int, 1)
	go func() { dirs <- late.loadCache(ctx).NumDirs() }()
	<-missed
	if err := st.WriteFile(ctx, name, good); err != nil {
		t.Fatal(err)
	}
	if err := u.Unlock(); err != nil {
		t.Fatal(err)
	}
	if n := <-dirs; n == 0 {
		t.Fatal("a reader that found no stat cache while its writer held the lock went on without one")
	}

	// A mapped copy that does not decode is dropped, and read again once.
	if err := st.WriteFile(ctx, name, good[:len(good)-9]); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cut, err := OpenDir(ctx, st, ws, WithMappedStatCache(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Close()
	if n := cut.loadCache(ctx).NumDirs(); n != 0 || !strings.Contains(logs.String(), "damaged") {
		t.Fatalf("a cut stat cache gave %d directories, logged %q", n, logs.String())
	}
	if res, err := cut.Diff(ctx, "second"); err != nil || len(res.Files) != 0 {
		t.Fatalf("Diff without a stat cache = %+v, %v; want no change", res, err)
	}
}
