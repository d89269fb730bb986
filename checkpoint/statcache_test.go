package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
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
	if len(got.allEntries()) != 100 {
		t.Fatalf("%d entries back", len(got.allEntries()))
	}
	same := func(ac *statCache, a cacheEntry, bc *statCache, b cacheEntry) bool {
		return a.st == b.st && ac.refsOf(a) == bc.refsOf(b) && a.verified == b.verified
	}
	for p, e := range c.allEntries() {
		if g, _ := got.entry(p); !same(got, g, c, e) {
			t.Fatalf("%s: %+v, want %+v", p, got.refsOf(g), c.refsOf(e))
		}
	}
	// Entries read back keep their refs as read through another round.
	again, err := decodeStatCache(got.encode())
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range c.allEntries() {
		if g, _ := again.entry(p); !same(again, g, c, e) {
			t.Fatalf("%s after two rounds: %+v, want %+v", p, again.refsOf(g), c.refsOf(e))
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
			e, _ := c.entry(fmt.Sprintf("f%d", i))
			if got, want := c.refsOf(e).ref, sumRef([]byte{byte(i), byte(round), byte(round >> 8)}); got != want {
				t.Fatalf("round %d, f%d: %s, want %s", round, i, got, want)
			}
		}
	}
	if len(c.added) > addedMax {
		t.Fatalf("added holds %d bytes, over %d", len(c.added), addedMax)
	}
}

// allEntries returns every entry by path.
func (c *statCache) allEntries() map[string]cacheEntry {
	out := map[string]cacheEntry{}
	for d, r := range c.dirs {
		for i, e := range r.ents {
			if e.n > 0 {
				p := r.names[i]
				if d != "." {
					p = d + "/" + p
				}
				out[p] = e
			}
		}
	}
	return out
}

// A record keeps its listing only while it holds the directory's names: a
// name put that it lacked unlists it, one it has does not.
func TestPutUnlists(t *testing.T) {
	c := newStatCache()
	const v = 1e12 // long after every mtime: nothing is racy
	c.relist(map[string]dirListing{"d": {st: fileStat{mode: fs.ModeDir | 0o755, mtime: 5}, names: []string{"a", "c"}}}, v)
	st := fileStat{mode: 0o644, size: 1, mtime: 1}
	c.put("d/a", st, &Entry{Digest: sumRef([]byte("a"))}, v)
	if r, ok := c.listing("d", fileStat{mode: fs.ModeDir | 0o755, mtime: 5}, time.Nanosecond); !ok || len(r.names) != 2 {
		t.Fatal("a put of a listed name unlisted the directory")
	}
	c.put("d/b", st, &Entry{Digest: sumRef([]byte("b"))}, v)
	if _, ok := c.listing("d", fileStat{mode: fs.ModeDir | 0o755, mtime: 5}, time.Nanosecond); ok {
		t.Fatal("a listing that lacks a name put is still trusted")
	}
	for p, want := range map[string]string{"d/a": "a", "d/b": "b"} {
		if e, ok := c.entry(p); !ok || c.refsOf(e).ref != sumRef([]byte(want)) {
			t.Fatalf("%s: entry %v %v", p, ok, c.refsOf(e))
		}
	}
	if _, ok := c.entry("d/c"); ok {
		t.Fatal("a name of the listing without an entry has one")
	}
	// Written and read back, the record is still unlisted, names sorted.
	got, err := decodeStatCache(c.encode())
	if err != nil {
		t.Fatal(err)
	}
	r := got.dirs["d"]
	if r.listed || !slices.Equal(r.names, []string{"a", "b", "c"}) {
		t.Fatalf("read back: listed %v, names %v", r.listed, r.names)
	}
}

