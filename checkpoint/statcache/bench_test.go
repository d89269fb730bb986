package statcache

import (
	"fmt"
	"io/fs"
	"testing"
)

// benchCache is a cache shaped as the cpbench tree's: 1,600 directories
// of four files, with a tree each.
func benchCache() (*Cache, []string) {
	c := New()
	var dirs []string
	listings := map[string]Listing{}
	for d := range 1600 {
		dir := fmt.Sprintf("pkg%02d/sub%02d/leaf%d", d/50, d/5%10, d%5)
		dirs = append(dirs, dir)
		var names []string
		for f := range 4 {
			name := fmt.Sprintf("file%04d.go", d*4+f)
			names = append(names, name)
			c.Put(dir+"/"+name, Stat{Mode: 0o644, Size: int64(f), Mtime: 1e9, Ctime: 1e9, Ino: uint64(d*4 + f), Dev: 3}, Refs{Ref: sumRef([]byte(name))}, 99)
		}
		listings[dir] = Listing{St: Stat{Mode: fs.ModeDir | 0o755, Mtime: 1e9}, Names: names}
		tree := []byte(dir)
		c.TreeOf[dir], c.Trees[sumRef(tree)] = sumRef(tree), tree
	}
	c.Relist(listings, 99)
	return c, dirs
}

// BenchmarkDecodeWalk decodes a cache and looks every directory's record
// up once, as a plan's walk does.
func BenchmarkDecodeWalk(b *testing.B) {
	c, dirs := benchCache()
	data := c.Encode()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range dirs {
			if r, _ := got.Listing(d, Stat{}, 0); r == nil {
				b.Fatalf("%s: no record", d)
			}
		}
	}
}
