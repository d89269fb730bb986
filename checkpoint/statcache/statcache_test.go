package statcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// sumRef is the ref of data as cas writes it (sha256).
func sumRef(data []byte) string {
	h := sha256.Sum256(data)
	return "blob:sha256:" + hex.EncodeToString(h[:])
}

func TestStatCacheRoundTrip(t *testing.T) {
	c := New()
	for i := range 100 {
		c.Put(fmt.Sprintf("dir/f%d", i), Stat{Mode: 0o644, Size: int64(i), Mtime: int64(i) * 1e9, Ctime: 7, Ino: uint64(i), Dev: 3}, Refs{Ref: sumRef([]byte{byte(i)})}, 99)
	}
	data := c.Encode()
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.allEntries()) != 100 {
		t.Fatalf("%d entries back", len(got.allEntries()))
	}
	same := func(ac *Cache, a Entry, bc *Cache, b Entry) bool {
		return a.St == b.St && ac.RefsOf(a) == bc.RefsOf(b) && a.Verified == b.Verified
	}
	for p, e := range c.allEntries() {
		if g, _ := got.Entry(p); !same(got, g, c, e) {
			t.Fatalf("%s: %+v, want %+v", p, got.RefsOf(g), c.RefsOf(e))
		}
	}
	// Entries read back keep their refs as read through another round.
	again, err := Decode(got.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range c.allEntries() {
		if g, _ := again.Entry(p); !same(again, g, c, e) {
			t.Fatalf("%s after two rounds: %+v, want %+v", p, again.RefsOf(g), c.RefsOf(e))
		}
	}
	for _, i := range []int{0, len(cacheMagic) + 3, len(data) / 2, len(data) - 1} {
		bad := slices.Clone(data)
		bad[i] ^= 1
		if _, err := Decode(bad); err == nil {
			t.Errorf("a flipped byte at %d was not detected", i)
		}
	}
	for _, n := range []int{0, 5, len(data) - 1} {
		if _, err := Decode(data[:n]); err == nil {
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
		e := Entry{St: Stat{Mtime: c.mtime, Ctime: c.ctime}, Verified: verified}
		if got := racy(e, 0); got != c.want {
			t.Errorf("%s: racy = %v, want %v", c.name, got, c.want)
		}
	}
	if !racy(Entry{St: Stat{Mtime: verified - int64(time.Minute)}, Verified: verified}, 2*time.Minute) {
		t.Error("WithRacyWindow is not honoured")
	}
}

// A cache a long session keeps putting into drops the refs nothing uses
// any more, and keeps the rest right.
func TestCompactAdded(t *testing.T) {
	c := New()
	compacted := false
	for round := 0; !compacted; round++ {
		for i := range 100 {
			c.Put(fmt.Sprintf("f%d", i), Stat{Size: int64(round)}, Refs{Ref: sumRef([]byte{byte(i), byte(round), byte(round >> 8)})}, 1)
		}
		before := len(c.added)
		c.CompactAdded()
		compacted = len(c.added) < before
		if round > 1000 {
			t.Fatal("never compacted")
		}
		for i := range 100 {
			e, _ := c.Entry(fmt.Sprintf("f%d", i))
			if got, want := c.RefsOf(e).Ref, sumRef([]byte{byte(i), byte(round), byte(round >> 8)}); got != want {
				t.Fatalf("round %d, f%d: %s, want %s", round, i, got, want)
			}
		}
	}
	if len(c.added) > addedMax {
		t.Fatalf("added holds %d bytes, over %d", len(c.added), addedMax)
	}
}

// allEntries returns every entry by path.
func (c *Cache) allEntries() map[string]Entry {
	c.Full()
	out := map[string]Entry{}
	for d, r := range c.Dirs {
		for i, e := range r.Ents {
			if e.n > 0 {
				p := r.Names[i]
				if d != "." {
					p = d + "/" + p
				}
				out[p] = e
			}
		}
	}
	return out
}

// A record keeps its listing only while it holds the directory's Names: a
// name put that it lacked unlists it, one it has does not.
func TestPutUnlists(t *testing.T) {
	c := New()
	const v = 1e12 // long after every Mtime: nothing is racy
	c.Relist(map[string]Listing{"d": {St: Stat{Mode: fs.ModeDir | 0o755, Mtime: 5}, Names: []string{"a", "c"}}}, v)
	st := Stat{Mode: 0o644, Size: 1, Mtime: 1}
	c.Put("d/a", st, Refs{Ref: sumRef([]byte("a"))}, v)
	if r, ok := c.Listing("d", Stat{Mode: fs.ModeDir | 0o755, Mtime: 5}, time.Nanosecond); !ok || len(r.Names) != 2 {
		t.Fatal("a put of a listed name unlisted the directory")
	}
	c.Put("d/b", st, Refs{Ref: sumRef([]byte("b"))}, v)
	if _, ok := c.Listing("d", Stat{Mode: fs.ModeDir | 0o755, Mtime: 5}, time.Nanosecond); ok {
		t.Fatal("a listing that lacks a name put is still trusted")
	}
	for p, want := range map[string]string{"d/a": "a", "d/b": "b"} {
		if e, ok := c.Entry(p); !ok || c.RefsOf(e).Ref != sumRef([]byte(want)) {
			t.Fatalf("%s: entry %v %v", p, ok, c.RefsOf(e))
		}
	}
	if _, ok := c.Entry("d/c"); ok {
		t.Fatal("a name of the listing without an entry has one")
	}
	// Written and read back, the record is still unlisted, names sorted.
	got, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	r := got.dir("d")
	if r.Listed || !slices.Equal(r.Names, []string{"a", "b", "c"}) {
		t.Fatalf("read back: listed %v, names %v", r.Listed, r.Names)
	}
}

// relist keeps the entries the snapshot verified, under the walk's
// listings, and drops the rest with the directories it did not read.
func TestRelist(t *testing.T) {
	c := New()
	st := Stat{Mode: 0o644, Size: 1, Mtime: 1}
	for _, p := range []string{"d/kept", "d/stale", "gone/x", "d/sub/y"} {
		v := int64(7e12)
		if p == "d/stale" {
			v = 3e12
		}
		c.Put(p, st, Refs{Ref: sumRef([]byte(p))}, v)
	}
	c.Relist(map[string]Listing{
		"d":     {St: Stat{Mode: fs.ModeDir, Mtime: 9}, Names: []string{"kept", "new", "stale", "sub"}},
		"d/sub": {St: Stat{Mode: fs.ModeDir, Mtime: 9}, Names: []string{"y"}},
	}, 7e12)
	if len(c.Dirs) != 2 {
		t.Fatalf("%d records, want the 2 walked", len(c.Dirs))
	}
	for p, want := range map[string]bool{"d/kept": true, "d/sub/y": true, "d/stale": false, "d/new": false, "gone/x": false} {
		if _, ok := c.Entry(p); ok != want {
			t.Errorf("%s: entry %v, want %v", p, ok, want)
		}
	}
	if r, ok := c.Listing("d", Stat{Mode: fs.ModeDir, Mtime: 9}, time.Nanosecond); !ok || !slices.Equal(r.Names, []string{"kept", "new", "stale", "sub"}) {
		t.Fatal("the walk's listing is not the record's")
	}
}

// A relist whose listings have the records' names keeps the records in
// place: the entries the snapshot verified stay, the others go, and the
// records take the listings' stats; a directory the walk did not read
// goes too.
func TestRelistSameNames(t *testing.T) {
	c := New()
	st := Stat{Mode: 0o644, Size: 1, Mtime: 1}
	for _, p := range []string{"d/kept", "d/stale", "e/x", "gone/y"} {
		v := int64(7e12)
		if p == "d/stale" {
			v = 3e12
		}
		c.Put(p, st, Refs{Ref: sumRef([]byte(p))}, v)
	}
	dirSt := Stat{Mode: fs.ModeDir, Mtime: 9}
	listings := map[string]Listing{
		"d": {St: dirSt, Names: []string{"kept", "stale"}},
		"e": {St: dirSt, Names: []string{"x"}},
	}
	for _, withGone := range []bool{true, false} {
		if withGone {
			listings["gone"] = Listing{St: dirSt, Names: []string{"y"}}
		} else {
			delete(listings, "gone")
		}
		c.Relist(listings, 7e12)
		if len(c.Dirs) != len(listings) || c.Size() != len(listings)+1 {
			t.Fatalf("%d records of %d names, want %d of %d", len(c.Dirs), c.Size(), len(listings), len(listings)+1)
		}
		want := map[string]bool{"d/kept": true, "e/x": true, "d/stale": false, "gone/y": withGone}
		for p, w := range want {
			if _, ok := c.Entry(p); ok != w {
				t.Errorf("gone listed %v: %s: entry %v, want %v", withGone, p, ok, w)
			}
		}
		for d := range listings {
			if r, ok := c.Listing(d, dirSt, time.Nanosecond); !ok || r.Verified != 7e12 {
				t.Errorf("%s: the listing does not prove the record (verified %d)", d, r.Verified)
			}
		}
	}
	got, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := got.Entry("d/kept"); !ok || e.St != st || got.RefsOf(e).Ref != sumRef([]byte("d/kept")) {
		t.Fatalf("d/kept after a round trip: %+v %v", e, ok)
	}
}

// reCRC sets the checksums of data, a cache whose first block was
// changed in place, as a writer would have.
func reCRC(data []byte) []byte {
	data = slices.Clone(data)
	n := binary.LittleEndian.Uint64(data[len(cacheMagic):])
	head, tail := data[headAt:headAt+int(n)], data[headAt+int(n):]
	binary.LittleEndian.PutUint32(head[len(head)-4:], crc32.Checksum(head[:len(head)-4], castagnoli))
	binary.LittleEndian.PutUint32(tail[len(tail)-4:], crc32.Update(headSum(head), castagnoli, tail[:len(tail)-4]))
	return data
}

// A record whose names are out of order, or whose entry is malformed,
// though the checksums pass (a bug, not the disk), reads as missing: its
// directory is walked and hashed again, the others' records still serve.
func TestDamagedRecordMissing(t *testing.T) {
	c := New()
	c.Put("d/alpha", Stat{Size: 1}, Refs{Ref: sumRef([]byte("alpha"))}, 1)
	c.Put("d/b", Stat{Size: 2}, Refs{Ref: sumRef([]byte("b"))}, 1)
	c.Put("e/c", Stat{Size: 3}, Refs{Ref: sumRef([]byte("c"))}, 1)
	data := c.Encode()
	r := c.Dirs["d"]
	r.Names[0], r.Names[1] = r.Names[1], r.Names[0]
	unsorted := c.Encode()
	r.Names[0], r.Names[1] = r.Names[1], r.Names[0]
	// d/alpha's entry pointing past the block for its refs.
	e, _ := c.Entry("d/alpha")
	at := bytes.Index(data, appendEntryFixed(nil, e, 0)[:56])
	if at < 0 {
		t.Fatal("entry d/alpha not found in the file")
	}
	badRefs := slices.Clone(data)
	binary.LittleEndian.PutUint32(badRefs[at+56:], 1<<30)
	for name, data := range map[string][]byte{"unsorted names": unsorted, "refs past the block": reCRC(badRefs)} {
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := got.Entry("d/alpha"); ok {
			t.Errorf("%s: d/alpha found", name)
		}
		if _, ok := got.Entry("e/c"); !ok {
			t.Errorf("%s: e/c, in a sound record, not found", name)
		}
		got.Full()
		if _, ok := got.Dirs["d"]; ok || got.Dirs["e"] == nil {
			t.Errorf("%s: records after Full: %v", name, got.Dirs)
		}
	}
}

// FuzzDecodeStatCache: no input panics the decoder, and a cache it accepts
// can be looked up and written again.
func FuzzDecodeStatCache(f *testing.F) {
	c := New()
	for i := range 20 {
		c.Put(fmt.Sprintf("d%d/f%d", i%3, i), Stat{Mode: 0o644, Size: int64(i), Mtime: 1e9}, Refs{Ref: sumRef([]byte{byte(i)})}, 99)
	}
	c.Relist(map[string]Listing{"d0": {St: Stat{Mode: fs.ModeDir, Mtime: 3}, Names: []string{"f0", "f3", "x"}}}, 99)
	f.Add(c.Encode())
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error %v does not wrap ErrDamaged", err)
			}
			return
		}
		// Lazily, then whole.
		for _, p := range []string{"d0/f0", "d1/f1", "x"} {
			if e, ok := got.Entry(p); ok {
				got.RefsOf(e)
			}
		}
		got.TreeRef("d0")
		got.Tree(sumRef([]byte{0}))
		got.Full()
		for d, r := range got.Dirs {
			if len(r.Names) != len(r.Ents) {
				t.Fatalf("%s: %d names, %d entries", d, len(r.Names), len(r.Ents))
			}
			for i, n := range r.Names {
				if r.Ents[i].n > 0 {
					got.RefsOf(r.Ents[i])
				}
				if i := r.Find(n); i < 0 {
					t.Fatalf("%s: %q not found", d, n)
				}
			}
		}
		if _, err := Decode(got.Encode()); err != nil {
			t.Fatalf("written again: %v", err)
		}
	})
}

