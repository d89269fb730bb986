package cas

import (
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// zstd's default window for our level; decoders refuse larger windows, so a
// hostile frame cannot make a decoder allocate more than this for history.
const zstdWindow = 8 << 20

// freeList keeps up to cap(ch) reusable values for the life of a Store.
type freeList[T any] struct{ ch chan T }

func (f *freeList[T]) init(n int) { f.ch = make(chan T, n) }

func (f *freeList[T]) get() (T, bool) {
	select {
	case v := <-f.ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func (f *freeList[T]) put(v T) {
	select {
	case f.ch <- v:
	default:
	}
}

// coders are kept for the whole process, not per Store: an encoder is over
// a megabyte of tables, and a program that opens a store per operation (the
// CLI, a checkpoint.Manager per snapshot) allocated and faulted them in
// every time, most of a small snapshot's page faults. A channel, not a
// sync.Pool, so that a GC does not empty it in the middle of a snapshot. A
// coder keeps nothing of its last use (EncodeAll leaves no state, streams
// and decoders are reset before they are put back).
type coders struct {
	encoders freeList[*zstd.Encoder]
	fast     freeList[*zstd.Encoder] // see getEncoderFor
	decoders freeList[*zstd.Decoder] // for stores of DefaultMaxBlobSize
	bufs     freeList[*[]byte]
	// blocks are buffers of blockBufSize: a block being gathered, or its
	// record. Grown from nothing by append, the two were a first snapshot's
	// largest garbage (about 200 MB for 100 MB of files) and 4% of its CPU.
	blocks freeList[[]byte]
	// packs are buffers of packBufCap that packs are gathered in (see
	// packWriter.room): two, one filling while the other is written.
	packs freeList[[]byte]
}

func newCoders() *coders {
	n := min(runtime.GOMAXPROCS(0), 4)
	c := &coders{}
	c.encoders.init(n)
	c.fast.init(n)
	c.decoders.init(n)
	c.bufs.init(2 * n)
	c.blocks.init(2 * n)
	c.packs.init(2)
	return c
}

// shared is every Store's coders but those of a store whose blobs may be
// larger than default, whose decoders accept more memory.
var shared = newCoders()

func (s *Store) getEncoder() (*zstd.Encoder, error) { return s.getEncoderFor(false) }

// getEncoderFor returns an encoder at zstd's default level, or with fast
// at its fastest: for the blocks of small blobs a batch writes (hot packs),
// which a GC compresses again at its best level when it repacks them, as
// git writes loose objects at zlib's level 1 and packs them better later.
// On source text it is a fifth faster for 7% more bytes, and compression is
// most of a first snapshot's work. What GC keeps as written (a blob of
// solidMax or more) is compressed at the default level.
func (s *Store) getEncoderFor(fast bool) (*zstd.Encoder, error) {
	list, level := &s.coders.encoders, zstd.SpeedDefault
	if fast {
		list, level = &s.coders.fast, zstd.SpeedFastest
	}
	if e, ok := list.get(); ok {
		return e, nil
	}
	return newEncoder(level)
}

// newEncoder returns an encoder of one frame at a time at level.
func newEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		// The window first: set after it, the fastest level would cut
		// zstd blocks at 64 KiB, so a block record of up to 128 KiB took
		// the path with history, and each encoder a 16 MiB history buffer
		// on its first such record.
		zstd.WithWindowSize(zstdWindow),
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(1),
		// The digest checks every byte; a second checksum buys nothing.
		zstd.WithEncoderCRC(false))
}

// putEncoderFor keeps e, got with fast, for reuse.
func (s *Store) putEncoderFor(e *zstd.Encoder, fast bool) {
	if fast {
		s.coders.fast.put(e)
		return
	}
	s.coders.encoders.put(e)
}

// putEncoder keeps e for reuse. EncodeAll leaves nothing behind; a stream
// resets it to nil first (see putStreamEncoder). Resetting one only ever
// used by EncodeAll would allocate its stream state, over a megabyte.
func (s *Store) putEncoder(e *zstd.Encoder) { s.putEncoderFor(e, false) }

// putStreamEncoder keeps e after a stream, dropping its writer.
func (s *Store) putStreamEncoder(e *zstd.Encoder) {
	e.Reset(nil)
	s.putEncoder(e)
}

func (s *Store) getDecoder() (*zstd.Decoder, error) {
	if d, ok := s.coders.decoders.get(); ok {
		return d, nil
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(zstdWindow),
		zstd.WithDecoderMaxMemory(uint64(max(s.cfg.maxBlobSize, zstdWindow))),
		// DecodeAll writes at most cap(dst): the recorded length.
		zstd.WithDecodeAllCapLimit(true),
		// Never decode a whole buffer up front: output is bounded by us.
		zstd.WithDecodeBuffersBelow(0))
}

func (s *Store) putDecoder(d *zstd.Decoder) {
	_ = d.Reset(nil)
	s.coders.decoders.put(d)
}

// blockBufSize holds a whole block: it is closed at solidBlock or more,
// after a blob of less than solidMax, and its record is no larger (a
// record that does not shrink is not kept, see saves) but for a header.
const blockBufSize = solidBlock + solidMax + headerSize

func (s *Store) getBlockBuf() []byte {
	if b, ok := s.coders.blocks.get(); ok {
		return b
	}
	return make([]byte, 0, blockBufSize)
}

// putBlockBuf keeps b, no longer used, for another block; one grown past
// blockBufSize (a zstd frame of incompressible bytes) is dropped.
func (s *Store) putBlockBuf(b []byte) {
	if cap(b) == blockBufSize {
		s.coders.blocks.put(b[:0])
	}
}

// maxPooledBuf keeps the free list from pinning the buffers of huge blobs.
const maxPooledBuf = 16 << 20

func (s *Store) getBuf() *[]byte {
	if b, ok := s.coders.bufs.get(); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Store) putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		s.coders.bufs.put(b)
	}
}

