package manifest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Version is the manifest format this package writes. Version 1
// (the file list inline) is still read.
const Version = 2

// V1 is the first format: every entry inline in the JSON.
const V1 = 1

// Kinds of checkpoint.
const (
	// KindFiles: the named paths only; rewind touches nothing else.
	KindFiles = "files"
	// KindTree: the whole tree minus ignored paths; rewind also deletes
	// files that appeared since, unless ignored.
	KindTree = "tree"
)

// Entry types.
const (
	TypeFile    = "file"
	TypeSymlink = "symlink"
	TypeDir     = "dir"
)

// Manifest describes one checkpoint: what every path held when it was taken.
// It is stored as one small JSON object, written atomically, naming the
// tree objects (see checkpoint/treeobj) that hold Files.
type Manifest struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"createdAt"`
	// Session and Message link the checkpoint to the conversation it
	// belongs to: the session id and the user message id.
	Session string `json:"session,omitempty"`
	Message string `json:"message,omitempty"`
	// Note says what the checkpoint was taken before (a tool call).
	Note string `json:"note,omitempty"`
	// Root is the workspace directory, when known; informational only.
	Root string `json:"root,omitempty"`
	// Tree checkpoints: the rules they were taken with. DefaultIgnore is
	// overridden by .gitignore files, Ignore overrides both.
	DefaultIgnore []string `json:"defaultIgnore,omitempty"`
	Ignore        []string `json:"ignore,omitempty"`
	MaxFileSize   int64    `json:"maxFileSize,omitempty"`
	// Tree is the ref of the root tree object Files are stored in
	// (version 2; empty in version 1, whose files are inline).
	Tree string `json:"tree,omitempty"`
	// Entries is how many entries the trees hold (version 2): what a
	// listing shows without reading every checkpoint's trees. 0 where not
	// recorded (written before it was) or for an empty tree.
	Entries int `json:"entries,omitempty"`
	// Files is sorted by path, one entry per path.
	Files []Entry `json:"files"`
	// Skipped lists files a tree checkpoint left out (too big, unreadable
	// name); rewind neither restores nor deletes them.
	Skipped []Skipped `json:"skipped,omitempty"`

	// trees holds the refs of every tree object Tree names, once stored
	// or loaded: blobs the checkpoint needs besides file content.
	trees []string
	// fromTrees: Files were decoded from tree objects, which checked each
	// name, ref and nesting as it went (see SetDecodedFromTrees).
	fromTrees bool
}

// Entry is one path of a checkpoint.
type Entry struct {
	Path   string    `json:"path"`             // slash-separated, relative to the workspace root
	Exists bool      `json:"exists"`           // false: absent, rewind deletes it
	Type   string    `json:"type,omitempty"`   // file (default), symlink or dir
	Digest string    `json:"digest,omitempty"` // blob ref of a file's content
	Size   int64     `json:"size,omitempty"`
	Mode   Mode      `json:"mode,omitempty"`   // permission bits
	MTime  time.Time `json:"mtime,omitzero"`   // informational, older checkpoints only (no longer recorded); rewind does not restore it
	Target string    `json:"target,omitempty"` // a symlink's target
	// A file stored as a delta: Digest names the content, which is not a
	// blob of its own; Delta turns the whole blob Base into it.
	Base  string `json:"base,omitempty"`
	Delta string `json:"delta,omitempty"`
}

// Skipped is a file a tree checkpoint did not store.
type Skipped struct {
	Path   string `json:"path"`
	Size   int64  `json:"size,omitempty"`
	Reason string `json:"reason"`
}

// Mode holds permission bits; in JSON it is an octal string such as "0644".
type Mode uint32

// MarshalJSON writes the mode as an octal string.
func (m Mode) MarshalJSON() ([]byte, error) {
	return []byte(`"0` + strconv.FormatUint(uint64(m), 8) + `"`), nil
}

// UnmarshalJSON reads an octal string.
func (m *Mode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return fmt.Errorf("mode %q: not octal permission bits", s)
	}
	*m = Mode(v)
	return nil
}

// FileMode returns the mode as fs.FileMode permission bits.
func (m Mode) FileMode() fs.FileMode { return fs.FileMode(m) & fs.ModePerm }

// EffectiveType returns the entry's type with the default filled in.
func (e *Entry) EffectiveType() string {
	if e.Type == "" {
		return TypeFile
	}
	return e.Type
}

// Validate checks everything rewind relies on, so a hostile or damaged
// manifest is refused before any file is touched.
func (m *Manifest) Validate(id string) error {
	if m.Version != Version && m.Version != V1 {
		return fmt.Errorf("%w: manifest version %d, want %d or %d", ErrCorrupt, m.Version, V1, Version)
	}
	if m.ID != id {
		return fmt.Errorf("%w: manifest names checkpoint %q, want %q", ErrCorrupt, m.ID, id)
	}
	if m.Kind != KindFiles && m.Kind != KindTree {
		return fmt.Errorf("%w: unknown kind %q", ErrCorrupt, m.Kind)
	}
	// nonDir holds paths that are files or symlinks: nothing may live below.
	var nonDir map[string]bool
	if !m.fromTrees {
		nonDir = make(map[string]bool, len(m.Files))
	}
	for i := range m.Files {
		e := &m.Files[i]
		if i > 0 && m.Files[i-1].Path >= e.Path {
			return fmt.Errorf("%w: entries not sorted or duplicated at %q", ErrCorrupt, e.Path)
		}
		if m.fromTrees {
			if e.Exists && e.EffectiveType() == TypeSymlink && (e.Target == "" || strings.ContainsRune(e.Target, 0)) {
				return fmt.Errorf("%w: %q: bad symlink target", ErrCorrupt, e.Path)
			}
			continue
		}
		if err := ValidPath(e.Path); err != nil {
			return fmt.Errorf("manifest entry %d: %w", i, err)
		}
		if e.Digest != "" && !ValidRef(e.Digest) {
			// Whatever the entry, a ref GC and fsck would read must parse.
			return fmt.Errorf("%w: %q: bad digest %q", ErrCorrupt, e.Path, Clip(e.Digest))
		}
		if !e.Exists {
			continue
		}
		switch e.EffectiveType() {
		case TypeFile:
			if !ValidRef(e.Digest) {
				return fmt.Errorf("%w: %q: bad digest %q", ErrCorrupt, e.Path, Clip(e.Digest))
			}
			if (e.Base != "" || e.Delta != "") && (!ValidRef(e.Base) || !ValidRef(e.Delta)) {
				return fmt.Errorf("%w: %q: bad delta %q of %q", ErrCorrupt, e.Path, Clip(e.Delta), Clip(e.Base))
			}
			nonDir[e.Path] = true
		case TypeSymlink:
			if e.Target == "" || strings.ContainsRune(e.Target, 0) {
				return fmt.Errorf("%w: %q: bad symlink target", ErrCorrupt, e.Path)
			}
			nonDir[e.Path] = true
		case TypeDir:
		default:
			return fmt.Errorf("%w: %q: unknown type %q", ErrCorrupt, e.Path, e.Type)
		}
	}
	// A path below a file or symlink would make rewind write through it.
	for i := range m.Files {
		p := m.Files[i].Path
		for j := strings.IndexByte(p, '/'); j >= 0; j = nextSlash(p, j) {
			if nonDir[p[:j]] {
				return fmt.Errorf("%w: %q lies below %q, which is not a directory", ErrUnsafePath, p, p[:j])
			}
		}
	}
	for _, s := range m.Skipped {
		// Informational: rewind never acts on a skipped path.
		if s.Path == "" || strings.ContainsRune(s.Path, 0) {
			return fmt.Errorf("%w: bad skipped entry %q", ErrCorrupt, Clip(s.Path))
		}
	}
	return nil
}

func nextSlash(p string, j int) int {
	k := strings.IndexByte(p[j+1:], '/')
	if k < 0 {
		return -1
	}
	return j + 1 + k
}

// Clip keeps hostile input out of messages beyond a sane length.
func Clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// Find returns the entry for path, or nil.
func (m *Manifest) Find(path string) *Entry {
	lo, hi := 0, len(m.Files)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.Files[mid].Path < path {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(m.Files) && m.Files[lo].Path == path {
		return &m.Files[lo]
	}
	return nil
}

// SetTrees records refs, the tree objects Tree names, once stored or
// loaded.
func (m *Manifest) SetTrees(refs []string) { m.trees = refs }

// SetDecodedFromTrees records that Files were read from the tree objects,
// which checked each name, ref and nesting as they went, so Validate need
// not again.
func (m *Manifest) SetDecodedFromTrees() { m.fromTrees = true }

// TreeRefs returns the refs SetTrees recorded.
func (m *Manifest) TreeRefs() []string { return m.trees }

// Refs returns the blob refs the manifest uses, each once: its tree
// objects and the content of its files (a delta's blob and its base).
func (m *Manifest) Refs() []string {
	seen := make(map[string]bool)
	var out []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, r := range m.trees {
		add(r)
	}
	for i := range m.Files {
		for _, r := range m.Files[i].ContentRefs() {
			add(r)
		}
	}
	return out
}

// ContentRefs returns the blobs a file entry's content is stored in.
func (e *Entry) ContentRefs() []string {
	switch {
	case !e.Exists || e.EffectiveType() != TypeFile:
		return nil
	case e.Delta != "":
		return []string{e.Base, e.Delta}
	}
	return []string{e.Digest}
}
