package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/trovekit/trove/backend"
)

// object is an opened stored form: its payload stream and what its header
// (and trailer, or pack index) say about it.
type object struct {
	payload io.Reader // bounded to the payload where the length is known
	closer  io.Closer
	codec   Codec
	size    int64 // original length
	// owned is the payload's bytes where they were decoded for this
	// read alone (a frame of one blob): readAll verifies and returns
	// them, not a copy.
	owned []byte
}

func (s *Store) openLoose(ctx context.Context, ref Ref) (object, error) {
	obj, _, err := s.openLooseInfo(ctx, ref)
	return obj, err
}

// openLooseInfo opens a loose object and describes it: one request on a
// bucket (backend.OpenInfo), since loose objects are written once.
func (s *Store) openLooseInfo(ctx context.Context, ref Ref) (object, backend.Info, error) {
	rc, info, err := backend.OpenInfo(ctx, s.st, s.looseName(ref))
	if err != nil {
		return object{}, info, err
	}
	obj, err := s.looseObject(ctx, info, rc)
	if err != nil {
		rc.Close()
		return object{}, info, err
	}
	return obj, info, nil
}

func (s *Store) looseObject(ctx context.Context, fi backend.Info, rc io.ReadCloser) (object, error) {
	var hb [headerSize]byte
	if err := readFull(rc, hb[:]); err != nil {
		return object{}, err
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return object{}, err
	}
	obj := object{payload: rc, closer: rc, codec: h.codec, size: h.size}
	if h.trailer {
		if obj.size, err = s.readTrailer(ctx, fi.Name, fi.Size); err != nil {
			return object{}, err
		}
		obj.payload = io.LimitReader(rc, fi.Size-headerSize-trailerSize)
	}
	return obj, nil
}

func (s *Store) openPacked(ctx context.Context, e entry) (object, error) {
	if e.codec == codecSolid {
		return s.openBlockMember(ctx, e)
	}
	rc, err := s.st.OpenRange(ctx, s.packName(e.packID), e.off, e.n)
	if err != nil {
		return object{}, err
	}
	obj, err := packedObject(rc, e)
	if err != nil {
		rc.Close()
		return object{}, err
	}
	return obj, nil
}

func packedObject(rc io.ReadCloser, e entry) (object, error) {
	var hb [headerSize]byte
	if err := readFull(rc, hb[:]); err != nil {
		return object{}, err
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return object{}, err
	}
	if h.trailer || h.codec != e.codec || h.size != e.size {
		return object{}, fmt.Errorf("%w: record header disagrees with the pack index", ErrCorrupt)
	}
	return object{payload: io.LimitReader(rc, e.n-headerSize), closer: rc, codec: h.codec, size: h.size}, nil
}

// maxBlock bounds the original bytes of a block record a reader decodes
// (a Batch writes blocks of about solidBlock, a repack of coldBlock): a
// hostile header cannot make it decode more.
const maxBlock = 4 << 20

// blockObject is the object of e's blob in its decoded block (or the part
// of it decoded): the blob's bytes, which the caller verifies against its
// ref.
func blockObject(c cachedBlock, e entry) (object, error) {
	if !c.holds(e) {
		return object{}, fmt.Errorf("%w: block record disagrees with the pack index", ErrCorrupt)
	}
	data := c.data[e.inner-c.at : e.inner-c.at+e.size]
	return object{payload: bytes.NewReader(data), closer: io.NopCloser(nil), codec: CodecRaw, size: e.size}, nil
}

// decodeBlock decodes a block record, bounded by its recorded length.
func (s *Store) decodeBlock(rec []byte) ([]byte, error) {
	block, _, err := s.decodeBlockTo(rec, -1)
	return block, err
}

// zstdBlockMax is the most original bytes one zstd block holds.
const zstdBlockMax = 128 << 10

// decodeSlack is room past the decoded end: zstd's fast copies write up to
// it, and a buffer without it decodes its last blocks by the slower, safe
// path (about 7% of a 64 KiB block's decoding, BenchmarkBlockRead).
const decodeSlack = 64

