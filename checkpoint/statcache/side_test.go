package statcache

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"testing"
	"time"
)

// Verified times of the two snapshots of sideScenario, long after every
// file's mtime (nothing racy but the file made so).
const (
	sideV0 = int64(5e12)
	sideV1 = int64(7e12)
)

var sideDirSt = Stat{Mode: fs.ModeDir | 0o755, Mtime: 9}

// sideScenario returns a cache's file as a tree snapshot wrote it whole,
// and the cache the next tree snapshot leaves, read from that file: one
// file changed, one racy file hashed again, a directory removed and one
// added, the changed directory's tree new and its old one older, an older
// tree dropped, the rest verified again unchanged.
func sideScenario(t *testing.T) ([]byte, *Cache) {
	t.Helper()
	c := New()
	listings := map[string]Listing{}
	for d := range 20 {
		dir := fmt.Sprintf("d%02d", d)
		names := []string{"a", "b", "c"}
		for i, name := range names {
			st := Stat{Mode: 0o644, Size: int64(i), Mtime: 1e9, Ino: uint64(100*d + i)}
			if dir == "d05" && name == "c" {
				st.Mtime = sideV0 - 1 // racy: hashed again by the next snapshot
			}
			c.Put(dir+"/"+name, st, Refs{Ref: sumRef([]byte(dir + name))}, sideV0)
		}
		listings[dir] = Listing{St: sideDirSt, Names: names}
		c.TreeOf[dir] = sumRef([]byte("tree " + dir))
		c.Trees[sumRef([]byte("tree "+dir))] = []byte("tree " + dir)
	}
	c.Put("gone/x", Stat{Mode: 0o644, Mtime: 1e9}, Refs{Ref: sumRef([]byte("x"))}, sideV0)
	listings["gone"] = Listing{St: sideDirSt, Names: []string{"x"}}
	c.Relist(listings, sideV0)
	for _, old := range []string{"older one", "older two"} {
		c.Trees[sumRef([]byte(old))] = []byte(old)
		c.Older[sumRef([]byte(old))] = true
	}
	c.Last = Last{ID: "one", Tree: sumRef([]byte("root one")), Verified: sideV0}
	base := c.Encode()

	n, err := Decode(base)
	if err != nil {
		t.Fatal(err)
	}
	n.Full()
	delete(listings, "gone")
	for d, l := range listings {
		for _, name := range l.Names {
			if e := n.Slot(d + "/" + name); e != nil && e.St.Mtime < sideV0-int64(time.Second) {
				e.Verified = sideV1 // proven by its stat
			}
		}
	}
	n.Put("d03/a", Stat{Mode: 0o644, Size: 9, Mtime: 2e9, Ino: 300}, Refs{Ref: sumRef([]byte("new a")), Base: sumRef([]byte("d03a")), Delta: sumRef([]byte("delta"))}, sideV1)
	racySt, _ := n.Entry("d05/c")
	n.Put("d05/c", racySt.St, n.RefsOf(racySt), sideV1)
	n.Put("new/y", Stat{Mode: 0o644, Mtime: 1e9}, Refs{Ref: sumRef([]byte("y"))}, sideV1)
	listings["new"] = Listing{St: sideDirSt, Names: []string{"y"}}
	n.Relist(listings, sideV1)
	n.Older[sumRef([]byte("tree d03"))] = true
	n.TreeOf["d03"] = sumRef([]byte("tree d03 two"))
	n.Trees[sumRef([]byte("tree d03 two"))] = []byte("tree d03 two")
	n.TreeOf["new"] = sumRef([]byte("tree new"))
	n.Trees[sumRef([]byte("tree new"))] = []byte("tree new")
	delete(n.Trees, sumRef([]byte("older two")))
	delete(n.Older, sumRef([]byte("older two")))
	delete(n.Trees, sumRef([]byte("tree gone")))
	n.Last = Last{ID: "two", Tree: sumRef([]byte("root two")), Verified: sideV1}
	return base, n
}

