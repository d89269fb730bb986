package checkpoint

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// countingWS records what a Workspace is asked to do.
type countingWS struct {
	Workspace
	mu        sync.Mutex
	reads     []string
	mutations []string
	dirReads  []string
}

func (c *countingWS) note(list *[]string, s string) {
	c.mu.Lock()
	*list = append(*list, s)
	c.mu.Unlock()
}

func (c *countingWS) reset() {
	c.mu.Lock()
	c.reads, c.mutations, c.dirReads = nil, nil, nil
	c.mu.Unlock()
}

func (c *countingWS) readFile(name string, limit int64, buf []byte) ([]byte, error) {
	c.note(&c.reads, name)
	return c.Workspace.readFile(name, limit, buf)
}

func (c *countingWS) mkdir(name string, perm fs.FileMode) error {
	c.note(&c.mutations, "mkdir "+name)
	return c.Workspace.mkdir(name, perm)
}

func (c *countingWS) remove(name string) error {
	c.note(&c.mutations, "remove "+name)
	return c.Workspace.remove(name)
}

func (c *countingWS) symlink(target, name string) error {
	c.note(&c.mutations, "symlink "+name)
	return c.Workspace.symlink(target, name)
}

func (c *countingWS) rename(from, to string) error {
	c.note(&c.mutations, "rename "+to)
	return c.Workspace.rename(from, to)
}

func (c *countingWS) writeTemp(name string, src io.Reader, perm fs.FileMode, sync bool) (string, error) {
	c.note(&c.mutations, "write "+name)
	return c.Workspace.writeTemp(name, src, perm, sync)
}

func (c *countingWS) chmod(name string, perm fs.FileMode) error {
	c.note(&c.mutations, "chmod "+name)
	return c.Workspace.chmod(name, perm)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// memEnv is a Manager on an afero memory workspace and a mem store.
type memEnv struct {
	t   *testing.T
	ctx context.Context
	fs  afero.Fs
	ws  *countingWS
	clk *clock
	m   *Manager
}

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 500_000_000, time.UTC)

func newMemEnv(t *testing.T, opts ...Option) *memEnv {
	t.Helper()
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	if err := fsys.MkdirAll("/ws", 0o755); err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	blobs, err := cas.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	ws := &countingWS{Workspace: FS(fsys, "/ws")}
	clk := &clock{t: t0}
	m, err := newManager(st, casBlobs{blobs}, ws, append([]Option{WithClock(clk.now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &memEnv{t: t, ctx: ctx, fs: fsys, ws: ws, clk: clk, m: m}
}

// write writes a file with an exact mtime.
func (e *memEnv) write(p, content string, mtime time.Time) {
	e.t.Helper()
	full := "/ws/" + p
	if err := e.fs.MkdirAll(parentDir(full), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := afero.WriteFile(e.fs, full, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := e.fs.Chtimes(full, mtime, mtime); err != nil {
		e.t.Fatal(err)
	}
}

func (e *memEnv) read(p string) string {
	e.t.Helper()
	b, err := afero.ReadFile(e.fs, "/ws/"+p)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func parentDir(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func (e *memEnv) digestOf(man *Manifest, p string) string {
	e.t.Helper()
	en := man.Find(p)
	if en == nil {
		e.t.Fatalf("%s not in the manifest", p)
	}
	return en.Digest
}

func (c *countingWS) readDir(dir string) ([]dirEntry, error) {
	c.note(&c.dirReads, dir)
	return c.Workspace.readDir(dir)
}

// fullCache is c with its maps filled in (statcache.Cache.Full).
func fullCache(c *statcache.Cache) *statcache.Cache {
	c.Full()
	return c
}

// writeAged writes content to root/p on the OS, making its parents, with
// both times set to at: a file as old as a checkout's, never racy.
func writeAged(tb testing.TB, root, p string, content []byte, at time.Time) {
	tb.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(full, content, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(full, at, at); err != nil {
		tb.Fatal(err)
	}
}
