package checkpoint

import (
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trovekit/trove/checkpoint/treeobj"
)

// memBlobs keeps blobs in a map, named by their sha256.
type memBlobs struct{ m map[string][]byte }

func (b *memBlobs) put(_ context.Context, data []byte) (string, error) {
	ref := sumRef(data)
	b.m[ref] = slices.Clone(data)
	return ref, nil
}
func (b *memBlobs) putReader(context.Context, io.Reader) (string, int64, error) { panic("unused") }
func (b *memBlobs) flush(context.Context) error                                 { return nil }
func (b *memBlobs) discard()                                                    {}
func (b *memBlobs) newBatch() blobBatch                                         { return b }
func (b *memBlobs) get(_ context.Context, ref string) ([]byte, error)           { return b.m[ref], nil }
func (b *memBlobs) open(context.Context, string) (io.ReadCloser, error)         { panic("unused") }
func (b *memBlobs) has(_ context.Context, ref string) (bool, error) {
	_, ok := b.m[ref]
	return ok, nil
}
func (b *memBlobs) sumLike(_ string, data []byte) (string, error)   { return sumRef(data), nil }
func (b *memBlobs) sumLikeReader(string, io.Reader) (string, error) { panic("unused") }

// Trees round-trip whatever the entries: directories only passed through,
// an absent path with absent paths below it (a files checkpoint), names
// that sort between a directory and its children.
func TestTreesRoundTrip(t *testing.T) {
	d := sumRef([]byte("x"))
	files := []Entry{
		{Path: "a", Exists: false},
		{Path: "a.txt", Exists: true, Digest: d, Size: 1, Mode: 0o644},
		{Path: "a/b", Exists: false},
		{Path: "dir", Exists: true, Type: TypeDir, Mode: 0o755},
		{Path: "dir.go", Exists: true, Digest: d, Size: 1, Mode: 0o600},
		{Path: "dir/sub/deep/f", Exists: true, Digest: d, Size: 1, Mode: 0o644},
		{Path: "dir/z", Exists: true, Type: TypeSymlink, Target: "../a.txt"},
		{Path: "only/passed/through", Exists: true, Digest: d, Size: 1, Mode: 0o644},
	}
	b := &memBlobs{m: map[string][]byte{}}
	root, refs, err := putTrees(t.Context(), b, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, loaded, err := loadTrees(t.Context(), b, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, files) {
		t.Fatalf("got %+v\nwant %+v", got, files)
	}
	slices.Sort(refs)
	slices.Sort(loaded)
	if !slices.Equal(refs, loaded) {
		t.Errorf("put trees %v, loaded %v", refs, loaded)
	}
}

// Trees that would put a path below a file, or hold a name that is not one
// path element, do not load.
func TestHostileTreesRefused(t *testing.T) {
	d := sumRef([]byte("x"))
	b := &memBlobs{m: map[string][]byte{}}
	sub, _, err := putTrees(t.Context(), b, []Entry{{Path: "x", Exists: true, Digest: d, Size: 1, Mode: 0o644}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := &Entry{Exists: true, Digest: d, Size: 1, Mode: 0o644}
	put := func(kids ...treeobj.Child) string {
		buf := append([]byte(treeobj.Magic), byte(len(kids)))
		for _, k := range kids {
			var err error
			if buf, err = treeobj.AppendChild(buf, k.Name, k.Entry, k.Sub); err != nil {
				t.Fatal(err)
			}
		}
		ref, _ := b.put(t.Context(), buf)
		return ref
	}
	for name, root := range map[string]string{
		"file with entries below":  put(treeobj.Child{Name: "a", Entry: file, Sub: sub}),
		"file and directory a":     put(treeobj.Child{Name: "a", Entry: file}, treeobj.Child{Name: "a", Sub: sub}),
		"name with a slash":        put(treeobj.Child{Name: "a/b", Entry: file}),
		"dot-dot":                  put(treeobj.Child{Name: "..", Sub: sub}),
		"drive letter at the root": put(treeobj.Child{Name: "c:", Entry: file}),
		"names out of order":       put(treeobj.Child{Name: "b", Entry: file}, treeobj.Child{Name: "a", Entry: file}),
		"backslash":                put(treeobj.Child{Name: `a\b`, Entry: file}),
	} {
		if _, _, err := loadTrees(t.Context(), b, root, nil); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	// A drive-letter-like name below the root is an ordinary name.
	ok := put(treeobj.Child{Name: "d", Entry: &Entry{Exists: true, Type: TypeDir, Mode: 0o755}, Sub: put(treeobj.Child{Name: "c:", Entry: file})})
	if files, _, err := loadTrees(t.Context(), b, ok, nil); err != nil || len(files) != 2 || files[1].Path != "d/c:" {
		t.Errorf("d/c: = %+v, %v", files, err)
	}
}

// pathOrder must give what sorting every path gives, names that sort
// before '/' ('.', '-', ' ') next to directories included.
func TestPathOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "a.txt", "a-b", "a b", "a0", "b", "A", "é", "a~"}
	for range 200 {
		byDir := map[string][]treeEntry{}
		var all []treeEntry
		var fill func(dir string, depth int)
		fill = func(dir string, depth int) {
			for _, n := range names {
				if rng.IntN(3) == 0 {
					continue
				}
				p := n
				if dir != "." {
					p = dir + "/" + n
				}
				e := treeEntry{path: p}
				if depth < 3 && rng.IntN(2) == 0 {
					e.st.Mode = fs.ModeDir
					defer fill(p, depth+1)
				}
				byDir[dir] = append(byDir[dir], e)
				all = append(all, e)
			}
		}
		fill(".", 0)
		for _, es := range byDir {
			slices.SortFunc(es, cmpTreeEntry)
		}
		slices.SortFunc(all, cmpTreeEntry)
		got := pathOrder(byDir, nil)
		samePath := func(a, b treeEntry) bool { return a.path == b.path }
		if !slices.EqualFunc(got, all, samePath) {
			t.Fatalf("pathOrder:\n%v\nwant\n%v", got, all)
		}
		// A walk that leaves its entries by directory yields them in the
		// same order, and stops where asked.
		tr := tree{byDir: byDir, n: len(all)}
		if seq := slices.Collect(tr.ordered()); tr.size() != len(all) || !slices.EqualFunc(seq, all, samePath) {
			t.Fatalf("ordered:\n%v\nwant\n%v", seq, all)
		}
		if len(all) > 2 {
			var first []treeEntry
			for e := range tr.ordered() {
				if first = append(first, e); len(first) == 2 {
					break
				}
			}
			if !slices.EqualFunc(first, all[:2], samePath) {
				t.Fatalf("ordered, stopped after 2: %v", first)
			}
		}
	}
}
