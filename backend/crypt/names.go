package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"hash"
	"io"
	"strings"
	"sync"

	"github.com/trovekit/trove/backend"
)

// Names are encrypted one element at a time, deterministically, so that a
// name is stored under the same object name each time (dedup, lookups
// without listing): a synthetic IV, the first 16 bytes of
// HMAC-SHA256(nameMAC, parent 0x00 element), keys AES-256-CTR over the
// element, and the stored element is base32 (lower case, no padding: safe
// on case-insensitive file systems) of IV || ciphertext. Binding the parent
// keeps equal elements in different directories apart; decrypting checks
// the IV again, so a stored name trove did not write is not listed.
const ivSize = 16

var b32 = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

type namer struct {
	mac      []byte
	macs     sync.Pool // of HMAC-SHA256 under mac: keyed once, not per name
	block    cipher.Block
	maxShort int // the longest element stored in the short form
}

func newNamer(macKey, encKey []byte, maxShort int) (*namer, error) {
	b, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	n := &namer{mac: macKey, block: b, maxShort: maxShort}
	n.macs.New = func() any { return hmac.New(sha256.New, macKey) }
	return n, nil
}

func (n *namer) iv(parent, elem string) []byte {
	h := n.macs.Get().(hash.Hash)
	h.Reset()
	io.WriteString(h, parent)
	h.Write([]byte{0})
	io.WriteString(h, elem)
	sum := h.Sum(make([]byte, 0, sha256.Size))
	n.macs.Put(h)
	return sum[:ivSize]
}

// elem is the stored form of elem in the directory parent (plaintext):
// the short form, or for a long element the long one (longnames.go).
func (n *namer) elem(parent, elem string) string {
	if n.isLong(elem) {
		return longPrefix + n.longHash(parent, elem)
	}
	return n.short(parent, elem)
}

// short is the short form: base32 of IV || ciphertext.
func (n *namer) short(parent, elem string) string {
	buf := make([]byte, ivSize+len(elem))
	copy(buf, n.iv(parent, elem))
	cipher.NewCTR(n.block, buf[:ivSize]).XORKeyStream(buf[ivSize:], []byte(elem))
	return b32.EncodeToString(buf)
}

// path is the stored form of a plaintext name; "." stays ".".
func (n *namer) path(name string) string {
	if name == "." {
		return "."
	}
	var b strings.Builder
	parent := "."
	for e := range strings.SplitSeq(name, "/") {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(n.elem(parent, e))
		parent = backend.Join(parent, e)
	}
	return b.String()
}

// anyLong says whether an element of name is long.
func (n *namer) anyLong(name string) bool {
	for e := range strings.SplitSeq(name, "/") {
		if n.isLong(e) {
			return true
		}
	}
	return false
}

// open decrypts a stored element of the directory parent; ok is false for
// a name this key did not write.
func (n *namer) open(parent, stored string) (string, bool) {
	buf, err := b32.DecodeString(stored)
	if err != nil || len(buf) <= ivSize {
		return "", false
	}
	elem := make([]byte, len(buf)-ivSize)
	cipher.NewCTR(n.block, buf[:ivSize]).XORKeyStream(elem, buf[ivSize:])
	if !hmac.Equal(n.iv(parent, string(elem)), buf[:ivSize]) {
		return "", false
	}
	return string(elem), true
}

// maxPlainElem is the longest element whose stored form fits in inner bytes.
func maxPlainElem(inner int) int {
	return max(inner*5/8-ivSize, 0)
}
