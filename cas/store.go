package cas

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/trovekit/trove/backend"
)

// Store is a content-addressed blob store on a backend.Storage. It is safe
// for concurrent use, and several Stores (in one process or several) may
// share one backend.
type Store struct {
	st  backend.Storage
	cfg config

	encoders sync.Pool // *zstd.Encoder
	decoders sync.Pool // *zstd.Decoder
	bufs     sync.Pool // *[]byte

	idx index
}

// Info describes a stored blob.
type Info struct {
	Ref        Ref
	Size       int64     // original length
	StoredSize int64     // bytes on storage, header included
	Codec      Codec     // how the bytes are stored
	Packed     bool      // inside a pack object rather than an object of its own
	ModTime    time.Time // when the object (or the pack's index) was written
}

// zstd's default window for our level; decoders refuse larger windows, so a
// hostile frame cannot make a decoder allocate more than this for history.
const zstdWindow = 8 << 20

// Open returns the store kept in the "blobs" directory of st (see WithDir).
// It does no I/O: pack indexes are loaded on first use.
func Open(ctx context.Context, st backend.Storage, opts ...Option) (*Store, error) {
	if st == nil {
		return nil, errors.New("cas: nil storage")
	}
	cfg := config{
		dir:           "blobs",
		algo:          SHA256,
		maxBlobSize:   DefaultMaxBlobSize,
		packThreshold: DefaultPackThreshold,
		packSize:      DefaultPackSize,
		streamBuffer:  DefaultStreamBuffer,
		grace:         DefaultGrace,
		repackBelow:   DefaultRepackBelow,
		now:           time.Now,
		log:           slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Store{st: st, cfg: cfg}, nil
}

// Algorithm returns the algorithm Put uses.
func (s *Store) Algorithm() Algorithm { return s.cfg.algo }

// Names on storage, see layout.go.
func (s *Store) looseDir(a Algorithm) string { return s.cfg.dir + "/" + a.String() }
func (s *Store) looseName(r Ref) string {
	h := r.Hex()
	return s.looseDir(r.algo) + "/" + h[:2] + "/" + h
}
func (s *Store) packDir() string            { return s.cfg.dir + "/packs" }
func (s *Store) packName(id string) string  { return s.packDir() + "/" + id[:2] + "/" + id }
func (s *Store) indexDir() string           { return s.cfg.dir + "/index" }
func (s *Store) indexName(id string) string { return s.indexDir() + "/" + id }
func (s *Store) tmpDir() string             { return s.cfg.dir + "/tmp" }

// newID names a pack or a staging object; random so that no two writers
// ever pick the same name.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Store) getEncoder() (*zstd.Encoder, error) {
	if e, ok := s.encoders.Get().(*zstd.Encoder); ok {
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
	s.encoders.Put(e)
}

func (s *Store) getDecoder() (*zstd.Decoder, error) {
	if d, ok := s.decoders.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(zstdWindow),
		zstd.WithDecoderMaxMemory(uint64(max(s.cfg.maxBlobSize, zstdWindow))),
		// Never decode a whole buffer up front: output is bounded by us.
		zstd.WithDecodeBuffersBelow(0))
}

func (s *Store) putDecoder(d *zstd.Decoder) {
	_ = d.Reset(nil)
	s.decoders.Put(d)
}

// maxPooledBuf keeps the pool from pinning the buffers of huge blobs.
const maxPooledBuf = 16 << 20

func (s *Store) getBuf() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Store) putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		s.bufs.Put(b)
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

// encode appends the stored form of data (header and payload) to dst.
func (s *Store) encode(dst, data []byte) ([]byte, Codec, error) {
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
		dst = enc.EncodeAll(data, dst)
		s.putEncoder(enc)
		if saves(len(dst)-start-headerSize, len(data)) {
			return dst, CodecZstd, nil
		}
		dst = dst[:start]
	}
	dst = appendHeader(dst, CodecRaw, int64(len(data)))
	return append(dst, data...), CodecRaw, nil
}

func (s *Store) checkRef(op string, ref Ref) error {
	if !ref.valid() {
		return refErr(op, ref, fmt.Errorf("%w: zero ref", ErrInvalidRef))
	}
	return nil
}

// Put stores data and returns its ref under the store's algorithm. Content
// already present is not written again. The blob is durable when Put returns.
func (s *Store) Put(ctx context.Context, data []byte) (Ref, error) {
	ref := Ref{algo: s.cfg.algo, digest: s.cfg.algo.sum(data)}
	return ref, s.putBytes(ctx, "put", ref, data)
}

