package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/cas"
)

// A plan loads the content of files likely to differ while it walks (see
// likely); one that fails to load must still fail the plan, naming the
// file, not be taken as empty.
func TestLoadedAheadCorrupt(t *testing.T) {
	e := newMemEnv(t)
	e.write("a.txt", "one\ntwo\n", t0.Add(-time.Hour))
	e.write("b.txt", "b\n", t0.Add(-time.Hour))
	cp0, err := e.m.CreateTree(e.ctx, "cp0")
	if err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Hour))
	e.write("a.txt", "one\nthree\n", t0.Add(time.Minute))
	if _, err := e.m.CreateTree(e.ctx, "cp1"); err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(2 * time.Hour))
	res, err := e.m.Rewind(e.ctx, "cp0", true)
	if err != nil || strings.Join(res.FilesChanged, ",") != "a.txt" || res.Insertions != 1 || res.Deletions != 1 {
		t.Fatalf("dry run = %+v, %v; want a.txt, 1 line in, 1 out", res, err)
	}
	ref, err := cas.ParseRef(e.digestOf(cp0, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.m.blobs.(casBlobs).s.(*cas.Store).Delete(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		res, err := e.m.Rewind(e.ctx, "cp0", dry)
		if !errors.Is(err, ErrCorrupt) || res.CanRewind || !strings.Contains(res.Error, "a.txt") {
			t.Fatalf("Rewind(dry=%v) with a.txt's blob gone = %+v, %v; want ErrCorrupt naming a.txt", dry, res, err)
		}
	}
	if _, err := e.m.Diff(e.ctx, "cp0"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Diff with a.txt's blob gone: %v, want ErrCorrupt", err)
	}
	if got := e.read("a.txt"); got != "one\nthree\n" {
		t.Fatalf("a.txt = %q after refused rewinds", got)
	}
}

// A plan loads ahead the checkpoint's content of the files whose last
// snapshot differs from it, but not of a file changed since that
// snapshot (here put back to the checkpoint's content, as a rewind
// leaves it): that load was a blob decoded for nothing. A file gone
// since is still loaded: a rewind recreates it.
func TestLikelySkipsFilesChangedSince(t *testing.T) {
	e := newMemEnv(t)
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		e.write(p, p+" 0\n", t0.Add(-time.Hour))
	}
	cp0, err := e.m.CreateTree(e.ctx, "cp0")
	if err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Hour))
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		e.write(p, p+" 1\n", t0.Add(time.Minute))
	}
	if _, err := e.m.CreateTree(e.ctx, "cp1"); err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(2 * time.Hour))
	e.write("a.txt", "a.txt 0\n", t0.Add(90*time.Minute))
	if err := e.fs.Remove("/ws/c.txt"); err != nil {
		t.Fatal(err)
	}
	man, _, err := e.m.loadForPlan(e.ctx, "cp0")
	if err != nil {
		t.Fatal(err)
	}
	cache := e.m.loadCache(e.ctx)
	w := newPrewriter(e.ctx, e.m, true)
	w.likely(man, cache, newTreeFetch(e.m.blobs, cache.Tree))
	w.looking.Wait()
	w.wg.Wait()
	for p, want := range map[string]bool{"a.txt": false, "b.txt": true, "c.txt": true} {
		if _, got := w.ahead[e.digestOf(cp0, p)]; got != want {
			t.Errorf("%s loaded ahead: %v, want %v", p, got, want)
		}
	}
	res, err := e.m.Rewind(e.ctx, "cp0", true)
	if err != nil || strings.Join(res.FilesChanged, ",") != "b.txt,c.txt" {
		t.Fatalf("dry run = %+v, %v; want b.txt and c.txt changed", res, err)
	}
}

// A workspace file whose stat the stat cache cannot vouch for (racy: its
// snapshot came within its timestamp's tick) is compared by its bytes
// with the checkpoint's content that the plan loaded ahead, not hashed:
// the same report either way, whether the file holds that content (put
// back unseen by stat), other content, or that content with another
// mode.
func TestRacyFileComparedWithContentLoadedAhead(t *testing.T) {
	e := newMemEnv(t)
	for _, p := range []string{"same.txt", "other.txt", "mode.txt"} {
		e.write(p, p+" zero\n", t0.Add(-time.Hour))
	}
	if _, err := e.m.CreateTree(e.ctx, "cp0"); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Hour)
	e.clk.set(at)
	for _, p := range []string{"same.txt", "other.txt", "mode.txt"} {
		e.write(p, p+" one!\n", at)
	}
	if _, err := e.m.CreateTree(e.ctx, "cp1"); err != nil {
		t.Fatal(err)
	}
	// Within the tick: the stat cache keeps cp1's stats, racy.
	e.write("same.txt", "same.txt zero\n", at)
	e.write("mode.txt", "mode.txt zero\n", at)
	if err := e.fs.Chmod("/ws/mode.txt", 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := e.m.Rewind(e.ctx, "cp0", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.FilesChanged, ","); got != "mode.txt,other.txt" || res.Insertions != 1 || res.Deletions != 1 {
		t.Fatalf("dry run = %+v; want mode.txt (its mode) and other.txt (a line each way)", res)
	}
	d, err := e.m.Diff(e.ctx, "cp0")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || d.Files[0].Status != "mode" || d.Files[1].Status != "modified" {
		t.Fatalf("diff = %+v; want mode.txt mode, other.txt modified", d.Files)
	}
	if _, err := e.m.Rewind(e.ctx, "cp0", false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"same.txt", "other.txt", "mode.txt"} {
		if got := e.read(p); got != p+" zero\n" {
			t.Errorf("%s = %q after the rewind", p, got)
		}
	}
}

// changedSince on a directory workspace (one stat by path from its root):
// a file as stated is not changed, one with another stat is, one gone is
// not (a rewind recreates it), at the root or below.
func TestChangedSinceOnDir(t *testing.T) {
	m, root := newDirManager(t)
	ws := m.ws
	w := newPrewriter(t.Context(), m, true)
	for _, p := range []string{"top.txt", "sub/dir/x.txt"} {
		writeAged(t, root, p, []byte("one\n"), time.Now().Add(-time.Hour))
		was, err := ws.lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if w.changedSince(p, was) {
			t.Errorf("%s: changed since its own stat", p)
		}
		writeAged(t, root, p, []byte("two\n"), time.Now().Add(-time.Minute))
		if !w.changedSince(p, was) {
			t.Errorf("%s: not changed since it was rewritten", p)
		}
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
		if w.changedSince(p, was) {
			t.Errorf("%s: changed since, once gone", p)
		}
	}
}