// sideOf writes the sidecar of n, which must have one.
func sideOf(t *testing.T, n *Cache) []byte {
	t.Helper()
	s, ok := n.PlanSide(0)
	if !ok || !n.FinishSide(&s) {
		t.Fatal("no sidecar planned")
	}
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A cache read with its sidecar reads as the cache the sidecar's writer
// had: every entry, listing, directory's tree and tree, none of what it
// dropped, each entry verified by the last snapshot, lazily and in full.
func TestSideReadsAsWritten(t *testing.T) {
	base, n := sideScenario(t)
	side := sideOf(t, n)
	if len(side) >= len(base)/2 {
		t.Errorf("sidecar of %d bytes for a cache of %d", len(side), len(base))
	}
	for _, full := range []bool{false, true} {
		got, err := Decode(base)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Overlay(side); err != nil {
			t.Fatal(err)
		}
		if full {
			got.Full()
			if !slices.Equal(slices.Sorted(maps.Keys(got.Dirs)), slices.Sorted(maps.Keys(n.Dirs))) {
				t.Fatalf("directories %v, want %v", slices.Sorted(maps.Keys(got.Dirs)), slices.Sorted(maps.Keys(n.Dirs)))
			}
			if !maps.Equal(got.Older, n.Older) || !maps.EqualFunc(got.Trees, n.Trees, bytes.Equal) || !maps.Equal(got.TreeOf, n.TreeOf) {
				t.Fatalf("trees %d older %v, want %d older %v", len(got.Trees), got.Older, len(n.Trees), n.Older)
			}
		}
		if got.Last != n.Last {
			t.Fatalf("last %+v, want %+v", got.Last, n.Last)
		}
		for p, want := range n.allEntries() {
			e, ok := got.Entry(p)
			if !ok || e.St != want.St || got.RefsOf(e) != n.RefsOf(want) || !got.ByLast(e) {
				t.Fatalf("full %v: %s: %+v %v by last %v, want %+v", full, p, got.RefsOf(e), ok, got.ByLast(e), n.RefsOf(want))
			}
		}
		if e, _ := got.Entry("d05/c"); e.Verified != sideV1 || !Proves(e, e.St, 0) {
			t.Fatalf("the racy file hashed again: verified %d", e.Verified)
		}
		for d := range n.Dirs {
			if _, ok := got.Listing(d, sideDirSt, 0); !ok {
				t.Errorf("full %v: %s: listing not proven", full, d)
			}
			if got.TreeRef(d) != n.TreeOf[d] {
				t.Errorf("full %v: %s: tree %q, want %q", full, d, got.TreeRef(d), n.TreeOf[d])
			}
		}
		for ref, data := range n.Trees {
			if b, ok := got.Tree(ref); !ok || !bytes.Equal(b, data) {
				t.Errorf("full %v: tree %q: %q %v", full, data, b, ok)
			}
		}
		for _, gone := range []string{"older two", "tree gone"} {
			if _, ok := got.Tree(sumRef([]byte(gone))); ok {
				t.Errorf("full %v: dropped tree %q is there", full, gone)
			}
		}
		if _, ok := got.Entry("gone/x"); ok || got.dir("gone") != nil || got.TreeRef("gone") != "" {
			t.Errorf("full %v: the removed directory is there", full)
		}
	}
}

// A sidecar cut short, with a byte flipped, or of another cache is left:
// the cache reads as its own file.
func TestSideDamagedLeft(t *testing.T) {
	base, n := sideScenario(t)
	side := sideOf(t, n)
	check := func(what string, data []byte, over []byte) {
		t.Helper()
		got, err := Decode(over)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Overlay(data); err == nil {
			t.Fatalf("%s: taken", what)
		}
		if got.Last.ID != "one" || got.side != nil {
			t.Fatalf("%s: the cache changed: last %q", what, got.Last.ID)
		}
		if e, ok := got.Entry("d03/a"); !ok || e.St.Size != 0 {
			t.Fatalf("%s: d03/a is not the base's", what)
		}
	}
	for k := range len(side) {
		check(fmt.Sprintf("cut at %d", k), side[:k], base)
	}
	for k := range len(side) {
		bad := slices.Clone(side)
		bad[k] ^= 0x10
		check(fmt.Sprintf("byte %d flipped", k), bad, base)
	}
	// The same cache written again (a new nonce), as a snapshot that
	// wrote it whole since would have.
	c, err := Decode(base)
	if err != nil {
		t.Fatal(err)
	}
	check("another base", side, c.Encode())
	// A sidecar is no cache, nor a cache a sidecar.
	if _, err := Decode(side); err == nil {
		t.Fatal("a sidecar decoded as a cache")
	}
	check("a cache as sidecar", base, base)
}

// A cache written whole has no base a sidecar could name: the next
// snapshot of the same Cache writes it whole again.
func TestSideAfterWhole(t *testing.T) {
	_, n := sideScenario(t)
	n.ForgetBase()
	if _, ok := n.PlanSide(0); ok {
		t.Fatal("a sidecar planned over a cache written whole since")
	}
	if _, ok := New().PlanSide(0); ok {
		t.Fatal("a sidecar planned for a cache not read from a file")
	}
}
