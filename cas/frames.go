package cas

import (
	"encoding/binary"
	"fmt"
)

// A block record a Batch writes holds its blobs in several zstd frames
// back to back, a frame ended at the first blob boundary past
// blockFrameMin original bytes: reading one blob decodes its frame, not
// the whole block. A whole-process dry run or diff reads one old version
// in each of ten blocks, and decoding all of each was most of its time in
// this package. Concatenated frames are a valid zstd stream, so readers
// that decode the whole record (GC, older binaries) read it unchanged;
// what a frame costs is its header and the matches it cannot make into the
// frames before it, on hot packs only (GC compresses blocks again).
const blockFrameMin = 16 << 10

// zstdMagic opens every zstd frame (RFC 8878, 3.1.1).
const zstdMagic = 0xFD2FB528

// frameSpan is one zstd frame of a block record's payload: bytes
// [off, end) of the payload, original bytes [at, at+size) of the block.
type frameSpan struct {
	off, end int64
	at, size int64
}

// blockFrames walks the frames of a block's payload by their headers,
// which say each frame's original length. ok is false where the walk
// cannot tell (a frame without its length, a header it does not know, or
// lengths that do not add up to total): the caller then decodes the whole
// record, whose decoder judges it.
func blockFrames(p []byte, total int64) (spans []frameSpan, ok bool) {
	var off, at int64
	for off < int64(len(p)) {
		end, size, ok := frameExtent(p[off:])
		if !ok || size > total-at {
			return nil, false
		}
		spans = append(spans, frameSpan{off: off, end: off + end, at: at, size: size})
		off, at = off+end, at+size
	}
	return spans, at == total
}

// frameExtent reads the frame at the start of p: its stored length and
// its content size, from its header and its blocks' headers.
func frameExtent(p []byte) (n, size int64, ok bool) {
	if len(p) < 5 || binary.LittleEndian.Uint32(p) != zstdMagic {
		return 0, 0, false
	}
	fhd := p[4]
	single := fhd&0x20 != 0
	if fhd&0x08 != 0 { // reserved bit
		return 0, 0, false
	}
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	pos += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 && single {
		fcsLen = 1
	}
	if fcsLen == 0 || pos+fcsLen > len(p) {
		return 0, 0, false
	}
	var le [8]byte
	copy(le[:], p[pos:pos+fcsLen])
	fcs := binary.LittleEndian.Uint64(le[:])
	if fcsLen == 2 {
		fcs += 256
	}
	if fcs > maxBlock {
		return 0, 0, false
	}
	pos += fcsLen
	for {
		if pos+3 > len(p) {
			return 0, 0, false
		}
		bh := uint32(p[pos]) | uint32(p[pos+1])<<8 | uint32(p[pos+2])<<16
		pos += 3
		switch (bh >> 1) & 3 {
		case 0, 2: // raw, compressed
			pos += int(bh >> 3)
		case 1: // RLE
			pos++
		default:
			return 0, 0, false
		}
		if pos > len(p) {
			return 0, 0, false
		}
		if bh&1 != 0 {
			break
		}
	}
	if fhd&0x04 != 0 { // content checksum
		pos += 4
		if pos > len(p) {
			return 0, 0, false
		}
	}
	return int64(pos), int64(fcs), true
}

// decodeFrames decodes the frames of a block record that hold original
// bytes [from, to), when the record has more than one frame; ok is false
// when it has not, or its frames cannot be told apart (see blockFrames).
func (s *Store) decodeFrames(rec []byte, h header, from, to int64) (cachedBlock, bool, error) {
	p := rec[headerSize:]
	spans, ok := blockFrames(p, h.size)
	if !ok || len(spans) < 2 || from < 0 || to > h.size || from > to {
		return cachedBlock{}, false, nil
	}
	i, j := 0, len(spans)-1
	for i < j && spans[i].at+spans[i].size <= from {
		i++
	}
	for j > i && spans[j].at >= to {
		j--
	}
	n := spans[j].at + spans[j].size - spans[i].at
	dec, err := s.getDecoder()
	if err != nil {
		return cachedBlock{}, false, err
	}
	defer s.putDecoder(dec)
	out, err := dec.DecodeAll(p[spans[i].off:spans[j].end], make([]byte, 0, n+decodeSlack))
	if err != nil || int64(len(out)) != n {
		return cachedBlock{}, false, fmt.Errorf("%w: frames of %d bytes, headers record %d: %v", ErrCorrupt, len(out), n, err)
	}
	whole := i == 0 && j == len(spans)-1
	alone := i == j && spans[i].at == from && spans[i].size == to-from
	return cachedBlock{data: out, at: spans[i].at, full: whole, alone: alone, frames: true}, true, nil
}

// appendFrames appends blobs (their bytes back to back in buf, of sizes)
// to dst as zstd frames of blockFrameMin or more original bytes, each
// ending at a blob's end.
func (s *Store) appendFrames(dst, buf []byte, sizes []int64, fast bool) ([]byte, error) {
	enc, err := s.getEncoderFor(fast)
	if err != nil {
		return dst, err
	}
	defer s.putEncoderFor(enc, fast)
	var start, end int64
	for i, n := range sizes {
		end += n
		if end > start && (end-start >= blockFrameMin || i == len(sizes)-1) {
			dst = enc.EncodeAll(buf[start:end], dst)
			start = end
		}
	}
	return dst, nil
}
