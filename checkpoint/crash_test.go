package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
)

var errCrashed = errors.New("crashed")

// crashEnv is a workspace on an afero memory Fs and a mem store that
// crashes; each Manager opened on it is a process.
type crashEnv struct {
	t   *testing.T
	fs  afero.Fs
	st  *mem.Storage
	clk *clock
}

func (e *crashEnv) manager(st backend.Storage) (*Manager, *cas.Store) {
	e.t.Helper()
	blobs, err := cas.Open(e.t.Context(), st)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := newManager(st, casBlobs{blobs}, FS(e.fs, "/ws"), WithClock(e.clk.now))
	if err != nil {
		e.t.Fatal(err)
	}
	return m, blobs
}

// edit writes files, an hour before the clock: old enough that the stat
// cache vouches for them afterwards.
func (e *crashEnv) edit(files map[string]string) {
	e.t.Helper()
	mtime := e.clk.now().Add(-time.Hour)
	for p, c := range files {
		full := "/ws/" + p
		if err := e.fs.MkdirAll(parentDir(full), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := afero.WriteFile(e.fs, full, []byte(c), 0o644); err != nil {
			e.t.Fatal(err)
		}
		if err := e.fs.Chtimes(full, mtime, mtime); err != nil {
			e.t.Fatal(err)
		}
	}
}

// holds rewinds to id and checks the workspace holds want, byte for byte.
func (e *crashEnv) holds(m *Manager, id string, want map[string]string) {
	e.t.Helper()
	if _, err := m.Rewind(e.t.Context(), id, false); err != nil {
		e.t.Fatalf("rewind to %s: %v", id, err)
	}
	for p, c := range want {
		got, err := afero.ReadFile(e.fs, "/ws/"+p)
		if err != nil || string(got) != c {
			e.t.Fatalf("after the rewind to %s, %s = %q, %v; want %q", id, p, got, err, c)
		}
	}
}

// A crash before, or right after, each change a tree snapshot makes (the
// pack written in place and synced, its index staged and put at its name,
// the manifest staged and put at its name) loses no acknowledged
// checkpoint, and the next snapshot, trusting the stat cache the crashed
// one wrote (the kernel may have written it back), stores every byte: a
// manifest is at its name only once the blobs it names are durable and
// indexed, so only then is the cache trusted without a look at the store.
// The changes run concurrently, so each point is tried three times.
func TestCreateCrashAtEachStep(t *testing.T) {
	before, after := map[string]string{}, map[string]string{}
	for i := range 24 {
		p := fmt.Sprintf("d%d/f%d.txt", i%4, i)
		before[p] = fmt.Sprintf("file %d, first version\n", i)
		after[p] = before[p]
		if i%5 == 0 {
			after[p] = fmt.Sprintf("file %d, edited before the crash\n", i)
		}
	}
	for range 3 {
		for _, done := range []bool{false, true} {
			for k := 1; crashCreate(t, k, done, before, after); k++ {
				if k > 100 {
					t.Fatal("create never finished")
				}
			}
		}
	}
}

// crashCreate snapshots before, then after with a crash at its kth change
// (once it is done, with done), and checks what is left. It reports
// whether the crash came before the create finished.
func crashCreate(t *testing.T, k int, done bool, before, after map[string]string) bool {
	t.Helper()
	ctx := t.Context()
	e := &crashEnv{t: t, fs: afero.NewMemMapFs(), st: mem.New(), clk: &clock{t: t0}}
	e.edit(before)
	first, _ := e.manager(e.st)
	if _, err := first.CreateTree(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Minute))
	e.edit(after)
	cacheName := first.cfg.cacheName
	var mu sync.Mutex
	changes, crashed := 0, false
	dying := intercept.New(e.st, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
		if c.Name == cacheName || c.Name == first.sideName() {
			return next(ctx) // written whole: the worst case below
		}
		switch c.Op {
		case "WriteFile", "CreateFile", "OpenWriter", "Writer.Write", "Writer.Sync", "Writer.Close", "Rename", "Unlink", "WriteFrom":
		default:
			return next(ctx)
		}
		mu.Lock()
		defer mu.Unlock()
		if crashed {
			return errCrashed
		}
		if changes++; changes < k {
			return next(ctx)
		}
		crashed = true
		if done {
			_ = next(ctx) // done, but the process dies before it learns so
		}
		return errCrashed
	})
	m, _ := e.manager(dying)
	_, err := m.CreateTree(ctx, "b")
	if !crashed {
		if err != nil {
			t.Fatalf("create without a crash: %v", err)
		}
		if k < 6 {
			t.Fatalf("create made only %d changes", k-1)
		}
		return false
	}
	if err == nil {
		t.Fatalf("crash at change %d (done %v): create reported success", k, done)
	}
	// The worst case for dedup: the stat cache the crashed process wrote
	// (unsynced; whole or its sidecar) survives, whatever else did not.
	kept := map[string][]byte{}
	for _, name := range []string{cacheName, first.sideName()} {
		if data, err := e.st.ReadFile(ctx, name); err == nil {
			kept[name] = data
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if _, ok := kept[cacheName]; !ok {
		t.Fatal("no stat cache")
	}
	e.st.Crash()
	for name, data := range kept {
		if err := e.st.WriteFile(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}

	e.clk.set(t0.Add(2 * time.Minute))
	next, blobs := e.manager(e.st)
	if _, err := next.CreateTree(ctx, "c"); err != nil {
		t.Fatalf("crash at change %d (done %v): the next create: %v", k, done, err)
	}
	for ref, err := range blobs.Verify(ctx) {
		if err != nil {
			t.Fatalf("crash at change %d (done %v): verify %v: %v", k, done, ref, err)
		}
	}
	e.holds(next, "a", before)
	e.holds(next, "c", after)
	if _, err := next.Load(ctx, "b"); err == nil {
		e.holds(next, "b", after)
	} else if !errors.Is(err, ErrNotFound) {
		t.Fatalf("crash at change %d (done %v): load b: %v", k, done, err)
	}
	return true
}
