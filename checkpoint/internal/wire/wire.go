package wire

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"unsafe"

	"github.com/trovekit/trove/cas"
)

// ErrShort is what a Reader latches when its input ends early or holds a
// value it cannot: each codec reports it as its own damage.
var ErrShort = errors.New("wire: input too short or malformed")

// Reader decodes varints, latching the first error. With S (B's bytes
// as one string) the strings it returns share S's memory.
type Reader struct {
	B   []byte
	Err error
	S   string
	// Arena, when not nil, holds the refs Ref returns.
	Arena []byte
}

// NewReader reads b; the decoded bytes are the caller's and never written
// again, so strings can share them.
func NewReader(b []byte) *Reader {
	return &Reader{B: b, S: unsafe.String(unsafe.SliceData(b), len(b))}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Err = ErrShort
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Varint reads a signed varint: a zig-zag encoded Uvarint, as
// binary.AppendVarint writes it.
func (r *Reader) Varint() int64 {
	u := r.Uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// Str reads what AppendStr wrote.
func (r *Reader) Str() string {
	b := r.Bytes()
	if r.S != "" && b != nil {
		// A slice of the one string of the whole input: no allocation.
		at := len(r.S) - len(r.B) - len(b)
		return r.S[at : at+len(b)]
	}
	return string(b)
}

// Bytes reads a length-prefixed byte string, a slice of the input.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.Err != nil || n > uint64(len(r.B)) {
		r.Err = ErrShort
		return nil
	}
	b := r.B[:n:n]
	r.B = r.B[n:]
	return b
}

// Bool reads what AppendBool wrote.
func (r *Reader) Bool() bool {
	if r.Err != nil || len(r.B) == 0 {
		r.Err = ErrShort
		return false
	}
	v := r.B[0]
	r.B = r.B[1:]
	return v == 1
}

// Ref reads what AppendRef wrote, as a ref string.
func (r *Reader) Ref() string {
	if r.Err != nil || len(r.B) < 33 {
		r.Err = ErrShort
		return ""
	}
	var buf [RefLen]byte
	n := copy(buf[:], "blob:")
	n += copy(buf[n:], cas.Algorithm(r.B[0]).String())
	if n+1+64 > len(buf) {
		r.Err = ErrShort
		return ""
	}
	buf[n] = ':'
	hex.Encode(buf[n+1:], r.B[1:33])
	r.B = r.B[33:]
	if r.Arena != nil {
		// One allocation for many refs; bytes once appended never change.
		at := len(r.Arena)
		r.Arena = append(r.Arena, buf[:n+1+64]...)
		return unsafe.String(&r.Arena[at], n+1+64)
	}
	return string(buf[:n+1+64])
}

// AppendStr writes s, length first.
func AppendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBool writes v as one byte.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// RefLen is the length of a ref as checkpoint writes it, of either
// algorithm (sha256 and blake3 are both six letters).
const RefLen = len("blob:sha256:") + 64

// AppendRef writes the ref s as its algorithm byte and 32-byte digest; s
// not a ref is cas.ParseRef's error.
func AppendRef(b []byte, s string) ([]byte, error) {
	if algo, d, ok := FastRef(s); ok {
		b = append(b, byte(algo))
		return append(b, d[:]...), nil
	}
	r, err := cas.ParseRef(s)
	if err != nil {
		return nil, err
	}
	d := r.Digest()
	b = append(b, byte(r.Algorithm()))
	return append(b, d[:]...), nil
}

// FastRef decodes the form checkpoint writes, blob:<algo>:<64 lowercase
// hex>, without cas.ParseRef's allocations: manifests hold thousands.
func FastRef(s string) (cas.Algorithm, [32]byte, bool) {
	var d [32]byte
	if len(s) != RefLen || s[:5] != "blob:" || s[11] != ':' {
		return 0, d, false
	}
	var algo cas.Algorithm
	switch s[5:11] {
	case "sha256":
		algo = cas.SHA256
	case "blake3":
		algo = cas.BLAKE3
	default:
		return 0, d, false
	}
	h := s[12:]
	var bad byte
	for i := range d {
		hi, lo := unhex[h[2*i]], unhex[h[2*i+1]]
		bad |= hi | lo
		d[i] = hi<<4 | lo&0xf
	}
	if bad&0xf0 != 0 {
		return 0, d, false
	}
	return algo, d, true
}

// unhex maps lowercase hex digits to their value, anything else to 0xff.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()
