package checkpoint

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// fiftyFiles writes 50 files in 5 directories, an hour old, and
// snapshots them as "one".
func fiftyFiles(t *testing.T) *memEnv {
	t.Helper()
	e := newMemEnv(t)
	old := t0.Add(-time.Hour)
	for i := range 50 {
		e.write(fmt.Sprintf("d%d/f%d.txt", i%5, i), fmt.Sprintf("content %d\n", i), old)
	}
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestIncrementalReadsOnlyChanged: the second snapshot of a tree reads only
// the files whose stat changed.
func TestIncrementalReadsOnlyChanged(t *testing.T) {
	e := fiftyFiles(t)
	if len(e.ws.reads) != 50 {
		t.Fatalf("first snapshot read %d files, want 50", len(e.ws.reads))
	}
	e.clk.set(t0.Add(time.Minute))
	changed := []string{"d0/f0.txt", "d1/f11.txt", "d4/f49.txt"}
	for _, p := range changed {
		e.write(p, "new "+p+"\n", t0.Add(30*time.Second))
	}
	e.ws.reset()
	man, err := e.m.CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	reads := slices.Sorted(slices.Values(e.ws.reads))
	if !slices.Equal(reads, changed) {
		t.Fatalf("second snapshot read %v, want only %v", reads, changed)
	}
	if got := e.digestOf(man, "d0/f0.txt"); got != sumRef([]byte("new d0/f0.txt\n")) {
		t.Fatal("changed content not in the manifest")
	}
	// A fresh Manager on the same store reads the persisted cache.
	m2, err := newManager(e.m.store, e.m.blobs, e.ws, WithClock(e.clk.now))
	if err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(2 * time.Minute))
	e.ws.reset()
	if _, err := m2.CreateTree(e.ctx, "three"); err != nil {
		t.Fatal(err)
	}
	if len(e.ws.reads) != 0 {
		t.Fatalf("a snapshot of an unchanged tree read %v", e.ws.reads)
	}
}

// TestIncrementalProvesManyFiles: a snapshot of more files than
// storeFiles checks in one run (it splits the stat cache's proofs in two
// past 1,024) reads only the changed ones, in either half, and records the
// digest of every file.
func TestIncrementalProvesManyFiles(t *testing.T) {
	e := newMemEnv(t)
	old := t0.Add(-time.Hour)
	const n = 1500
	content := func(i int) string { return fmt.Sprintf("content %d\n", i) }
	for i := range n {
		e.write(fmt.Sprintf("d%02d/f%04d.txt", i%40, i), content(i), old)
	}
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	e.clk.set(t0.Add(time.Minute))
	changed := map[int]bool{3: true, 700: true, 1499: true}
	var paths []string
	for i := range changed {
		p := fmt.Sprintf("d%02d/f%04d.txt", i%40, i)
		paths = append(paths, p)
		e.write(p, "new "+p+"\n", t0.Add(30*time.Second))
	}
	e.ws.reset()
	man, err := e.m.CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	if reads := slices.Sorted(slices.Values(e.ws.reads)); !slices.Equal(reads, paths) {
		t.Fatalf("second snapshot read %v, want only %v", reads, paths)
	}
	for i := range n {
		p := fmt.Sprintf("d%02d/f%04d.txt", i%40, i)
		want := sumRef([]byte(content(i)))
		if changed[i] {
			want = sumRef([]byte("new " + p + "\n"))
		}
		if got := e.digestOf(man, p); got != want {
			t.Fatalf("%s: digest %s, want %s", p, got, want)
		}
	}
}

