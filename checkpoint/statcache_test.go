package checkpoint

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestStatCacheRoundTrip(t *testing.T) {
	c := newStatCache()
	for i := range 100 {
		c.put(fmt.Sprintf("dir/f%d", i), fileStat{mode: 0o644, size: int64(i), mtime: int64(i) * 1e9, ctime: 7, ino: uint64(i), dev: 3}, &Entry{Digest: sumRef([]byte{byte(i)})}, 99)
	}
	data := c.encode()
	got, err := decodeStatCache(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.entries) != 100 {
		t.Fatalf("%d entries back", len(got.entries))
	}
	same := func(ac *statCache, a cacheEntry, bc *statCache, b cacheEntry) bool {
		return a.st == b.st && ac.refsOf(a) == bc.refsOf(b) && a.verified == b.verified
	}
	for p, e := range c.entries {
		if !same(got, got.entries[p], c, e) {
			t.Fatalf("%s: %+v, want %+v", p, got.refsOf(got.entries[p]), c.refsOf(e))
		}
	}
	// Entries read back keep their refs as read through another round.
	again, err := decodeStatCache(got.encode())
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range c.entries {
		if !same(again, again.entries[p], c, e) {
			t.Fatalf("%s after two rounds: %+v, want %+v", p, again.refsOf(again.entries[p]), c.refsOf(e))
		}
	}
	for _, i := range []int{0, len(cacheMagic) + 3, len(data) / 2, len(data) - 1} {
		bad := slices.Clone(data)
		bad[i] ^= 1
		if _, err := decodeStatCache(bad); err == nil {
			t.Errorf("a flipped byte at %d was not detected", i)
		}
	}
	for _, n := range []int{0, 5, len(data) - 1} {
		if _, err := decodeStatCache(data[:n]); err == nil {
			t.Errorf("a cache cut at %d bytes was accepted", n)
		}
	}
}

func TestRacyRule(t *testing.T) {
	verified := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	cases := []struct {
		name  string
		mtime int64
		ctime int64
		want  bool
	}{
		{"long before", verified - int64(time.Hour), 0, false},
		{"same instant", verified, 0, true},
		{"after", verified + 1, 0, true},
		{"within the fine window", verified - int64(50*time.Millisecond) + 1, 0, true},
		{"just outside the fine window", verified - int64(150*time.Millisecond) + 1, 0, false},
		{"whole second, 1s before", verified - int64(time.Second), 0, true}, // coarse clock: 2s window
		{"whole second, 3s before", verified - int64(3*time.Second), 0, false},
		{"old mtime, fresh ctime", verified - int64(time.Hour) + 7, verified - 1, true},
	}
	for _, c := range cases {
		e := cacheEntry{st: fileStat{mtime: c.mtime, ctime: c.ctime}, verified: verified}
		if got := racy(e, 0); got != c.want {
			t.Errorf("%s: racy = %v, want %v", c.name, got, c.want)
		}
	}
	if !racy(cacheEntry{st: fileStat{mtime: verified - int64(time.Minute)}, verified: verified}, 2*time.Minute) {
		t.Error("WithRacyWindow is not honoured")
	}
}

// TestIncrementalReadsOnlyChanged: the second snapshot of a tree reads only
// the files whose stat changed.
func TestIncrementalReadsOnlyChanged(t *testing.T) {
	e := newMemEnv(t)
	old := t0.Add(-time.Hour)
	for i := range 50 {
		e.write(fmt.Sprintf("d%d/f%d.txt", i%5, i), fmt.Sprintf("content %d\n", i), old)
	}
	if _, err := e.m.CreateTree(e.ctx, "one"); err != nil {
		t.Fatal(err)
	}
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

// The entries are written sorted by path whatever order the caller offers:
// a right one is taken as is, any other is sorted afresh.
func TestEncodeHeadOrder(t *testing.T) {
	c := newStatCache()
	var paths []string
	for i := range 50 {
		p := fmt.Sprintf("d%d/f%02d", i%3, i)
		paths = append(paths, p)
		c.put(p, fileStat{mode: 0o644, size: int64(i), mtime: 1e9}, &Entry{Digest: sumRef([]byte{byte(i)})}, 99)
	}
	want := c.encodeHead(99, nil).entries
	sorted := slices.Sorted(slices.Values(paths))
	swapped := slices.Clone(sorted)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	dup := slices.Clone(sorted)
	dup[5] = dup[4]
	extra := append(slices.Clone(sorted[1:]), "zz/other")
	for name, order := range map[string][]string{"sorted": sorted, "unsorted": swapped, "duplicate": dup, "missing": sorted[1:], "extra": extra, "written order": paths} {
		if got := c.encodeHead(99, order).entries; !slices.Equal(got, want) {
			t.Errorf("%s: entries block differs from the sorted one", name)
		}
	}
}

// A cache a long session keeps putting into drops the refs nothing uses
// any more, and keeps the rest right.
func TestCompactAdded(t *testing.T) {
	c := newStatCache()
	compacted := false
	for round := 0; !compacted; round++ {
		for i := range 100 {
			c.put(fmt.Sprintf("f%d", i), fileStat{size: int64(round)}, &Entry{Digest: sumRef([]byte{byte(i), byte(round), byte(round >> 8)})}, 1)
		}
		before := len(c.added)
		c.compactAdded()
		compacted = len(c.added) < before
		if round > 1000 {
			t.Fatal("never compacted")
		}
		for i := range 100 {
			if got, want := c.refsOf(c.entries[fmt.Sprintf("f%d", i)]).ref, sumRef([]byte{byte(i), byte(round), byte(round >> 8)}); got != want {
				t.Fatalf("round %d, f%d: %s, want %s", round, i, got, want)
			}
		}
	}
	if len(c.added) > addedMax {
		t.Fatalf("added holds %d bytes, over %d", len(c.added), addedMax)
	}
}