func (s *Store) putBytes(ctx context.Context, op string, ref Ref, data []byte) error {
	if int64(len(data)) > s.cfg.maxBlobSize {
		return refErr(op, ref, fmt.Errorf("%w: %d bytes, max %d", ErrTooLarge, len(data), s.cfg.maxBlobSize))
	}
	if ok, err := s.has(ctx, ref); err != nil || ok {
		return refErr(op, ref, err)
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	stored, _, err := s.encode((*bp)[:0], data)
	*bp = stored
	if err != nil {
		return refErr(op, ref, err)
	}
	// WriteFile is atomic, so the final name holds a whole object or none,
	// and two writers of one ref both write valid objects.
	return refErr(op, ref, s.st.WriteFile(ctx, s.looseName(ref), stored))
}

// PutReader stores everything r yields and returns its ref. Streams up to the
// stream buffer (WithStreamBuffer) are buffered and written once; longer ones
// are hashed and compressed on the fly into a staging object that is renamed
// to its final name, so memory stays bounded whatever the length.
func (s *Store) PutReader(ctx context.Context, r io.Reader) (Ref, error) {
	return s.putReader(ctx, "put", s.cfg.algo, Ref{}, r)
}

// PutRef stores r's bytes as want (as a mirror copies a blob by ref): when
// want is present, r is not read at all; when r's bytes do not hash to want,
// nothing is stored and the error wraps ErrCorrupt.
func (s *Store) PutRef(ctx context.Context, want Ref, r io.Reader) error {
	if err := s.checkRef("put", want); err != nil {
		return err
	}
	if ok, err := s.has(ctx, want); err != nil || ok {
		return refErr("put", want, err)
	}
	_, err := s.putReader(ctx, "put", want.algo, want, r)
	return err
}

func (s *Store) putReader(ctx context.Context, op string, algo Algorithm, want Ref, r io.Reader) (Ref, error) {
	limit := min(s.cfg.streamBuffer, s.cfg.maxBlobSize)
	bp := s.getBuf()
	defer s.putBuf(bp)
	if int64(cap(*bp)) < limit+1 {
		*bp = make([]byte, limit+1)
	}
	buf := (*bp)[:limit+1]
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		data := buf[:n]
		ref := Ref{algo: algo, digest: algo.sum(data)}
		if !want.IsZero() && ref != want {
			return Ref{}, refErr(op, want, fmt.Errorf("%w: content hashes to %v", ErrCorrupt, ref))
		}
		return ref, s.putBytes(ctx, op, ref, data)
	case err != nil:
		return Ref{}, refErr(op, want, err)
	case limit == s.cfg.maxBlobSize:
		return Ref{}, refErr(op, want, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, s.cfg.maxBlobSize))
	}
	return s.putStaged(ctx, op, algo, want, buf, r)
}

// putStaged streams prefix+rest into a staging object, then renames it to
// the name its digest gives. A failed or interrupted put leaves at most a
// staging object, which GC removes after the grace period.
func (s *Store) putStaged(ctx context.Context, op string, algo Algorithm, want Ref, prefix []byte, rest io.Reader) (Ref, error) {
	zip, err := s.compressible(prefix)
	if err != nil {
		return Ref{}, refErr(op, want, err)
	}
	er := &encodeReader{
		ctx:   ctx,
		src:   io.MultiReader(bytes.NewReader(prefix), rest),
		h:     algo.newHash(),
		max:   s.cfg.maxBlobSize,
		chunk: make([]byte, 128<<10),
	}
	codec := CodecRaw
	if zip {
		codec = CodecZstd
		if er.enc, err = s.getEncoder(); err != nil {
			return Ref{}, refErr(op, want, err)
		}
		er.enc.Reset(&er.out)
		defer s.putEncoder(er.enc)
	}
	er.out.Write(appendHeader(nil, codec, -1))
	tmp := s.tmpDir() + "/" + newID()
	if _, err := s.st.WriteFrom(ctx, tmp, er); err != nil {
		if er.err != nil {
			err = er.err // the source's error, not the backend's report of it
		}
		return Ref{}, refErr(op, want, err)
	}
	ref := refFromHash(algo, er.h)
	drop := func() {
		if err := s.st.Unlink(context.WithoutCancel(ctx), tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.log.Warn("cas: removing staging object", "name", tmp, "err", err)
		}
	}
	if !want.IsZero() && ref != want {
		drop()
		return Ref{}, refErr(op, want, fmt.Errorf("%w: content hashes to %v", ErrCorrupt, ref))
	}
	if ok, err := s.has(ctx, ref); err != nil || ok {
		drop()
		return ref, refErr(op, ref, err)
	}
	if err := s.st.Rename(ctx, tmp, s.looseName(ref)); err != nil {
		drop()
		return Ref{}, refErr(op, ref, err)
	}
	return ref, nil
}

// encodeReader pulls from src, hashes, and yields the stored form (header,
// zstd or raw payload, trailer) without a goroutine or a pipe.
type encodeReader struct {
	ctx   context.Context
	src   io.Reader
	h     hash.Hash
	enc   *zstd.Encoder // nil: raw
	out   bytes.Buffer
	chunk []byte
	n     int64
	max   int64
	done  bool
	err   error
}

func (e *encodeReader) Read(p []byte) (int, error) {
	for e.out.Len() == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if e.done {
			return 0, io.EOF
		}
		e.fill()
	}
	return e.out.Read(p)
}