// decodeBlockTo decodes a block record up to at least its first n original
// bytes (all of it for n < 0), and whether it is all: a blob of a repack's block needs the zstd
// blocks up to its end only, on average 3/4 of a 256 KiB block record. The
// blob is verified against its ref; the rest of the record is not read.
func (s *Store) decodeBlockTo(rec []byte, n int64) ([]byte, bool, error) {
	h, err := parseBlockHeader(rec)
	if err != nil {
		return nil, false, err
	}
	dec, err := s.getDecoder()
	if err != nil {
		return nil, false, err
	}
	defer s.putDecoder(dec)
	if n >= 0 && n < h.size && h.size > zstdBlockMax {
		out := make([]byte, n)
		if err := dec.Reset(bytes.NewReader(rec[headerSize:])); err != nil {
			return nil, false, fmt.Errorf("%w: block record: %v", ErrCorrupt, err)
		}
		if _, err := io.ReadFull(dec, out); err != nil {
			return nil, false, fmt.Errorf("%w: block shorter than %d bytes: %v", ErrCorrupt, n, err)
		}
		return out, false, nil
	}
	out, err := dec.DecodeAll(rec[headerSize:], make([]byte, 0, h.size+decodeSlack))
	if err != nil || int64(len(out)) != h.size {
		return nil, false, fmt.Errorf("%w: block of %d bytes, header records %d: %v", ErrCorrupt, len(out), h.size, err)
	}
	return out, true, nil
}

// blockCache keeps recently decoded blocks (or their starts), up to
// blockCacheBytes: blobs of one block (the trees of a snapshot, files of one
// directory) are often read together, and each read would decode the block
// again. Reading a checkpoint long after GC repacked it reads trees and
// files from many cold blocks in turn: with the last 4 blocks kept, a dry
// run 100 checkpoints back decoded most blocks several times. Packs never
// change under an id, so a cached block stays right.
type blockCache struct {
	mu    sync.Mutex
	m     map[blockKey]*cacheSlot
	bytes int
	tick  uint64
}

// blockCacheBytes bounds the decoded bytes a store keeps: 32 cold blocks,
// 128 of a batch's.
const blockCacheBytes = 8 << 20

// cacheSlot is what is kept of one block: all of it, its start, or the
// frames read so far (each a part of its own).
type cacheSlot struct {
	parts []cachedBlock
	used  uint64 // tick of the last get or put
}

// size is the decoded bytes the slot keeps.
func (sl *cacheSlot) size() int {
	n := 0
	for _, p := range sl.parts {
		n += len(p.data)
	}
	return n
}

// cachedBlock is a decoded block, or the part of it from at: its start
// (a prefix of a single frame) or the frames of one blob (decodeFrames).
type cachedBlock struct {
	data []byte
	at   int64 // original offset of data[0]
	full bool  // data is the whole block: a blob outside is corruption
	// alone: data is a frame of one blob (decodeFrames), decoded for it.
	alone bool
	// frames: data is the frames of a blob (decodeFrames), not the
	// block's start.
	frames bool
}

// holds reports whether the blob of e is in c.
func (c cachedBlock) holds(e entry) bool {
	return c.data != nil && e.inner >= c.at && e.inner-c.at <= int64(len(c.data)) && e.size <= int64(len(c.data))-(e.inner-c.at)
}

type blockKey struct {
	pack string
	off  int64
}

// get returns what is kept of block k that holds e's blob (ok), and
// whether anything of the block is kept (some).
func (c *blockCache) get(k blockKey, e entry) (b cachedBlock, ok, some bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl, found := c.m[k]
	if !found {
		return cachedBlock{}, false, false
	}
	c.tick++
	sl.used = c.tick
	for _, p := range sl.parts {
		if p.full || p.holds(e) {
			return p, true, true
		}
	}
	return cachedBlock{}, false, true
}

