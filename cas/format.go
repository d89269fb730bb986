package cas

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Codec says how a blob's bytes are stored.
type Codec uint8

// Codecs.
const (
	CodecRaw  Codec = 0
	CodecZstd Codec = 1
)

// codecSolid marks, in a pack index only, a blob stored as a slice of a
// block record: zstd frames of several small blobs back to back, which
// compresses far better than each alone (they share words and syntax).
const codecSolid Codec = 2

// codecSolidNext is codecSolid in a version 2 index for the blob that
// follows the previous entry's in the same block: it saves the numbers.
const codecSolidNext Codec = 3

func (c Codec) String() string {
	switch c {
	case CodecRaw:
		return "raw"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// Stored object (loose, or one record of a pack):
//
//	header  16 bytes: "trvb", version 1, codec, flags, 0, original length (uint64 LE)
//	payload the original bytes, raw or as one zstd frame
//	trailer 16 bytes, only with flagTrailer: original length (uint64 LE), "trvbtail"
//
// A streamed Put learns the length only at the end and cannot seek back, so it
// sets flagTrailer and leaves the header's length 0.
const (
	headerSize  = 16
	trailerSize = 16
	formatV1    = 1
	flagTrailer = 1
)

var (
	headerMagic  = [4]byte{'t', 'r', 'v', 'b'}
	trailerMagic = [8]byte{'t', 'r', 'v', 'b', 't', 'a', 'i', 'l'}
)

type header struct {
	codec   Codec
	trailer bool
	size    int64 // original length; -1 when it is in the trailer
}

func appendHeader(dst []byte, codec Codec, size int64) []byte {
	var h [headerSize]byte
	copy(h[:], headerMagic[:])
	h[4] = formatV1
	h[5] = byte(codec)
	if size < 0 {
		h[6] = flagTrailer
	} else {
		binary.LittleEndian.PutUint64(h[8:], uint64(size))
	}
	return append(dst, h[:]...)
}

func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, fmt.Errorf("%w: object shorter than its header", ErrCorrupt)
	}
	if !bytes.Equal(b[:4], headerMagic[:]) {
		return header{}, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if b[4] != formatV1 {
		return header{}, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, b[4])
	}
	h := header{codec: Codec(b[5])}
	if h.codec != CodecRaw && h.codec != CodecZstd {
		return header{}, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, b[5])
	}
	if b[6]&^flagTrailer != 0 || b[7] != 0 {
		return header{}, fmt.Errorf("%w: unknown header flags", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[8:16])
	if b[6]&flagTrailer != 0 {
		if n != 0 {
			return header{}, fmt.Errorf("%w: length both in header and trailer", ErrCorrupt)
		}
		h.trailer, h.size = true, -1
		return h, nil
	}
	if n > maxStored {
		return header{}, fmt.Errorf("%w: recorded length %d", ErrTooLarge, n)
	}
	h.size = int64(n)
	return h, nil
}

// maxStored bounds every length, offset and size read from a header, a
// trailer or an index (and the index cache): far above anything stored,
// and a number that stays positive as an int64 in any sum of two.
const maxStored = 1 << 62

func appendTrailer(dst []byte, size int64) []byte {
	var t [trailerSize]byte
	binary.LittleEndian.PutUint64(t[:8], uint64(size))
	copy(t[8:], trailerMagic[:])
	return append(dst, t[:]...)
}