// TestRacyFileRehashed: a file rewritten with the same size and the same
// mtime as the previous snapshot saw, within that snapshot's timestamp
// granularity, is re-hashed, so the change is not missed.
func TestRacyFileRehashed(t *testing.T) {
	e := newMemEnv(t)
	// The file is written 20ms before the snapshot starts: racy.
	mtime := t0.Add(-20 * time.Millisecond)
	e.write("a.txt", "AAAA", mtime)
	e.clk.set(t0)
	one, err := e.m.CreateTree(e.ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	// Rewritten in the same tick: same size, same mtime, stat identical.
	e.write("a.txt", "BBBB", mtime)
	e.clk.set(t0.Add(time.Minute))
	e.ws.reset()
	two, err := e.m.CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.ws.reads, []string{"a.txt"}) {
		t.Fatalf("racy file not re-read: reads %v", e.ws.reads)
	}
	if e.digestOf(one, "a.txt") == e.digestOf(two, "a.txt") || e.digestOf(two, "a.txt") != sumRef([]byte("BBBB")) {
		t.Fatal("the change within one timestamp tick was missed")
	}
	// Verified a minute later, the entry is no longer racy: not read again.
	e.clk.set(t0.Add(2 * time.Minute))
	e.ws.reset()
	if _, err := e.m.CreateTree(e.ctx, "three"); err != nil {
		t.Fatal(err)
	}
	if len(e.ws.reads) != 0 {
		t.Fatalf("a settled file was re-read: %v", e.ws.reads)
	}
}

// TestDamagedCacheOnlyCostsTime: a corrupt stat cache is ignored.
func TestDamagedCacheOnlyCostsTime(t *testing.T) {
	e := newMemEnv(t)
	e.write("a.txt", "a", t0.Add(-time.Hour))
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.store.WriteFile(e.ctx, e.m.cfg.cacheName, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "b", t0.Add(-time.Hour)) // same size, same mtime
	m2, err := newManager(e.m.store, e.m.blobs, e.ws, WithClock(e.clk.now))
	if err != nil {
		t.Fatal(err)
	}
	man, err := m2.CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if e.digestOf(man, "a.txt") != sumRef([]byte("b")) {
		t.Fatal("with a damaged cache the file must be re-hashed")
	}
}

// TestSidecarSnapshots: a snapshot after a few edits writes the stat
// cache's sidecar, not the cache; a fresh Manager reads both and its
// snapshot of the same tree reads no file and makes the same tree, and
// a directory removed since the cache was written stays removed.
func TestSidecarSnapshots(t *testing.T) {
	e := fiftyFiles(t)
	whole, err := e.m.store.ReadFile(e.ctx, e.m.cfg.cacheName)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(at time.Duration) *Manager {
		t.Helper()
		m, err := newManager(e.m.store, e.m.blobs, e.ws, WithClock(e.clk.now))
		if err != nil {
			t.Fatal(err)
		}
		e.clk.set(t0.Add(at))
		e.ws.reset()
		return m
	}
	e.write("d1/f1.txt", "edited\n", t0.Add(30*time.Second))
	two, err := fresh(time.Minute).CreateTree(e.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.store.Stat(e.ctx, e.m.sideName()); err != nil {
		t.Fatalf("no sidecar: %v", err)
	}
	if now, _ := e.m.store.ReadFile(e.ctx, e.m.cfg.cacheName); !slices.Equal(now, whole) {
		t.Fatal("the cache was written again")
	}
	m := fresh(2 * time.Minute)
	c := m.loadCache(e.ctx)
	if ce, ok := c.Entry("d1/f1.txt"); c.Last.ID != "two" || !ok || !c.ByLast(ce) || ce.St.Mtime != t0.Add(30*time.Second).UnixNano() {
		t.Fatalf("over the sidecar: last %q, d1/f1.txt %+v %v by last %v", c.Last.ID, ce, ok, c.ByLast(ce))
	}
	three, err := m.CreateTree(e.ctx, "three")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.ws.reads) != 0 || three.Tree != two.Tree {
		t.Fatalf("over the sidecar: read %v, tree %s, want none and %s", e.ws.reads, three.Tree, two.Tree)
	}
	for i := 4; i < 50; i += 5 {
		if err := e.fs.Remove(fmt.Sprintf("/ws/d4/f%d.txt", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.fs.Remove("/ws/d4"); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh(3*time.Minute).CreateTree(e.ctx, "four"); err != nil {
		t.Fatal(err)
	}
	m = fresh(4 * time.Minute)
	five, err := m.CreateTree(e.ctx, "five")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.ws.reads) != 0 || five.Find("d4/f4.txt") != nil {
		t.Fatalf("after a removal: read %v", e.ws.reads)
	}
	if _, ok := m.cache.Entry("d4/f4.txt"); ok || m.cache.TreeRef("d4") != "" {
		t.Fatal("the removed directory is in the cache")
	}
}