// A cache another version of trove wrote is told from damage: it is only
// rebuilt, without a warning.
func TestCacheVersion(t *testing.T) {
	for data, version := range map[string]bool{"trove-statcache-11\nold": true, "trove-statcache-99\n": true, "garbage": false, "": false} {
		_, err := Decode([]byte(data))
		if !errors.Is(err, ErrDamaged) || errors.Is(err, ErrVersion) != version {
			t.Errorf("%q: %v", data, err)
		}
	}
}

// An entry's fields and its directory's read back as they were.
func TestEntryFields(t *testing.T) {
	c := New()
	dirSt := Stat{Mode: fs.ModeDir | 0o755, Mtime: 5e9, Ctime: 5e9, Ino: 2, Dev: 7}
	c.Put("d/same", Stat{Mode: 0o644, Size: 1, Mtime: 3e9, Ctime: 3e9, Ino: 10, Dev: 7}, Refs{Ref: sumRef([]byte("s"))}, 99)
	c.Put("d/other", Stat{Mode: 0o600, Size: 2, Mtime: 3e9, Ctime: 4e9, Ino: 11, Dev: 8}, Refs{Ref: sumRef([]byte("o"))}, 99)
	c.Relist(map[string]Listing{"d": {St: dirSt, Names: []string{"none", "other", "same"}}}, 99)
	c.Put("d/other", Stat{Mode: 0o600, Size: 2, Mtime: 3e9, Ctime: 4e9, Ino: 11, Dev: 8}, Refs{Ref: sumRef([]byte("o"))}, 42)
	got, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"d/same", "d/other"} {
		want, _ := c.Entry(p)
		e, ok := got.Entry(p)
		if !ok || e.St != want.St || e.Verified != want.Verified || got.RefsOf(e) != c.RefsOf(want) {
			t.Errorf("%s: %+v, want %+v", p, e, want)
		}
	}
	if _, ok := got.Entry("d/none"); ok {
		t.Error("a name without an entry read back with one")
	}
	if r := got.dir("d"); r.St != dirSt || r.Verified != 99 || !r.Listed {
		t.Errorf("directory record %+v", r)
	}
	// Read where they are, or copied where Entry is laid out otherwise:
	// the same either way.
	for _, e := range c.Dirs["d"].Ents {
		if e.n > 0 {
			if got := readEntryFixed(appendEntryFixed(nil, e, e.off)); got != e {
				t.Errorf("entry %+v read back as %+v", e, got)
			}
		}
	}
	if !entryMapped && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		t.Errorf("on %s the entries are copied, not read in place", runtime.GOARCH)
	}
}

