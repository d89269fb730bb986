package checkpoint

import (
	"errors"
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