// compressible guesses from a sample whether zstd is worth running on all of
// data: images and archives are already compressed, and compressing megabytes
// of them only to throw the result away costs more than the write.
func (s *Store) compressible(data []byte) (bool, error) {
	if len(data) < 64 {
		return false, nil
	}
	const sample = 64 << 10
	if len(data) <= 4*sample {
		// Random or compressed bytes are told by their byte entropy
		// for far less than compressing them only to throw that away.
		return looksCompressible(data), nil
	}
	enc, err := s.getEncoder()
	if err != nil {
		return false, err
	}
	defer s.putEncoder(enc)
	bp := s.getBuf()
	defer s.putBuf(bp)
	*bp = enc.EncodeAll(data[:sample], (*bp)[:0])
	return saves(len(*bp), sample), nil
}

// saves reports whether a compressed length is worth its decompression: at
// least 1/32 smaller than the original.
func saves(compressed, original int) bool { return compressed <= original-original/32 }

// encode appends the stored form of data (header and payload) to dst.
func (s *Store) encode(dst, data []byte) ([]byte, Codec, error) { return s.encodeFor(dst, data, false) }

// encodeFor is encode, at the fastest level with fast (see getEncoderFor).
func (s *Store) encodeFor(dst, data []byte, fast bool) ([]byte, Codec, error) {
	ok, err := s.compressible(data)
	if err != nil {
		return dst, 0, err
	}
	if ok {
		start := len(dst)
		dst = appendHeader(dst, CodecZstd, int64(len(data)))
		if dst, err = s.frame(dst, data, fast); err != nil {
			return dst[:start], 0, err
		}
		if saves(len(dst)-start-headerSize, len(data)) {
			return dst, CodecZstd, nil
		}
		dst = dst[:start]
	}
	return appendRaw(dst, data), CodecRaw, nil
}

func appendRaw(dst, data []byte) []byte {
	dst = appendHeader(dst, CodecRaw, int64(len(data)))
	return append(dst, data...)
}

// frame appends one zstd frame of data to dst, at the fastest level with
// fast (see getEncoderFor).
func (s *Store) frame(dst, data []byte, fast bool) ([]byte, error) {
	enc, err := s.getEncoderFor(fast)
	if err != nil {
		return dst, err
	}
	defer s.putEncoderFor(enc, fast)
	return enc.EncodeAll(data, dst), nil
}
