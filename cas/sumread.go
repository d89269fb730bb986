package cas

import "io"

// sumChunk is the piece of a big raw blob that is hashed while the next one
// is read.
const sumChunk = 256 << 10

// readSum reads len(out) bytes of r into out and returns how many it read
// and their digest under algo. From two chunks on, a goroutine hashes each
// chunk while the next is read: where a read costs CPU (an encrypted store
// decrypts it) or time (a bucket), the two overlap on a second core instead
// of adding up. The digest is of the bytes read; a short read returns its
// error with the count.
func readSum(r io.Reader, out []byte, algo Algorithm) (int, [32]byte, error) {
	if len(out) < 2*sumChunk {
		n, err := io.ReadFull(r, out)
		if err != nil {
			return n, [32]byte{}, err
		}
		return n, algo.sum(out), nil
	}
	h := algo.newHash()
	read := make(chan int, len(out)/sumChunk+1)
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		prev := 0
		for end := range read {
			h.Write(out[prev:end])
			prev = end
		}
	}()
	// A chunk is handed over once it is whole. Each read may fill up to
	// the end of the next chunk, so that what a reader yields at once (a
	// frame of an encrypted store) always fits and lands straight in out.
	n, sent := 0, 0
	var err error
	for n < len(out) && err == nil {
		var k int
		k, err = r.Read(out[n:min(len(out), sent+2*sumChunk)])
		n += k
		if n-sent >= sumChunk || n > sent && (n == len(out) || err != nil) {
			read <- n
			sent = n
		}
	}
	switch {
	case n == len(out):
		err = nil // as io.ReadFull
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	close(read)
	<-hashed
	var sum [32]byte
	h.Sum(sum[:0])
	return n, sum, err
}
