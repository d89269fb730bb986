package checkpoint

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trovekit/trove/checkpoint/manifest"
	"github.com/trovekit/trove/checkpoint/treeobj"
)

// Bounds on what loading a tree builds, whatever the blobs say.
const (
	treeMaxDepth   = 1024
	treeMaxEntries = 1 << 22
)

// tnode is a directory entry while trees are built.
type tnode struct {
	name  string
	entry *Entry // nil: a directory only passed through
	kids  []*tnode
	// reused: a directory whose tree treeHooks.reused vouches for, its
	// entries left out.
	reused bool
}

// putTrees stores the tree objects of files (sorted, validated entries)
// through batch and returns the root's ref and every tree's ref; keep, when
// not nil, gets every tree object by ref.
func putTrees(ctx context.Context, batch blobBatch, files []Entry, keep map[string][]byte) (string, []string, error) {
	return putTreesWith(ctx, batch, files, keep, treeHooks{})
}

// treeHooks let a snapshot skip the trees of directories known unchanged
// and learn the ref of each directory's tree.
type treeHooks struct {
	// reuse returns the ref of dir's tree ("." the root) when it is known
	// without building it: nothing below dir is built or put.
	reuse func(dir string) (string, bool)
	// reused, with reuse, tells ahead, without its side effects, whether
	// reuse will take dir's tree: the entries in dir are then not even
	// gathered (a snapshot that changed a few files reuses nearly all).
	reused func(dir string) bool
	// built is told the ref of each tree built.
	built func(dir, ref string)
}

// putTreesWith is putTrees with hooks; the refs it returns leave out the
// trees below a reused one.
func putTreesWith(ctx context.Context, batch blobBatch, files []Entry, keep map[string][]byte, hooks treeHooks) (string, []string, error) {
	// The entries to gather: not those below a directory whose tree is
	// taken as it is. Sorted by path, everything below a directory comes
	// together, starting with one of its own entries.
	gather := make([]int, 0, 64)
	var lastParent string
	for i := 0; i < len(files); i++ {
		parent := ""
		if j := strings.LastIndexByte(files[i].Path, '/'); j >= 0 {
			parent = files[i].Path[:j]
		}
		if hooks.reused != nil && parent != lastParent {
			lastParent = parent
			if parent != "" && hooks.reused(parent) {
				for i+1 < len(files) && below(files[i+1].Path, parent) {
					i++
				}
				continue
			}
		}
		gather = append(gather, i)
	}
	// One node per entry, allocated at once; directories are found by path
	// in a map of directories only. Siblings come in name order, since
	// files is sorted by path, except directories a files checkpoint only
	// passes through, added when first needed (sorted below).
	nodes := make([]tnode, len(gather)+1)
	root := &nodes[len(gather)]
	dirs := make(map[string]*tnode, len(gather)/4+1)
	dirs[""] = root
	var dirOf func(p string) *tnode
	dirOf = func(p string) *tnode {
		if n, ok := dirs[p]; ok {
			return n
		}
		parent, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		n := &tnode{name: name}
		pn := dirOf(parent)
		pn.kids = append(pn.kids, n)
		dirs[p] = n
		return n
	}
	for k, i := range gather {
		p := files[i].Path
		parent, name := "", p
		if j := strings.LastIndexByte(p, '/'); j >= 0 {
			parent, name = p[:j], p[j+1:]
		}
		if n, ok := dirs[p]; ok {
			n.entry = &files[i] // a directory passed through before its entry
			continue
		}
		n := &nodes[k]
		n.name, n.entry = name, &files[i]
		pn := dirOf(parent)
		pn.kids = append(pn.kids, n)
		// Only a directory (or an absent path, in a files checkpoint) can
		// have entries below it (validate refuses the rest).
		if !files[i].Exists || files[i].EffectiveType() == TypeDir {
			dirs[p] = n
			n.reused = hooks.reused != nil && files[i].Exists && hooks.reused(p)
		}
	}
	var refs []string
	var buf []byte
	var put func(n *tnode, dir string) (string, error)
	put = func(n *tnode, dir string) (string, error) {
		if hooks.reuse != nil {
			if ref, ok := hooks.reuse(dir); ok {
				return ref, nil
			}
		}
		if !slices.IsSortedFunc(n.kids, cmpNode) {
			slices.SortFunc(n.kids, cmpNode)
		}
		subs := make([]string, len(n.kids))
		for i, k := range n.kids {
			if len(k.kids) > 0 || k.reused {
				sub := k.name
				if dir != "." {
					sub = dir + "/" + k.name
				}
				var err error
				if subs[i], err = put(k, sub); err != nil {
					return "", err
				}
			}
		}
		b := append(buf[:0], treeobj.Magic...)
		b = binary.AppendUvarint(b, uint64(len(n.kids)))
		for i, k := range n.kids {
			var err error
			if b, err = treeobj.AppendChild(b, k.name, k.entry, subs[i]); err != nil {
				return "", err
			}
		}
		buf = b
		ref, err := batch.put(ctx, b)
		if err != nil {
			return "", err
		}
		refs = append(refs, ref)
		if keep != nil {
			keep[ref] = slices.Clone(b)
		}
		if hooks.built != nil {
			hooks.built(dir, ref)
		}
		return ref, nil
	}
	ref, err := put(root, ".")
	return ref, refs, err
}

func cmpNode(a, b *tnode) int { return strings.Compare(a.name, b.name) }

