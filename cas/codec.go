package cas

import (
	"errors"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// zstd's default window for our level; decoders refuse larger windows, so a
// hostile frame cannot make a decoder allocate more than this for history.
const zstdWindow = 8 << 20

// parallelMin is the size from which Put compresses beside the hash.
const parallelMin = 1 << 20

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

func (s *Store) getEncoder() (*zstd.Encoder, error) {
	if e, ok := s.encoders.get(); ok {
		return e, nil
	}
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow),
		// The digest checks every byte; a second checksum buys nothing.
		zstd.WithEncoderCRC(false))
}

func (s *Store) putEncoder(e *zstd.Encoder) {
	e.Reset(nil)
	s.encoders.put(e)
}

func (s *Store) getDecoder() (*zstd.Decoder, error) {
	if d, ok := s.decoders.get(); ok {
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
	s.decoders.put(d)
}

// maxPooledBuf keeps the free list from pinning the buffers of huge blobs.
const maxPooledBuf = 16 << 20

func (s *Store) getBuf() *[]byte {
	if b, ok := s.bufs.get(); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Store) putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		s.bufs.put(b)
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
		return true, nil
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

var errStopped = errors.New("encode cancelled")

// encode appends the stored form of data (header and payload) to dst. A
// non-nil stop is polled between chunks so a cancelled encode ends early.
func (s *Store) encode(dst, data []byte, stop *atomic.Bool) ([]byte, Codec, error) {
	start := len(dst)
	ok, err := s.compressible(data)
	if err != nil {
		return dst, 0, err
	}
	if ok {
		enc, err := s.getEncoder()
		if err != nil {
			return dst, 0, err
		}
		dst = appendHeader(dst, CodecZstd, int64(len(data)))
		if stop == nil {
			dst = enc.EncodeAll(data, dst)
		} else {
			w := &appendWriter{b: dst}
			enc.ResetContentSize(w, int64(len(data)))
			const chunk = 1 << 20
			for off := 0; off < len(data) && err == nil; off += chunk {
				if stop.Load() {
					err = errStopped
					break
				}
				_, err = enc.Write(data[off:min(off+chunk, len(data))])
			}
			if err == nil {
				err = enc.Close()
			}
			dst = w.b
		}
		s.putEncoder(enc)
		if err != nil {
			return dst[:start], 0, err
		}
		if saves(len(dst)-start-headerSize, len(data)) {
			return dst, CodecZstd, nil
		}
		dst = dst[:start]
	}
	dst = appendHeader(dst, CodecRaw, int64(len(data)))
	return append(dst, data...), CodecRaw, nil
}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// bgEncode is an encode running on its own goroutine.
type bgEncode struct {
	s      *Store
	buf    *[]byte
	stop   atomic.Bool
	done   chan struct{}
	stored []byte
	err    error
}

func (s *Store) startEncode(data []byte) *bgEncode {
	bg := &bgEncode{s: s, buf: s.getBuf(), done: make(chan struct{})}
	go func() {
		defer close(bg.done)
		bg.stored, _, bg.err = s.encode((*bg.buf)[:0], data, &bg.stop)
		*bg.buf = bg.stored
	}()
	return bg
}

// wait returns the stored form; it is valid until cancel.
func (bg *bgEncode) wait() ([]byte, error) {
	<-bg.done
	return bg.stored, bg.err
}

// cancel stops the encode if it still runs, waits for it (the caller's data
// must not be read after Put returns) and recycles its buffer.
func (bg *bgEncode) cancel() {
	bg.stop.Store(true)
	<-bg.done
	bg.s.putBuf(bg.buf)
}
