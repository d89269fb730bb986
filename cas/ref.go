package cas

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Algorithm is a digest algorithm for refs.
type Algorithm uint8

// The supported algorithms. The zero Algorithm is invalid.
const (
	SHA256 Algorithm = iota + 1 // the default; the form pi session v3 files carry
	BLAKE3
)

var algoNames = [...]string{SHA256: "sha256", BLAKE3: "blake3"}

// String returns "sha256" or "blake3".
func (a Algorithm) String() string {
	if a.valid() {
		return algoNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

func (a Algorithm) valid() bool { return a == SHA256 || a == BLAKE3 }

// Linked reports whether this build can hash with a: SHA256 always,
// BLAKE3 unless built with the tag trove_noblake3.
func (a Algorithm) Linked() bool { return a == SHA256 || a == BLAKE3 && blake3Linked }

// usable is nil when a can be hashed with here, else an error wrapping
// ErrAlgorithmUnavailable (or ErrInvalidRef for no algorithm). Every
// path that hashes checks it first.
func (a Algorithm) usable() error {
	switch {
	case !a.valid():
		return fmt.Errorf("%w: unknown algorithm %v", ErrInvalidRef, a)
	case !a.Linked():
		return fmt.Errorf("%w: %v (this build has the tag trove_noblake3; trove-cloud, or a build without the tag, has it)", ErrAlgorithmUnavailable, a)
	}
	return nil
}

func (a Algorithm) newHash() hash.Hash {
	if a == BLAKE3 {
		return newBLAKE3()
	}
	return sha256.New()
}

func (a Algorithm) sum(data []byte) [32]byte {
	if a == BLAKE3 {
		return sumBLAKE3(data)
	}
	return sha256.Sum256(data)
}

func parseAlgorithm(s string) (Algorithm, bool) {
	for a, name := range algoNames {
		if a != 0 && name == s {
			return Algorithm(a), true
		}
	}
	return 0, false
}

// Ref names a blob by the digest of its original bytes. The zero Ref is
// invalid; get valid ones from ParseRef, Sum or a Put.
type Ref struct {
	algo   Algorithm
	digest [32]byte
}

const refPrefix = "blob:"

// Sum returns the ref of data under algo.
func Sum(algo Algorithm, data []byte) (Ref, error) {
	if err := algo.usable(); err != nil {
		return Ref{}, err
	}
	return Ref{algo: algo, digest: algo.sum(data)}, nil
}

// SumReader is Sum of everything r yields, read in chunks.
func SumReader(algo Algorithm, r io.Reader) (Ref, error) {
	if err := algo.usable(); err != nil {
		return Ref{}, fmt.Errorf("cas: %w", err)
	}
	h := algo.newHash()
	if _, err := io.Copy(h, r); err != nil {
		return Ref{}, err
	}
	return refFromHash(algo, h), nil
}

func refFromHash(algo Algorithm, h hash.Hash) Ref {
	r := Ref{algo: algo}
	h.Sum(r.digest[:0])
	return r
}

// ParseRef parses blob:<algo>:<64 lowercase hex> and nothing else: no spaces,
// no uppercase, no other prefix or suffix. Errors wrap ErrInvalidRef.
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, refPrefix)
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q does not start with %q", ErrInvalidRef, clip(s), refPrefix)
	}
	name, hexDigest, ok := strings.Cut(rest, ":")
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q has no algorithm", ErrInvalidRef, clip(s))
	}
	algo, ok := parseAlgorithm(name)
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q: unknown algorithm %q", ErrInvalidRef, clip(s), clip(name))
	}
	r, err := parseDigest(algo, hexDigest)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %q: %v", ErrInvalidRef, clip(s), err)
	}
	return r, nil
}

func parseDigest(algo Algorithm, h string) (Ref, error) {
	if len(h) != 64 {
		return Ref{}, fmt.Errorf("digest has %d characters, want 64", len(h))
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Ref{}, fmt.Errorf("digest character %d is not lowercase hex", i)
		}
	}
	r := Ref{algo: algo}
	if _, err := hex.Decode(r.digest[:], []byte(h)); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// clip keeps hostile input out of error messages beyond a sane length.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// String returns blob:<algo>:<hex>, or "blob:invalid" for the zero Ref.
func (r Ref) String() string {
	if !r.algo.valid() {
		return "blob:invalid"
	}
	return refPrefix + r.algo.String() + ":" + r.Hex()
}

// Hex returns the digest in lowercase hex.
func (r Ref) Hex() string { return hex.EncodeToString(r.digest[:]) }

// Algorithm returns the digest algorithm.
func (r Ref) Algorithm() Algorithm { return r.algo }

// Digest returns the raw digest.
func (r Ref) Digest() [32]byte { return r.digest }

// IsZero reports whether r is the zero (invalid) Ref.
func (r Ref) IsZero() bool { return r == Ref{} }

func (r Ref) valid() bool { return r.algo.valid() }

// MarshalText implements encoding.TextMarshaler, so refs go into JSON as strings.
func (r Ref) MarshalText() ([]byte, error) {
	if !r.valid() {
		return nil, fmt.Errorf("%w: zero ref", ErrInvalidRef)
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseRef.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}