func parseTrailer(b []byte) (int64, error) {
	if len(b) != trailerSize || !bytes.Equal(b[8:], trailerMagic[:]) {
		return 0, fmt.Errorf("%w: bad trailer", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxStored {
		return 0, fmt.Errorf("%w: recorded length %d", ErrTooLarge, n)
	}
	return int64(n), nil
}

// Pack object: packMagic, then records (header + payload) back to back.
// Its index is a separate object written after the pack is durable:
//
//	"trvidx", 0, version 1
//	uvarint pack size, uvarint count
//	count x { algo u8, digest [32], uvarint offset, uvarint stored length,
//	          codec u8, uvarint original length }
//	sha256 of everything above
//
// Version 2, written when a blob is in a block record, has per entry
// algo u8, digest [32], codec u8, then for CodecRaw and CodecZstd offset,
// stored length and original length as above; for codecSolid those and the
// blob's offset in the block's original bytes; for codecSolidNext (the
// next blob of the previous entry's block) only its original length.
//
// A block record is an ordinary zstd record whose original bytes are its
// blobs back to back; its payload is one zstd frame (a repack's, or a
// Batch's before frames.go) or several back to back, each ending at a
// blob's end, which a decoder reads as one stream.
//
// Version 3 is version 2 written by GC's repack (a cold pack, repack.go):
// the version tells GC the pack needs no repacking until it turns sparse.
var (
	packMagic    = [8]byte{'t', 'r', 'v', 'p', 'a', 'c', 'k', 1}
	indexMagic   = [8]byte{'t', 'r', 'v', 'i', 'd', 'x', 0, 1}
	indexMagicV2 = [8]byte{'t', 'r', 'v', 'i', 'd', 'x', 0, 2}
	indexMagicV3 = [8]byte{'t', 'r', 'v', 'i', 'd', 'x', 0, 3}
)

// entry locates one blob inside a pack.
type entry struct {
	ref    Ref
	off    int64 // of the record's header
	n      int64 // stored length: header + payload
	codec  Codec
	size   int64 // original length
	inner  int64 // codecSolid: offset in the block's original bytes
	stored int64 // stored bytes it accounts for (setShares)
	packID string
}

// setShares sets each entry's stored bytes: a blob of a block record counts
// its share of the record by original length, so that shares add up to
// what the pack holds (Stat, GC's live bytes).
func setShares(entries []entry) {
	block := map[int64]int64{}
	for _, e := range entries {
		if e.codec == codecSolid {
			block[e.off] += e.size
		}
	}
	for i, e := range entries {
		entries[i].stored = e.n
		if t := block[e.off]; e.codec == codecSolid && t > 0 {
			entries[i].stored = e.n * e.size / t
		}
	}
}

func encodeIndex(packSize int64, entries []entry, cold bool) []byte {
	b := make([]byte, 0, 16+len(entries)*48+sha256.Size)
	magic := indexMagic
	for _, e := range entries {
		if e.codec == codecSolid {
			magic = indexMagicV2
			break
		}
	}
	if cold {
		magic = indexMagicV3
	}
	b = append(b, magic[:]...)
	b = binary.AppendUvarint(b, uint64(packSize))
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i, e := range entries {
		b = append(b, byte(e.ref.algo))
		b = append(b, e.ref.digest[:]...)
		if magic == indexMagic {
			b = binary.AppendUvarint(b, uint64(e.off))
			b = binary.AppendUvarint(b, uint64(e.n))
			b = append(b, byte(e.codec))
			b = binary.AppendUvarint(b, uint64(e.size))
			continue
		}
		if i > 0 && e.codec == codecSolid {
			if p := entries[i-1]; p.codec == codecSolid && p.off == e.off && p.n == e.n && p.inner+p.size == e.inner {
				b = append(b, byte(codecSolidNext))
				b = binary.AppendUvarint(b, uint64(e.size))
				continue
			}
		}
		b = append(b, byte(e.codec))
		b = binary.AppendUvarint(b, uint64(e.off))
		b = binary.AppendUvarint(b, uint64(e.n))
		b = binary.AppendUvarint(b, uint64(e.size))
		if e.codec == codecSolid {
			b = binary.AppendUvarint(b, uint64(e.inner))
		}
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// isColdIndex reports whether an index is of a pack GC's repack wrote.
func isColdIndex(b []byte) bool { return bytes.HasPrefix(b, indexMagicV3[:]) }

var errIndex = fmt.Errorf("%w: bad pack index", ErrCorrupt)

// decodeIndex checks everything an index claims against itself, so a reader
// never seeks outside the pack the index describes.
func decodeIndex(packID string, b []byte) (packSize int64, entries []entry, err error) {
	if len(b) < len(indexMagic)+sha256.Size {
		return 0, nil, fmt.Errorf("%w: bad magic", errIndex)
	}
	v2 := bytes.Equal(b[:len(indexMagic)], indexMagicV2[:]) || isColdIndex(b)
	if !v2 && !bytes.Equal(b[:len(indexMagic)], indexMagic[:]) {
		return 0, nil, fmt.Errorf("%w: bad magic", errIndex)
	}
	body := b[:len(b)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(body):]) {
		return 0, nil, fmt.Errorf("%w: checksum mismatch", errIndex)
	}
	r := body[len(indexMagic):]
	uv := func() (int64, error) {
		v, k := binary.Uvarint(r)
		if k <= 0 || v > maxStored {
			return 0, fmt.Errorf("%w: bad number", errIndex)
		}
		r = r[k:]
		return int64(v), nil
	}
	if packSize, err = uv(); err != nil {
		return 0, nil, err
	}
	count, err := uv()
	if err != nil {
		return 0, nil, err
	}
	const minEntry = 1 + 32 + 1 + 1
	if count > int64(len(r)/minEntry) {
		return 0, nil, fmt.Errorf("%w: count %d too large", errIndex, count)
	}
	entries = make([]entry, 0, count)
	for range count {
		if len(r) < 33 {
			return 0, nil, fmt.Errorf("%w: truncated", errIndex)
		}
		e := entry{packID: packID, ref: Ref{algo: Algorithm(r[0])}}
		if !e.ref.algo.valid() {
			return 0, nil, fmt.Errorf("%w: unknown algorithm %d", errIndex, r[0])
		}
		copy(e.ref.digest[:], r[1:33])
		r = r[33:]
		if v2 {
			e, err = decodeEntryV2(e, entries, &r, uv)
		} else {
			e, err = decodeEntryV1(e, &r, uv)
		}
		if err != nil {
			return 0, nil, err
		}
		if e.off < int64(len(packMagic)) || e.n < headerSize || e.off > packSize || e.n > packSize-e.off {
			return 0, nil, fmt.Errorf("%w: record outside the pack", errIndex)
		}
		entries = append(entries, e)
	}
	if len(r) != 0 {
		return 0, nil, fmt.Errorf("%w: trailing bytes", errIndex)
	}
	setShares(entries)
	return packSize, entries, nil
}

func decodeEntryV1(e entry, r *[]byte, uv func() (int64, error)) (entry, error) {
	var err error
	if e.off, err = uv(); err != nil {
		return e, err
	}
	if e.n, err = uv(); err != nil {
		return e, err
	}
	if len(*r) < 1 {
		return e, fmt.Errorf("%w: truncated", errIndex)
	}
	e.codec = Codec((*r)[0])
	*r = (*r)[1:]
	if e.size, err = uv(); err != nil {
		return e, err
	}
	if e.codec != CodecRaw && e.codec != CodecZstd {
		return e, fmt.Errorf("%w: unknown codec %d", errIndex, e.codec)
	}
	return e, nil
}

// decodeEntryV2 reads the rest of a version 2 entry; prev holds the
// entries before it.
func decodeEntryV2(e entry, prev []entry, r *[]byte, uv func() (int64, error)) (entry, error) {
	if len(*r) < 1 {
		return e, fmt.Errorf("%w: truncated", errIndex)
	}
	e.codec = Codec((*r)[0])
	*r = (*r)[1:]
	var err error
	if e.codec == codecSolidNext {
		if len(prev) == 0 || prev[len(prev)-1].codec != codecSolid {
			return e, fmt.Errorf("%w: a block continued after no block", errIndex)
		}
		p := prev[len(prev)-1]
		e.codec, e.off, e.n, e.inner = codecSolid, p.off, p.n, p.inner+p.size
		e.size, err = uv()
		return e, err
	}
	if e.codec != CodecRaw && e.codec != CodecZstd && e.codec != codecSolid {
		return e, fmt.Errorf("%w: unknown codec %d", errIndex, e.codec)
	}
	if e.off, err = uv(); err != nil {
		return e, err
	}
	if e.n, err = uv(); err != nil {
		return e, err
	}
	if e.size, err = uv(); err != nil {
		return e, err
	}
	if e.codec == codecSolid {
		e.inner, err = uv()
	}
	return e, err
}

// readFull is io.ReadFull that reports a short object as corrupt.
func readFull(r io.Reader, b []byte) error {
	_, err := io.ReadFull(r, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	return err
}
