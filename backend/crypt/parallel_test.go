package crypt

import (
	"bytes"
	"crypto/rand"
	"testing"
)

// A whole write sealed on many cores opens as one sealed on one: the same
// frames, kinds and places, for sizes around the frame and the parallel
// thresholds.
func TestSealWholeParallel(t *testing.T) {
	s, err := newSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	c := &Storage{s: s}
	for _, n := range []int{0, 1, FrameSize, parallelFrames*FrameSize - 1, parallelFrames * FrameSize, parallelFrames*FrameSize + 1, 64*FrameSize + 17, 100 * FrameSize} {
		p := make([]byte, n)
		rand.Read(p)
		ct := s.sealWhole([]byte("prefix"), "blobs/x", p)
		if !bytes.HasPrefix(ct, []byte("prefix")) || len(ct) != len("prefix")+sealedSize(n) {
			t.Fatalf("%d bytes: sealed to %d bytes, want %d after the prefix", n, len(ct), sealedSize(n))
		}
		serial := s.sealFrames(nil, "blobs/x", p, 0, true)
		if len(serial) != len(ct)-len("prefix") {
			t.Fatalf("%d bytes: parallel %d bytes, serial %d", n, len(ct)-len("prefix"), len(serial))
		}
		got, err := c.openAll("blobs/x", ct[len("prefix"):])
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("%d bytes: opened %d bytes, %v", n, len(got), err)
		}
		if wholeSize(int64(len(serial))) != int64(n) {
			t.Fatalf("%d bytes: size from the object %d", n, wholeSize(int64(len(serial))))
		}
	}
}