// put keeps data of block k: all of it or its start replaces what was
// kept, a frame is kept beside the others. It drops the least recently
// used blocks past the budget, never the one just put.
func (c *blockCache) put(k blockKey, data cachedBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[blockKey]*cacheSlot)
	}
	c.tick++
	sl, ok := c.m[k]
	if !ok {
		sl = &cacheSlot{}
		c.m[k] = sl
	}
	c.bytes -= sl.size()
	if !data.frames || data.full {
		sl.parts = append(sl.parts[:0], data)
	} else {
		// A frame read twice at once is kept once.
		sl.parts = slices.DeleteFunc(sl.parts, func(p cachedBlock) bool { return p.at == data.at })
		sl.parts = append(sl.parts, data)
	}
	c.bytes += sl.size()
	sl.used = c.tick
	for c.bytes > blockCacheBytes && len(c.m) > 1 {
		var oldest blockKey
		var at uint64 = math.MaxUint64
		for key, sl := range c.m {
			if sl.used < at {
				oldest, at = key, sl.used
			}
		}
		c.bytes -= c.m[oldest].size()
		delete(c.m, oldest)
	}
}

// len is how many blocks are kept.
func (c *blockCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// openBlockMember opens a blob of a block record, through the cache.
func (s *Store) openBlockMember(ctx context.Context, e entry) (object, error) {
	k := blockKey{e.packID, e.off}
	c, ok, some := s.blocks.get(k, e)
	if ok {
		return blockObject(c, e)
	}
	// The record is only read to be decoded: one buffer of the process
	// for them all. Fresh memory for each faulted its pages in, about a
	// third of the time of reading 20 records of 30 KB.
	buf := s.getBlockBuf()
	rec, err := s.readRecordTo(ctx, e, buf)
	if err != nil {
		s.putBlockBuf(buf)
		return object{}, err
	}
	c, err = s.decodeMember(rec, e, some)
	s.putBlockBuf(buf)
	if err != nil {
		return object{}, err
	}
	if c.alone {
		// A frame of this blob alone (a file of 16 KiB or more): it is
		// not kept for other blobs, and the caller gets it, not a copy.
		obj, err := blockObject(c, e)
		obj.owned = c.data
		return obj, err
	}
	s.blocks.put(k, c)
	return blockObject(c, e)
}

// decodeMember decodes of a block record what holds e's blob: its frame,
// else the start of its single frame up to the blob's end, or, again
// (something of the block was decoded before), all of it: blobs read in
// order would decode the start again each. A frame is decoded alone
// however many of the block's were before: the trees a plan reads are a
// few hundred bytes each, scattered over a snapshot's blocks, and
// decoding each whole block for its second tree was most of the zstd
// work of a dry run (some 330 KB for 25 trees on the cpbench tree).
func (s *Store) decodeMember(rec []byte, e entry, again bool) (cachedBlock, error) {
	end := e.inner + e.size
	h, err := parseBlockHeader(rec)
	if err != nil {
		return cachedBlock{}, err
	}
	if c, ok, err := s.decodeFrames(rec, h, e.inner, end); ok || err != nil {
		return c, err
	}
	if again {
		end = -1
	}
	block, full, err := s.decodeBlockTo(rec, end)
	return cachedBlock{data: block, full: full}, err
}

// parseBlockHeader parses the header of a block record.
func parseBlockHeader(rec []byte) (header, error) {
	h, err := parseHeader(rec)
	if err != nil {
		return header{}, err
	}
	if h.trailer || h.codec != CodecZstd || h.size > maxBlock {
		return header{}, fmt.Errorf("%w: not a block record", ErrCorrupt)
	}
	return h, nil
}

// blobReader decodes a payload, never yielding more than the recorded length,
// and checks length and digest at the end: its last Read returns io.EOF only
// for a blob that is whole and matches its ref, else an ErrCorrupt error.
type blobReader struct {
	s      *Store
	ref    Ref
	op     string
	src    *errReader
	r      io.Reader // decoded bytes
	closer io.Closer
	dec    *zstd.Decoder
	h      hash.Hash
	want   int64
	n      int64
	err    error
}

// errReader remembers the storage's own errors, so that a failed read is not
// mistaken for corruption when it surfaces through the decoder.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

func (s *Store) newBlobReader(op string, ref Ref, obj object) (*blobReader, error) {
	if err := ref.algo.usable(); err != nil {
		return nil, err
	}
	if obj.size > s.cfg.maxBlobSize {
		return nil, fmt.Errorf("%w: recorded length %d, max %d", ErrTooLarge, obj.size, s.cfg.maxBlobSize)
	}
	b := &blobReader{s: s, ref: ref, op: op, closer: obj.closer, h: ref.algo.newHash(), want: obj.size}
	b.src = &errReader{r: obj.payload}
	switch obj.codec {
	case CodecRaw:
		b.r = b.src
	case CodecZstd:
		dec, err := s.getDecoder()
		if err != nil {
			return nil, err
		}
		if err := dec.Reset(b.src); err != nil {
			s.putDecoder(dec)
			return nil, b.classify(err)
		}
		b.dec, b.r = dec, dec
	}
	return b, nil
}

func (b *blobReader) corrupt(format string, args ...any) error {
	return refErr(b.op, b.ref, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
}

func (b *blobReader) classify(err error) error {
	switch {
	case b.src.err != nil:
		return refErr(b.op, b.ref, b.src.err)
	case isBad(err):
		return refErr(b.op, b.ref, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return b.corrupt("truncated")
	}
	return b.corrupt("%v", err)
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.n == b.want {
		b.err = b.finish()
		return 0, b.err
	}
	if rem := b.want - b.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	k, err := b.r.Read(p)
	b.h.Write(p[:k])
	b.n += int64(k)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if b.n < b.want {
			b.err = b.corrupt("%d bytes, header records %d", b.n, b.want)
		} else {
			b.err = b.digest()
		}
	default:
		b.err = b.classify(err)
	}
	if b.err == io.EOF && k > 0 {
		return k, nil
	}
	return k, b.err
}

// finish checks that the payload ends where the recorded length says.
func (b *blobReader) finish() error {
	var one [1]byte
	for range 100 {
		k, err := b.r.Read(one[:])
		if k > 0 {
			return b.corrupt("longer than the recorded %d bytes", b.want)
		}
		if errors.Is(err, io.EOF) {
			return b.digest()
		}
		if err != nil {
			return b.classify(err)
		}
	}
	return b.corrupt("payload does not end")
}

func (b *blobReader) digest() error {
	if got := refFromHash(b.ref.algo, b.h); got != b.ref {
		return b.corrupt("content hashes to %v", got)
	}
	return io.EOF
}

func (b *blobReader) Close() error {
	if b.dec != nil {
		b.s.putDecoder(b.dec)
		b.dec = nil
	}
	if b.err == nil {
		b.err = refErr(b.op, b.ref, fs.ErrClosed)
	}
	if b.closer == nil {
		return nil
	}
	err := b.closer.Close()
	b.closer = nil
	return err
}

// withBlob opens each stored copy of ref in turn and hands it to use, which
// must close it, until one use succeeds. A copy whose pack went away (GC
// repacked it, AutoPack merged it) or that is corrupt does not hide a good
// copy elsewhere.
func (s *Store) withBlob(ctx context.Context, op string, ref Ref, use func(object) error) error {
	if err := s.checkRef(op, ref); err != nil {
		return err
	}
	if err := ref.algo.usable(); err != nil {
		return refErr(op, ref, err)
	}
	var firstErr error
	try := func(open func() (object, error)) (done bool, err error) {
		obj, err := open()
		if err == nil {
			if err = use(obj); err == nil {
				return true, nil
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if isBad(err) {
			if firstErr == nil {
				firstErr = refErr(op, ref, err)
			}
			return false, nil
		}
		return false, refErr(op, ref, err)
	}
	tried := map[string]bool{}
	tryPacked := func() (bool, error) {
		e, ok := s.idx.lookupUntried(ref, tried)
		if !ok {
			return false, nil
		}
		tried[e.packID] = true
		return try(func() (object, error) { return s.openPacked(ctx, e) })
	}
	// A store that has not read the pack indexes yet looks for a loose
	// copy first: where there is one, that read is the only request.
	loaded := s.idx.isLoaded()
	if loaded {
		if done, err := tryPacked(); done || err != nil {
			return err
		}
	}
	if done, err := try(func() (object, error) { return s.openLoose(ctx, ref) }); done || err != nil {
		return err
	}
	if !loaded {
		if err := s.ensureIndex(ctx); err != nil {
			return refErr(op, ref, err)
		}
		if done, err := tryPacked(); done || err != nil {
			return err
		}
	}
	// A pack this process has not seen yet, or the same blob moved by GC.
	for range 3 {
		if err := s.refresh(ctx); err != nil {
			return refErr(op, ref, err)
		}
		if _, ok := s.idx.lookupUntried(ref, tried); !ok {
			break
		}
		if done, err := tryPacked(); done || err != nil {
			return err
		}
	}
	if firstErr != nil {
		return firstErr
	}
	return refErr(op, ref, fs.ErrNotExist)
}

// fastGetMax bounds the blobs Get decodes in one piece; longer ones stream.
const fastGetMax = 16 << 20

// Get returns the content of ref, verified. A missing blob is fs.ErrNotExist;
// a copy that does not match its ref is ErrCorrupt.
func (s *Store) Get(ctx context.Context, ref Ref) ([]byte, error) {
	var out []byte
	err := s.withBlob(ctx, "get", ref, func(obj object) (err error) {
		if obj.size > fastGetMax && obj.size <= s.cfg.maxBlobSize {
			// A big object is verified streaming before any buffer of
			// its recorded size exists: a header that lies about the
			// size, or a payload that decodes to far more, costs a
			// bounded window, not gigabytes (a zstd bomb).
			if err := s.drain("get", ref, obj); err != nil {
				return err
			}
			return errVerified
		}
		out, err = s.readAll("get", ref, obj)
		return err
	})
	if errors.Is(err, errVerified) {
		err = s.withBlob(ctx, "get", ref, func(obj object) (err error) {
			out, err = s.readAll("get", ref, obj)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readAll reads and verifies a whole object and closes it.
func (s *Store) readAll(op string, ref Ref, obj object) ([]byte, error) {
	defer obj.closer.Close()
	if err := ref.algo.usable(); err != nil {
		return nil, refErr(op, ref, err)
	}
	if obj.size > s.cfg.maxBlobSize {
		return nil, refErr(op, ref, fmt.Errorf("%w: recorded length %d, max %d", ErrTooLarge, obj.size, s.cfg.maxBlobSize))
	}
	if obj.owned != nil && int64(len(obj.owned)) == obj.size && obj.codec == CodecRaw {
		if got, _ := Sum(ref.algo, obj.owned); got != ref {
			return nil, refErr(op, ref, fmt.Errorf("%w: content hashes to %v", ErrCorrupt, got))
		}
		return obj.owned, nil
	}
	if obj.size > fastGetMax {
		return s.readAllStream(op, ref, obj)
	}
	src := &errReader{r: obj.payload}
	corrupt := func(format string, args ...any) error {
		if src.err != nil {
			return refErr(op, ref, src.err)
		}
		return refErr(op, ref, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
	}
	var out []byte
	var sum *[32]byte // the digest, when it was taken as the bytes came
	switch obj.codec {
	case CodecRaw:
		out = make([]byte, obj.size)
		k, digest, err := readSum(src, out, ref.algo)
		if err != nil {
			return nil, corrupt("%d bytes, header records %d", k, obj.size)
		}
		sum = &digest
	case CodecZstd:
		// zstd is only kept when it saves space, so the payload is shorter
		// than the original; allow slack, refuse anything longer.
		bound := obj.size + obj.size/64 + 1024
		payload, err := io.ReadAll(io.LimitReader(src, bound+1))
		if err != nil {
			return nil, refErr(op, ref, err)
		}
		if int64(len(payload)) > bound {
			return nil, corrupt("compressed payload longer than the original")
		}
		dec, err := s.getDecoder()
		if err != nil {
			return nil, refErr(op, ref, err)
		}
		out, err = dec.DecodeAll(payload, make([]byte, 0, obj.size+decodeSlack))
		s.putDecoder(dec)
		if err != nil {
			return nil, corrupt("%v", err)
		}
		if int64(len(out)) != obj.size {
			return nil, corrupt("%d bytes, header records %d", len(out), obj.size)
		}
	}
	var one [1]byte
	if k, err := io.ReadFull(src, one[:]); k > 0 {
		return nil, corrupt("longer than the recorded %d bytes", obj.size)
	} else if !errors.Is(err, io.EOF) {
		return nil, refErr(op, ref, err)
	}
	got := Ref{algo: ref.algo}
	if sum != nil {
		got.digest = *sum
	} else {
		got, _ = Sum(ref.algo, out)
	}
	if got != ref {
		return nil, corrupt("content hashes to %v", got)
	}
	return out, nil
}

// errVerified stops Get's first, streaming pass over a big blob once it
// verified: the second pass reads it into one buffer of its true size.
var errVerified = errors.New("verified")

// readAllStream is readAll for blobs too big to trust their header with one
// allocation: the buffer grows with the data actually decoded.
func (s *Store) readAllStream(op string, ref Ref, obj object) ([]byte, error) {
	br, err := s.newBlobReader(op, ref, obj)
	if err != nil {
		return nil, refErr(op, ref, err)
	}
	br.closer = nil // readAll closes obj
	defer br.Close()
	// Verified before (see Get): the recorded size is the true size.
	buf := make([]byte, 0, obj.size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Open streams the content of ref. Bytes are verified as a whole: the final
// Read returns io.EOF only when length and digest match, and an error
// wrapping ErrCorrupt otherwise, so a consumer must not trust what it read
// until it has seen io.EOF.
func (s *Store) Open(ctx context.Context, ref Ref) (io.ReadCloser, error) {
	var out *blobReader
	err := s.withBlob(ctx, "open", ref, func(obj object) error {
		br, err := s.newBlobReader("open", ref, obj)
		if err != nil {
			obj.closer.Close()
			return err
		}
		out = br
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readRecord reads one stored record of a pack into memory; records are
// below the pack threshold, and the index was checked to stay in its pack.
func (s *Store) readRecord(ctx context.Context, e entry) ([]byte, error) {
	return s.readRecordTo(ctx, e, nil)
}

// readRecordTo is readRecord into buf where the record fits in it.
func (s *Store) readRecordTo(ctx context.Context, e entry, buf []byte) ([]byte, error) {
	if e.n < 0 {
		return nil, fmt.Errorf("%w: pack %s: a record of %d bytes", ErrCorrupt, e.packID, e.n)
	}
	rc, err := s.st.OpenRange(ctx, s.packName(e.packID), e.off, e.n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if e.n > maxBlock+headerSize+trailerSize {
		// Not one of ours: read as it comes, never sized by the index.
		rec, err := io.ReadAll(io.LimitReader(rc, e.n))
		if err != nil {
			return nil, err
		}
		if int64(len(rec)) < e.n {
			return nil, fmt.Errorf("%w: pack %s is truncated", ErrCorrupt, e.packID)
		}
		return rec, nil
	}
	// The index gives the length: one buffer of it, not io.ReadAll's
	// doublings (twice the bytes of a 64 KiB block, for every read).
	rec := buf[:0]
	if int64(cap(buf)) < e.n {
		rec = make([]byte, e.n)
	}
	rec = rec[:e.n]
	if _, err := io.ReadFull(rc, rec); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: pack %s is truncated", ErrCorrupt, e.packID)
		}
		return nil, err
	}
	return rec, nil
}
