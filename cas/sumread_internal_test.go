package cas

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// readSum's digest is the one-shot digest of the bytes read, whether it
// hashed them as they came (two chunks and more) or after; a stream that
// ends early or fails returns the count and the error.
func TestReadSum(t *testing.T) {
	data := make([]byte, 3*sumChunk+123)
	rand.Read(data)
	for _, algo := range []Algorithm{SHA256, BLAKE3} {
		for _, n := range []int{0, 1, sumChunk, 2*sumChunk - 1, 2 * sumChunk, 2*sumChunk + 1, len(data)} {
			// A reader of odd-sized pieces, as a decrypting store's is.
			r := iotest.HalfReader(bytes.NewReader(data[:n]))
			out := make([]byte, n)
			k, sum, err := readSum(r, out, algo)
			if err != nil || k != n || !bytes.Equal(out, data[:n]) || sum != algo.sum(data[:n]) {
				t.Fatalf("%v, %d bytes: read %d, %v; digest right: %v", algo, n, k, err, sum == algo.sum(data[:n]))
			}
		}
		for _, n := range []int{sumChunk, 2*sumChunk + 5} {
			out := make([]byte, len(data))
			k, _, err := readSum(bytes.NewReader(data[:n]), out, algo)
			if k != n || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%v, stream of %d for %d: read %d, %v", algo, n, len(out), k, err)
			}
		}
		boom := errors.New("boom")
		out := make([]byte, len(data))
		r := io.MultiReader(bytes.NewReader(data[:2*sumChunk+7]), iotest.ErrReader(boom))
		if k, _, err := readSum(r, out, algo); k != 2*sumChunk+7 || !errors.Is(err, boom) {
			t.Fatalf("%v, failing stream: read %d, %v", algo, k, err)
		}
	}
}
