package treeobj

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/trovekit/trove/checkpoint/internal/wire"
	"github.com/trovekit/trove/checkpoint/manifest"
)

// A version 2 manifest holds no file list: it names a tree object, one per
// directory, stored as a blob in cas (compressed there) and addressed by its
// content, as git and restic do. A directory whose entries did not change
// gives the same tree object, stored once, so a checkpoint after a few
// edits costs the trees on the paths to the edited files and nothing else.
//
// Tree object: Magic, uvarint count, then per child sorted by name:
// name (uvarint length, bytes), flags (tfEntry, tfExists, tfSub,
// tfMTime, tfDelta), and
//   - with tfEntry and tfExists: type byte ('f', 'l', 'd'), uvarint mode;
//     a file: uvarint size, digest ref, with tfDelta base and delta refs;
//     a symlink: target (uvarint length, bytes); with tfMTime varint ns;
//   - with tfSub: the ref of the child's own tree object.
//
// A child without tfEntry is a directory a "files" checkpoint passes
// through without recording it. A ref is one algorithm byte (cas.Algorithm)
// and its 32-byte digest.

// Magic starts every tree object.
const Magic = "trvt1"

const (
	tfEntry = 1 << iota
	tfExists
	tfSub
	tfMTime
	tfDelta
)

// AppendChild appends one child of a tree object: its name, e (nil for a
// directory only passed through) and sub, the ref of its own tree object
// ("" for none). A ref that does not parse is manifest.ErrCorrupt.
func AppendChild(b []byte, name string, e *manifest.Entry, sub string) ([]byte, error) {
	b = wire.AppendStr(b, name)
	var flags byte
	if e != nil {
		flags |= tfEntry
		if e.Exists {
			flags |= tfExists
			if !e.MTime.IsZero() {
				flags |= tfMTime
			}
			if e.Delta != "" {
				flags |= tfDelta
			}
		}
	}
	if sub != "" {
		flags |= tfSub
	}
	b = append(b, flags)
	var err error
	if flags&tfExists != 0 {
		switch e.EffectiveType() {
		case manifest.TypeFile:
			b = append(b, 'f')
			b = binary.AppendUvarint(b, uint64(e.Mode))
			b = binary.AppendUvarint(b, uint64(e.Size))
			if b, err = appendRef(b, e.Digest); err != nil {
				return nil, err
			}
			if e.Delta != "" {
				if b, err = appendRef(b, e.Base); err != nil {
					return nil, err
				}
				if b, err = appendRef(b, e.Delta); err != nil {
					return nil, err
				}
			}
		case manifest.TypeSymlink:
			b = append(b, 'l')
			b = binary.AppendUvarint(b, uint64(e.Mode))
			b = wire.AppendStr(b, e.Target)
		case manifest.TypeDir:
			b = append(b, 'd')
			b = binary.AppendUvarint(b, uint64(e.Mode))
		}
		if flags&tfMTime != 0 {
			b = binary.AppendVarint(b, e.MTime.UnixNano())
		}
	}
	if sub != "" {
		if b, err = appendRef(b, sub); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendRef writes a ref in the tree objects' form (wire.AppendRef); s not
// a ref is manifest.ErrCorrupt.
func appendRef(b []byte, s string) ([]byte, error) {
	out, err := wire.AppendRef(b, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", manifest.ErrCorrupt, err)
	}
	return out, nil
}

// Child is one decoded child of a tree object.
type Child struct {
	Name  string
	Entry *manifest.Entry // nil for a directory only passed through; Path holds the name only
	Sub   string          // the ref of its own tree object, "" for none
}

// Decode parses a tree object; damage is manifest.ErrCorrupt.
func Decode(data []byte) ([]Child, error) {
	if !strings.HasPrefix(string(data[:min(len(data), len(Magic))]), Magic) {
		return nil, fmt.Errorf("%w: not a tree object", manifest.ErrCorrupt)
	}
	body := data[len(Magic):]
	// Tree bytes are never written once read: names can share them.
	r := wire.NewReader(body)
	n := r.Uvarint()
	if n > uint64(len(r.B)) {
		return nil, fmt.Errorf("%w: tree object of %d entries in %d bytes", manifest.ErrCorrupt, n, len(r.B))
	}
	out := make([]Child, 0, n)
	ents := make([]manifest.Entry, 0, n) // one allocation for the entries of all children
	for i := uint64(0); i < n && r.Err == nil; i++ {
		c := Child{Name: r.Str()}
		if len(r.B) == 0 {
			r.Err = wire.ErrShort
			break
		}
		flags := r.B[0]
		r.B = r.B[1:]
		if flags&tfEntry != 0 {
			ents = append(ents, manifest.Entry{Path: c.Name, Exists: flags&tfExists != 0})
			e := &ents[len(ents)-1]
			if e.Exists {
				if len(r.B) == 0 {
					r.Err = wire.ErrShort
					break
				}
				typ := r.B[0]
				r.B = r.B[1:]
				mode := r.Uvarint()
				if mode > 0o7777 {
					return nil, fmt.Errorf("%w: tree entry %q: mode %o", manifest.ErrCorrupt, manifest.Clip(c.Name), mode)
				}
				e.Mode = manifest.Mode(mode)
				switch typ {
				case 'f':
					e.Size = int64(r.Uvarint())
					e.Digest = r.Ref()
					if flags&tfDelta != 0 {
						e.Base, e.Delta = r.Ref(), r.Ref()
					}
				case 'l':
					e.Type, e.Target = manifest.TypeSymlink, r.Str()
				case 'd':
					e.Type = manifest.TypeDir
				default:
					return nil, fmt.Errorf("%w: tree entry %q: unknown type %q", manifest.ErrCorrupt, manifest.Clip(c.Name), typ)
				}
				if flags&tfMTime != 0 {
					e.MTime = time.Unix(0, r.Varint()).UTC()
				}
			}
			c.Entry = e
		}
		if flags&tfSub != 0 {
			c.Sub = r.Ref()
		}
		if c.Entry == nil && c.Sub == "" && r.Err == nil {
			return nil, fmt.Errorf("%w: tree entry %q holds nothing", manifest.ErrCorrupt, manifest.Clip(c.Name))
		}
		out = append(out, c)
	}
	if r.Err != nil || len(r.B) != 0 {
		return nil, fmt.Errorf("%w: damaged tree object", manifest.ErrCorrupt)
	}
	return out, nil
}
