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
	read := make(chan int, (len(out)+sumChunk-1)/sumChunk)
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		prev := 0
		for end := range read {
			h.Write(out[prev:end])
			prev = end
		}
	}()
	n := 0
	var err error
	for n < len(out) && err == nil {
		var k int
		k, err = io.ReadFull(r, out[n:min(n+sumChunk, len(out))])
		n += k
		read <- n
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // short of len(out), as io.ReadFull says
	}
	close(read)
	<-hashed
	var sum [32]byte
	h.Sum(sum[:0])
	return n, sum, err
}