// relist keeps the entries the snapshot verified, under the walk's
// listings, and drops the rest with the directories it did not read.
func TestRelist(t *testing.T) {
	c := newStatCache()
	st := fileStat{mode: 0o644, size: 1, mtime: 1}
	for _, p := range []string{"d/kept", "d/stale", "gone/x", "d/sub/y"} {
		v := int64(7e12)
		if p == "d/stale" {
			v = 3e12
		}
		c.put(p, st, &Entry{Digest: sumRef([]byte(p))}, v)
	}
	c.relist(map[string]dirListing{
		"d":     {st: fileStat{mode: fs.ModeDir, mtime: 9}, names: []string{"kept", "new", "stale", "sub"}},
		"d/sub": {st: fileStat{mode: fs.ModeDir, mtime: 9}, names: []string{"y"}},
	}, 7e12)
	if len(c.dirs) != 2 {
		t.Fatalf("%d records, want the 2 walked", len(c.dirs))
	}
	for p, want := range map[string]bool{"d/kept": true, "d/sub/y": true, "d/stale": false, "d/new": false, "gone/x": false} {
		if _, ok := c.entry(p); ok != want {
			t.Errorf("%s: entry %v, want %v", p, ok, want)
		}
	}
	if r, ok := c.listing("d", fileStat{mode: fs.ModeDir, mtime: 9}, time.Nanosecond); !ok || !slices.Equal(r.names, []string{"kept", "new", "stale", "sub"}) {
		t.Fatal("the walk's listing is not the record's")
	}
}

// Records whose names are out of order, or that hold more entries than
// the refs written, are damage.
func TestDecodeDirsChecks(t *testing.T) {
	c := newStatCache()
	c.put("d/a", fileStat{size: 1}, &Entry{Digest: sumRef([]byte("a"))}, 1)
	c.put("d/b", fileStat{size: 2}, &Entry{Digest: sumRef([]byte("b"))}, 1)
	if _, err := decodeStatCache(c.encode()); err != nil {
		t.Fatal(err)
	}
	r := c.dirs["d"]
	r.names[0], r.names[1] = r.names[1], r.names[0]
	if _, err := decodeStatCache(c.encode()); !errors.Is(err, errBadCache) {
		t.Fatalf("unsorted names: %v", err)
	}
	r.names[0], r.names[1] = r.names[1], r.names[0]
	// Two entries in the first block, the refs of one in the second.
	head := c.encodeHead(1)
	r.ents[1].n = 0
	if _, err := decodeStatCache(c.encodeTail(head)); !errors.Is(err, errBadCache) {
		t.Fatalf("refs of fewer entries than the directories hold: %v", err)
	}
}

// FuzzDecodeStatCache: no input panics the decoder, and a cache it accepts
// can be looked up and written again.
func FuzzDecodeStatCache(f *testing.F) {
	c := newStatCache()
	for i := range 20 {
		c.put(fmt.Sprintf("d%d/f%d", i%3, i), fileStat{mode: 0o644, size: int64(i), mtime: 1e9}, &Entry{Digest: sumRef([]byte{byte(i)})}, 99)
	}
	c.relist(map[string]dirListing{"d0": {st: fileStat{mode: fs.ModeDir, mtime: 3}, names: []string{"f0", "f3", "x"}}}, 99)
	f.Add(c.encode())
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeStatCache(data)
		if err != nil {
			if !errors.Is(err, errBadCache) {
				t.Fatalf("error %v does not wrap errBadCache", err)
			}
			return
		}
		for d, r := range got.dirs {
			if len(r.names) != len(r.ents) {
				t.Fatalf("%s: %d names, %d entries", d, len(r.names), len(r.ents))
			}
			for i, n := range r.names {
				if r.ents[i].n > 0 {
					got.refsOf(r.ents[i])
				}
				if i := r.find(n); i < 0 {
					t.Fatalf("%s: %q not found", d, n)
				}
			}
		}
		if _, err := decodeStatCache(got.encode()); err != nil {
			t.Fatalf("written again: %v", err)
		}
	})
}

// A cache another version of trove wrote is told from damage: it is only
// rebuilt, without a warning.
func TestCacheVersion(t *testing.T) {
	for data, version := range map[string]bool{"trove-statcache-11\nold": true, "trove-statcache-99\n": true, "garbage": false, "": false} {
		_, err := decodeStatCache([]byte(data))
		if !errors.Is(err, errBadCache) || errors.Is(err, errCacheVersion) != version {
			t.Errorf("%q: %v", data, err)
		}
	}
}