// below reports whether path is below dir.
func below(path, dir string) bool {
	return len(path) > len(dir) && path[len(dir)] == '/' && path[:len(dir)] == dir
}

// treeSource finds a tree object by ref without reading cas (the stat
// cache's Tree), or nil.
type treeSource func(ref string) ([]byte, bool)

func (s treeSource) get(ref string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	return s(ref)
}

// loadTrees reads the tree objects below root and returns their entries
// (sorted by path) and the refs of the trees read. A subtree stored once
// but used twice is read once. A tree found in known (the stat cache's,
// may be nil) is not read from cas.
func loadTrees(ctx context.Context, blobs blobStore, root string, known treeSource) ([]Entry, []string, error) {
	type decodedTree struct {
		kids []treeobj.Child
		n    int // entries at and below it, -1 until counted
	}
	decoded := map[string]*decodedTree{}
	var refs []string
	// First every tree is read, checked and counted, then the entries are
	// built into one slice of the right length.
	var read func(ref, prefix string, depth int) (int, error)
	read = func(ref, prefix string, depth int) (int, error) {
		if depth > treeMaxDepth {
			return 0, fmt.Errorf("%w: trees nested deeper than %d", ErrCorrupt, treeMaxDepth)
		}
		t, ok := decoded[ref]
		if ok {
			if t.n < 0 {
				return 0, fmt.Errorf("%w: tree %s contains itself", ErrCorrupt, ref)
			}
			return t.n, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		// The stat cache's trees were hashed when they were stored and
		// the cache's checksum catches damage since.
		data, ok := known.get(ref)
		if !ok {
			var err error
			if data, err = blobs.get(ctx, ref); err != nil {
				return 0, fmt.Errorf("%w: tree %s of %q: %w", ErrCorrupt, ref, prefix, err)
			}
		}
		kids, err := treeobj.Decode(data)
		if err != nil {
			return 0, fmt.Errorf("tree %s of %q: %w", ref, prefix, err)
		}
		t = &decodedTree{kids: kids, n: -1}
		decoded[ref] = t
		refs = append(refs, ref)
		n := 0
		for i, k := range kids {
			if !validName(k.Name, depth == 0) {
				return 0, fmt.Errorf("%w: tree %s of %q: bad name %q", ErrUnsafePath, ref, prefix, manifest.Clip(k.Name))
			}
			// Once each, in order: a name cannot be a file here and a
			// directory of entries in a second child.
			if i > 0 && kids[i-1].Name >= k.Name {
				return 0, fmt.Errorf("%w: tree %s of %q: names not sorted or repeated at %q", ErrCorrupt, ref, prefix, manifest.Clip(k.Name))
			}
			if k.Entry != nil {
				n++
			}
			if k.Sub == "" {
				continue
			}
			if e := k.Entry; e != nil && e.Exists && e.EffectiveType() != TypeDir {
				return 0, fmt.Errorf("%w: %q holds entries and is not a directory", ErrUnsafePath, prefix+k.Name)
			}
			m, err := read(k.Sub, prefix+k.Name+"/", depth+1)
			if err != nil {
				return 0, err
			}
			n += m
		}
		if n > treeMaxEntries {
			return 0, fmt.Errorf("%w: more than %d entries", ErrCorrupt, treeMaxEntries)
		}
		t.n = n
		return n, nil
	}
	total, err := read(root, "", 0)
	if err != nil {
		return nil, nil, err
	}
	files := make([]Entry, 0, total)
	var build func(ref, prefix string)
	build = func(ref, prefix string) {
		for _, k := range decoded[ref].kids {
			p := prefix + k.Name
			if k.Entry != nil {
				e := *k.Entry
				e.Path = p
				files = append(files, e)
			}
			if k.Sub != "" {
				build(k.Sub, p+"/")
			}
		}
	}
	build(root, "")
	if !slices.IsSortedFunc(files, cmpPath) {
		slices.SortFunc(files, cmpPath)
	}
	return files, refs, nil
}

// validName reports whether name can be one element of a workspace path
// (at the root: not a drive letter either), as validRel checks paths.
func validName(name string, root bool) bool {
	switch {
	case name == "", name == ".", name == "..", strings.ContainsAny(name, "/\\\x00"), !utf8.ValidString(name):
		return false
	case root && len(name) >= 2 && name[1] == ':':
		return false
	}
	return true
}

func cmpPath(a, b Entry) int { return strings.Compare(a.Path, b.Path) }

// treeRefs yields root and every ref the trees below it hold (subtrees and
// file content), skipping what seen holds and adding what it yields, so
// trees shared by many checkpoints are read once.
func treeRefs(ctx context.Context, blobs blobStore, root string, seen map[string]bool, yield func(string) bool) (bool, error) {
	if seen[root] {
		return true, nil
	}
	seen[root] = true
	if !yield(root) {
		return false, nil
	}
	data, err := blobs.get(ctx, root)
	if err != nil {
		return false, fmt.Errorf("%w: tree %s: %w", ErrCorrupt, root, err)
	}
	kids, err := treeobj.Decode(data)
	if err != nil {
		return false, fmt.Errorf("tree %s: %w", root, err)
	}
	for _, k := range kids {
		if e := k.Entry; e != nil {
			for _, r := range e.ContentRefs() {
				if !seen[r] {
					seen[r] = true
					if !yield(r) {
						return false, nil
					}
				}
			}
		}
		if k.Sub != "" {
			if ok, err := treeRefs(ctx, blobs, k.Sub, seen, yield); !ok || err != nil {
				return ok, err
			}
		}
	}
	return true, nil
}