func (e *encodeReader) fill() {
	if err := e.ctx.Err(); err != nil {
		e.err = err
		return
	}
	k, err := e.src.Read(e.chunk)
	if k > 0 {
		e.n += int64(k)
		if e.n > e.max {
			e.err = fmt.Errorf("%w: more than %d bytes", ErrTooLarge, e.max)
			return
		}
		e.h.Write(e.chunk[:k])
		if e.enc != nil {
			if _, werr := e.enc.Write(e.chunk[:k]); werr != nil {
				e.err = werr
				return
			}
		} else {
			e.out.Write(e.chunk[:k])
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		if e.enc != nil {
			if cerr := e.enc.Close(); cerr != nil {
				e.err = cerr
				return
			}
		}
		e.out.Write(appendTrailer(nil, e.n))
		e.done = true
	case err != nil:
		e.err = err
	}
}

// Has reports whether ref is stored, without reading or verifying it.
func (s *Store) Has(ctx context.Context, ref Ref) (bool, error) {
	if err := s.checkRef("has", ref); err != nil {
		return false, err
	}
	ok, err := s.has(ctx, ref)
	return ok, refErr("has", ref, err)
}

func (s *Store) has(ctx context.Context, ref Ref) (bool, error) {
	if err := s.ensureIndex(ctx); err != nil {
		return false, err
	}
	if _, ok := s.idx.lookup(ref); ok {
		return true, nil
	}
	if _, err := s.st.Stat(ctx, s.looseName(ref)); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := s.refresh(ctx); err != nil {
		return false, err
	}
	_, ok := s.idx.lookup(ref)
	return ok, nil
}

// Stat describes a stored blob without reading or verifying its content.
func (s *Store) Stat(ctx context.Context, ref Ref) (Info, error) {
	if err := s.checkRef("stat", ref); err != nil {
		return Info{}, err
	}
	if err := s.ensureIndex(ctx); err != nil {
		return Info{}, refErr("stat", ref, err)
	}
	if e, ok := s.idx.lookup(ref); ok {
		return s.packedInfo(e), nil
	}
	info, err := s.statLoose(ctx, ref)
	if !errors.Is(err, fs.ErrNotExist) {
		return info, refErr("stat", ref, err)
	}
	if err := s.refresh(ctx); err != nil {
		return Info{}, refErr("stat", ref, err)
	}
	if e, ok := s.idx.lookup(ref); ok {
		return s.packedInfo(e), nil
	}
	return Info{}, refErr("stat", ref, fs.ErrNotExist)
}

func (s *Store) packedInfo(e entry) Info {
	return Info{Ref: e.ref, Size: e.size, StoredSize: e.n, Codec: e.codec, Packed: true, ModTime: s.idx.modTime(e.packID)}
}

func (s *Store) statLoose(ctx context.Context, ref Ref) (Info, error) {
	name := s.looseName(ref)
	fi, err := s.st.Stat(ctx, name)
	if err != nil {
		return Info{}, err
	}
	prefix, err := s.st.ReadPrefix(ctx, name, headerSize)
	if err != nil {
		return Info{}, err
	}
	h, err := parseHeader(prefix)
	if err != nil {
		return Info{}, err
	}
	if h.trailer {
		if h.size, err = s.readTrailer(ctx, name, fi.Size); err != nil {
			return Info{}, err
		}
	}
	return Info{Ref: ref, Size: h.size, StoredSize: fi.Size, Codec: h.codec, ModTime: fi.ModTime}, nil
}

func (s *Store) readTrailer(ctx context.Context, name string, size int64) (int64, error) {
	if size < headerSize+trailerSize {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	rc, err := s.st.OpenRange(ctx, name, size-trailerSize, trailerSize)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	var t [trailerSize]byte
	if err := readFull(rc, t[:]); err != nil {
		return 0, err
	}
	return parseTrailer(t[:])
}

// Delete removes every stored copy of ref. A packed copy leaves its pack's
// index at once; its bytes go when GC repacks the pack.
func (s *Store) Delete(ctx context.Context, ref Ref) error {
	if err := s.checkRef("delete", ref); err != nil {
		return err
	}
	found := false
	switch err := s.st.Unlink(ctx, s.looseName(ref)); {
	case err == nil:
		found = true
	case !errors.Is(err, fs.ErrNotExist):
		return refErr("delete", ref, err)
	}
	if err := s.refresh(ctx); err != nil {
		return refErr("delete", ref, err)
	}
	for _, id := range s.idx.packsHolding(ref) {
		n, err := s.dropFromPack(ctx, id, func(e entry) bool { return e.ref == ref })
		if err != nil {
			return refErr("delete", ref, err)
		}
		found = found || n > 0
	}
	if err := s.refresh(ctx); err != nil {
		return refErr("delete", ref, err)
	}
	if !found {
		return refErr("delete", ref, fs.ErrNotExist)
	}
	return nil
}
