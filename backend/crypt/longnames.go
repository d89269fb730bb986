package crypt

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/trovekit/trove/backend"
)

// An element whose stored form would not fit the inner store's element
// limit (over 143 bytes on a file system: long cwds) is stored under a
// short keyed name, longPrefix and the base32 of 20 bytes of
// HMAC-SHA256(nameMAC, "long" 0x00 parent 0x00 element), and its full
// stored form is kept in a side object beside it, sidePrefix and the same
// hash, written once before anything is made under the name. Listing reads
// the side object to decrypt the name; both prefixes lie outside the
// base32 alphabet, so no short form starts with them.
const (
	longPrefix = "z"
	sidePrefix = "y"
)

// longHash is the keyed hash that names a long element.
func (n *namer) longHash(parent, elem string) string {
	h := hmac.New(sha256.New, n.mac)
	h.Write([]byte("long\x00"))
	h.Write([]byte(parent))
	h.Write([]byte{0})
	h.Write([]byte(elem))
	return b32.EncodeToString(h.Sum(nil)[:20])
}

// isLong says whether elem is stored in the long form.
func (n *namer) isLong(elem string) bool { return len(elem) > n.maxShort }

// side is the stored name of the side object of a long element elem of
// the plaintext directory parent, stored as sparent; and its content.
func (n *namer) side(parent, sparent, elem string) (name, content string) {
	return backend.Join(sparent, sidePrefix+n.longHash(parent, elem)), n.short(parent, elem)
}

// openLong decrypts a long element from its side object's content and
// checks that it is the element the stored name stands for.
func (n *namer) openLong(parent, stored, content string) (string, bool) {
	elem, ok := n.open(parent, content)
	if !ok || longPrefix+n.longHash(parent, elem) != stored {
		return "", false
	}
	return elem, true
}

// ensureLong writes the side objects of name's long elements that this
// process has not seen yet, before a call that may create name.
func (c *Storage) ensureLong(ctx context.Context, name string) error {
	if name == "." || !c.n.anyLong(name) {
		return nil
	}
	parent, sparent := ".", "."
	for e := range strings.SplitSeq(name, "/") {
		if c.n.isLong(e) {
			side, content := c.n.side(parent, sparent, e)
			if _, done := c.sides.Load(side); !done {
				err := backend.CreateFile(ctx, c.inner, side, []byte(content))
				if err != nil && !errors.Is(err, fs.ErrExist) {
					return err
				}
				c.sides.Store(side, true)
			}
		}
		sparent = backend.Join(sparent, c.n.elem(parent, e))
		parent = backend.Join(parent, e)
	}
	return nil
}

// dropLong removes the side object of name's last element once name is
// gone, when that element is long.
func (c *Storage) dropLong(ctx context.Context, name string) {
	parent, base := backend.Dir(name), backend.Base(name)
	if !c.n.isLong(base) {
		return
	}
	side, _ := c.n.side(parent, c.n.path(parent), base)
	c.sides.Delete(side)
	backend.RemoveFile(ctx, c.inner, side)
}

// listName decrypts a stored element listed in dir (plaintext) stored as
// sdir; ok is false for what is not a file or directory of this key. A
// long name whose side object is missing or fails to open is ErrCorrupt.
func (c *Storage) listName(ctx context.Context, dir, sdir, stored string) (string, bool, error) {
	switch {
	case strings.HasPrefix(stored, sidePrefix):
		return "", false, nil
	case strings.HasPrefix(stored, longPrefix):
		side := backend.Join(sdir, sidePrefix+stored[len(longPrefix):])
		b, err := c.inner.ReadFile(ctx, side)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w: the name of %s is lost (side object %s missing)", ErrCorrupt, stored, side)
			}
			return "", false, err
		}
		elem, ok := c.n.openLong(dir, stored, string(b))
		if !ok {
			return "", false, fmt.Errorf("%w: side object %s of a long name fails authentication", ErrCorrupt, side)
		}
		return elem, true, nil
	}
	elem, ok := c.n.open(dir, stored)
	return elem, ok, nil
}