// TestWritePartsInChunks: a cache whose second block spans many of
// WriteParts's chunks, with a tree bigger than one, reads back whole, and
// a writer failing midway fails the write.
func TestWritePartsInChunks(t *testing.T) {
	c := New()
	for i := range 3000 {
		c.Put(fmt.Sprintf("d%d/f%d", i%40, i), Stat{Mode: 0o644, Size: int64(i), Mtime: int64(i) * 1e9, Ino: uint64(i), Dev: 3}, Refs{Ref: sumRef([]byte{byte(i), byte(i >> 8)})}, 99)
	}
	big := make([]byte, tailChunk+100)
	for i := range big {
		big[i] = byte(i)
	}
	trees := map[string][]byte{sumRef(big): big}
	for i := range 50 {
		trees[sumRef([]byte{byte(i), 'T'})] = fmt.Appendf(nil, "tree %d", i)
		c.TreeOf[fmt.Sprintf("d%d", i%40)] = sumRef([]byte{byte(i), 'T'})
	}
	c.Trees = trees
	c.Older[sumRef(big)] = true
	c.Last = Last{ID: "cp", Tree: sumRef(big), Verified: 42}
	data := c.Encode()
	if len(data) < 3*tailChunk {
		t.Fatalf("the cache is %d bytes, want several chunks", len(data))
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	// Found lazily, before Full.
	for ref, tree := range trees {
		if b, ok := got.Tree(ref); !ok || !slices.Equal(b, tree) {
			t.Fatalf("tree %s: %d bytes found (%v), want %d", ref, len(b), ok, len(tree))
		}
	}
	if _, ok := got.Tree(sumRef([]byte("none"))); ok {
		t.Fatal("a tree the cache does not hold found")
	}
	for i := range 41 {
		d := fmt.Sprintf("d%d", i)
		if ref := got.TreeRef(d); ref != c.TreeOf[d] {
			t.Fatalf("%s: tree %q, want %q", d, ref, c.TreeOf[d])
		}
	}
	if got.NumDirs() != len(c.Dirs) {
		t.Fatalf("%d directories, want %d", got.NumDirs(), len(c.Dirs))
	}
	if len(got.allEntries()) != 3000 || got.Last != c.Last || !got.Older[sumRef(big)] || len(got.Older) != 1 {
		t.Fatalf("%d entries, last %+v, older %v", len(got.allEntries()), got.Last, got.Older)
	}
	for ref, tree := range trees {
		if !slices.Equal(got.Trees[ref], tree) {
			t.Fatalf("tree %s: %d bytes back, want %d", ref, len(got.Trees[ref]), len(tree))
		}
	}
	for p, e := range c.allEntries() {
		if g, _ := got.Entry(p); g.St != e.St || got.RefsOf(g) != c.RefsOf(e) {
			t.Fatalf("%s: %+v, want %+v", p, g, e)
		}
	}
	if !maps.Equal(got.TreeOf, c.TreeOf) {
		t.Fatalf("TreeOf %v, want %v", got.TreeOf, c.TreeOf)
	}
	w := &failAfter{n: len(data) / 2}
	if err := c.WriteParts(w, c.EncodeHead()); !errors.Is(err, errFull) {
		t.Fatalf("a failing writer: %v", err)
	}
}

var errFull = errors.New("writer full")

// failAfter takes n bytes, then fails.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWritePartsAfter: the directories and the entries' refs are written
// before ready is called, the trees and the last snapshot as they are
// when it returns; an error from it stops the write.
func TestWritePartsAfter(t *testing.T) {
	c := New()
	for i := range 200 {
		c.Put(fmt.Sprintf("d%d/f%d", i%8, i), Stat{Mode: 0o644, Size: int64(i), Mtime: int64(i) * 1e9, Ino: uint64(i), Dev: 3}, Refs{Ref: sumRef([]byte{byte(i)})}, 99)
	}
	head := c.EncodeHead()
	var b bytes.Buffer
	tree := []byte("tree of d1")
	err := c.WritePartsAfter(&b, head, func() error {
		if b.Len() < head.size {
			t.Errorf("%d bytes written before ready, want the first block's %d and more", b.Len(), head.size)
		}
		c.TreeOf["d1"] = sumRef(tree)
		c.Trees = map[string][]byte{sumRef(tree): tree}
		c.Last = Last{ID: "cp", Tree: sumRef(tree), Verified: 7}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.allEntries()) != 200 || got.Last != c.Last || got.TreeOf["d1"] != sumRef(tree) || !slices.Equal(got.Trees[sumRef(tree)], tree) {
		t.Fatalf("%d entries, last %+v, TreeOf %v, trees %v", len(got.allEntries()), got.Last, got.TreeOf, got.Trees)
	}
	stop := errors.New("trees not built")
	b.Reset()
	if err := c.WritePartsAfter(&b, head, func() error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("ready failing: %v", err)
	}
	if _, err := Decode(b.Bytes()); err == nil {
		t.Error("a write stopped by ready decodes")
	}
}

// Two snapshots writing the cache over each other can leave one's first
// block with the other's second, each whole: Decode must refuse that,
// not pair the first's entries with the second's refs.
func TestSplicedBlocksDamaged(t *testing.T) {
	encode := func(salt byte) []byte {
		c := New()
		for i := range 50 {
			c.Put(fmt.Sprintf("d%d/f", i), Stat{Mode: 0o644, Size: int64(i), Mtime: int64(i) * 1e9, Ino: uint64(i) + uint64(salt), Dev: 3}, Refs{Ref: sumRef([]byte{byte(i), salt})}, 99)
		}
		return c.Encode()
	}
	a, b := encode(1), encode(2)
	split := func(data []byte) (head, tail []byte) {
		at := headAt + int(binary.LittleEndian.Uint64(data[len(cacheMagic):]))
		return data[:at], data[at:]
	}
	ha, _ := split(a)
	hb, tb := split(b)
	if len(ha) != len(hb) {
		t.Fatalf("first blocks of %d and %d bytes: the splice needs equal ones", len(ha), len(hb))
	}
	for _, data := range [][]byte{a, b} {
		if _, err := Decode(data); err != nil {
			t.Fatal(err)
		}
	}
	spliced := append(slices.Clone(ha), tb...)
	if _, err := Decode(spliced); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a first block of one cache with the second of another: %v, want ErrDamaged", err)
	}
}

// Any byte of a cache changed, its checksums set again (damage the CRC
// cannot see), never panics a lookup, Full or a write: what decodes is
// looked up, what does not reads as missing.
func TestRechecksummedDamageNoPanic(t *testing.T) {
	c := New()
	for i := range 12 {
		c.Put(fmt.Sprintf("d%d/f%d", i%3, i), Stat{Mode: 0o644, Size: int64(i), Mtime: 1e9, Ino: uint64(i)}, Refs{Ref: sumRef([]byte{byte(i)})}, 99)
	}
	tree := []byte("tree")
	c.TreeOf["d1"], c.Trees[sumRef(tree)] = sumRef(tree), tree
	c.Last = Last{ID: "cp", Tree: sumRef(tree), Verified: 99}
	data := c.Encode()
	for i := headAt; i < len(data)-4; i++ {
		for _, x := range []byte{1, 0x80, 0xff} {
			bad := slices.Clone(data)
			bad[i] ^= x
			got, err := Decode(reCRC(bad))
			if err != nil {
				if !errors.Is(err, ErrDamaged) {
					t.Fatalf("byte %d: %v does not wrap ErrDamaged", i, err)
				}
				continue
			}
			for j := range 12 {
				if e, ok := got.Entry(fmt.Sprintf("d%d/f%d", j%3, j)); ok {
					got.RefsOf(e)
				}
			}
			got.Listing("d0", Stat{}, 0)
			got.TreeRef("d1")
			got.Tree(sumRef(tree))
			got.Full()
			if _, err := Decode(got.Encode()); err != nil {
				t.Fatalf("byte %d: written again: %v", i, err)
			}
		}
	}
}

// A cache whose bytes are not 8-byte aligned in memory (read into a
// buffer at an odd place) has its entries copied, not read in place, and
// reads back the same.
func TestMisalignedEntriesCopied(t *testing.T) {
	c := New()
	for i := range 40 {
		c.Put(fmt.Sprintf("d%d/f%d", i%4, i), Stat{Mode: 0o644, Size: int64(i), Mtime: int64(i) * 1e9, Ctime: 5, Ino: uint64(i), Dev: 3}, Refs{Ref: sumRef([]byte{byte(i)})}, 99)
	}
	data := c.Encode()
	buf := make([]byte, len(data)+1)
	odd := buf[1:]
	copy(odd, data)
	for _, in := range [][]byte{data, odd} {
		got, err := Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range c.allEntries() {
			e, ok := got.Entry(p)
			if !ok || e.St != want.St || e.Verified != want.Verified || got.RefsOf(e) != c.RefsOf(want) {
				t.Fatalf("%s: %+v %v, want %+v", p, e, ok, want)
			}
		}
		r := got.dir("d1")
		inPlace := uintptr(unsafe.Pointer(&r.Ents[0])) >= uintptr(unsafe.Pointer(&in[0])) && uintptr(unsafe.Pointer(&r.Ents[0])) < uintptr(unsafe.Pointer(&in[0]))+uintptr(len(in))
		if want := entryMapped && &in[0] == &data[0]; inPlace != want {
			t.Errorf("entries read in place: %v, want %v", inPlace, want)
		}
	}
}

// TestRecordsInWalkOrder checks that the records are written in the
// order a walk reads them (walkOrder), so that those read one after
// another are near each other in the file.
func TestRecordsInWalkOrder(t *testing.T) {
	c := New()
	listings := map[string]Listing{}
	for _, d := range []string{"a", "a/b", "a/c", "a/c/d", "a.b", "ab", "b", "b/x", "."} {
		listings[d] = Listing{St: Stat{Mode: fs.ModeDir | 0o755, Mtime: 1e9}, Names: []string{"f"}}
	}
	c.Relist(listings, 99)
	got, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for i := range got.lz.nd {
		p, _, ok := got.lz.pathAt(i)
		if !ok {
			t.Fatalf("record %d: no path", i)
		}
		order = append(order, p)
	}
	// "a.b" sorts before "a/..." as a path but after "a" as a name.
	want := []string{".", "b", "b/x", "ab", "a.b", "a", "a/c", "a/c/d", "a/b"}
	if !slices.Equal(order, want) {
		t.Errorf("records in order %q, want %q", order, want)
	}
	for _, d := range want {
		if r, _ := got.Listing(d, Stat{}, 0); r == nil {
			t.Errorf("%s: no record", d)
		}
	}
}

// TestListingNear checks that a lookup from a Near finds what one
// without does, whatever record the Near tried first.
func TestListingNear(t *testing.T) {
	c, dirs := benchCache()
	got, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var n Near
	look := append(slices.Clone(dirs), "no/such", dirs[7], dirs[3], ".", dirs[len(dirs)-1], dirs[0])
	for _, d := range look {
		want, wantOK := got.Listing(d, Stat{Mode: fs.ModeDir | 0o755, Mtime: 1e9}, 0)
		r, ok := got.ListingNear(&n, d, Stat{Mode: fs.ModeDir | 0o755, Mtime: 1e9}, 0)
		if r != want || ok != wantOK {
			t.Errorf("%s: ListingNear %p %v, Listing %p %v", d, r, ok, want, wantOK)
		}
	}
	for _, next := range []int{-1, 0, 1, len(dirs) - 1, len(dirs), len(dirs) + 5} {
		n := Near{next: next}
		if r, _ := got.ListingNear(&n, dirs[5], Stat{}, 0); r == nil || r != got.dir(dirs[5]) {
			t.Errorf("from next %d: record %p, want %p", next, r, got.dir(dirs[5]))
		}
	}
}
