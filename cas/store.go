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

	coders *coders   // see shared
	warmed sync.Once // an encoder warmed for batches (see addSmall)

	idx    index
	blocks blockCache
	loose  looseSeen
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
		autoPack:      DefaultAutoPack,
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
	s := &Store{st: st, cfg: cfg, coders: shared}
	if cfg.maxBlobSize != DefaultMaxBlobSize {
		s.coders = newCoders()
	}
	return s, nil
}

// Algorithm returns the algorithm Put uses.
func (s *Store) Algorithm() Algorithm { return s.cfg.algo }

// Names on storage, see the package documentation.
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

func (s *Store) checkRef(op string, ref Ref) error {
	if !ref.valid() {
		return refErr(op, ref, fmt.Errorf("%w: zero ref", ErrInvalidRef))
	}
	return nil
}

// Put stores data and returns its ref under the store's algorithm. Content
// already present is not written again. The blob is durable when Put returns.
func (s *Store) Put(ctx context.Context, data []byte) (Ref, error) {
	return s.putBytes(ctx, "put", s.cfg.algo, Ref{}, data)
}

// putBytes hashes and stores data; with want set, data must hash to it. The
// hash comes first so that present content costs no compression.
func (s *Store) putBytes(ctx context.Context, op string, algo Algorithm, want Ref, data []byte) (Ref, error) {
	if err := algo.usable(); err != nil {
		return Ref{}, refErr(op, want, err)
	}
	if int64(len(data)) > s.cfg.maxBlobSize {
		return Ref{}, refErr(op, want, fmt.Errorf("%w: %d bytes, max %d", ErrTooLarge, len(data), s.cfg.maxBlobSize))
	}
	ref := Ref{algo: algo, digest: algo.sum(data)}
	if !want.IsZero() && ref != want {
		return Ref{}, refErr(op, want, fmt.Errorf("%w: content hashes to %v", ErrCorrupt, ref))
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	var stored []byte
	encode := func() error {
		var err error
		stored, _, err = s.encode((*bp)[:0], data)
		*bp = stored
		return err
	}
	if !s.idx.isLoaded() && s.st.Capabilities().WriteOnce {
		// The first put of a store lists the pack indexes anyway; a
		// write-once create (one request on a bucket) then costs one
		// request more when the blob is new, where reading the loose copy
		// first would cost two.
		if ok, err := s.packedFresh(ctx, ref); err != nil || ok {
			return ref, refErr(op, ref, err)
		}
		if err := encode(); err != nil {
			return ref, refErr(op, ref, err)
		}
		s.loose.wrote(ref.algo)
		err := backend.CreateFile(ctx, s.st, s.looseName(ref), stored)
		if !errors.Is(err, fs.ErrExist) {
			return ref, refErr(op, ref, err)
		}
		stored = nil // present: check it as any put does
	}
	ok, missing, err := s.presentHealthy(ctx, ref)
	if err != nil || ok {
		return ref, refErr(op, ref, err)
	}
	if stored == nil {
		if err := encode(); err != nil {
			return ref, refErr(op, ref, err)
		}
	}
	// Both writes are atomic, so the final name holds a whole object or
	// none, and two writers of one ref both write valid objects. A missing
	// blob takes the write-once create (one request on a bucket); one that
	// appeared meanwhile was put by another writer. An old or corrupt copy
	// is replaced.
	s.loose.wrote(ref.algo)
	if missing && s.st.Capabilities().WriteOnce {
		err = backend.CreateFile(ctx, s.st, s.looseName(ref), stored)
		if errors.Is(err, fs.ErrExist) {
			err = nil
		}
	} else {
		err = s.st.WriteFile(ctx, s.looseName(ref), stored)
	}
	return ref, refErr(op, ref, err)
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
	if err := want.algo.usable(); err != nil {
		return refErr("put", want, err)
	}
	if ok, err := s.present(ctx, want); err != nil || ok {
		return refErr("put", want, err)
	}
	_, err := s.putReader(ctx, "put", want.algo, want, r)
	return err
}

func (s *Store) putReader(ctx context.Context, op string, algo Algorithm, want Ref, r io.Reader) (Ref, error) {
	if err := algo.usable(); err != nil {
		return Ref{}, refErr(op, want, err)
	}
	limit := min(s.cfg.streamBuffer, s.cfg.maxBlobSize)
	bp := s.getBuf()
	defer s.putBuf(bp)
	buf, err := readUpTo(r, (*bp)[:0], limit+1)
	*bp = buf
	switch {
	case errors.Is(err, io.EOF):
		return s.putBytes(ctx, op, algo, want, buf)
	case err != nil:
		return Ref{}, refErr(op, want, err)
	case limit == s.cfg.maxBlobSize:
		return Ref{}, refErr(op, want, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, s.cfg.maxBlobSize))
	}
	return s.putStaged(ctx, op, algo, want, buf, r)
}

// readUpTo appends from r to buf until r ends (io.EOF) or buf holds n
// bytes (nil), growing buf with the data rather than to n up front.
func readUpTo(r io.Reader, buf []byte, n int64) ([]byte, error) {
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := r.Read(buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
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
		defer s.putStreamEncoder(er.enc)
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
	if ok, _, err := s.presentHealthy(ctx, ref); err != nil || ok {
		drop()
		return ref, refErr(op, ref, err)
	}
	s.loose.wrote(ref.algo)
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

// present is the dedup check of a put: the cached pack indexes and the loose
// object, without re-listing indexes on every new blob. It may miss a blob
// another process packed since the last refresh; the put then stores a
// second copy, which costs space, never correctness.
//
// A copy older than half the grace period does not count: the put writes it
// again (loose, same bytes), so the blob is young when Put returns and GC
// spares it until the caller has recorded the ref in a root. Without that, a
// dedup hit on an old unreferenced blob could be swept right after Put.
func (s *Store) present(ctx context.Context, ref Ref) (bool, error) {
	return s.exists(ctx, ref, true)
}

// presentHealthy is present for a put that holds the bytes: a loose copy
// that does not verify does not count (putting the right bytes again
// repairs a corrupt blob), and packed copies are trusted (Verify and GC's
// repack check them). It reads the loose object with its time in one
// request (backend.OpenInfo). missing reports that there is no loose copy, so a write-once create fits.
func (s *Store) presentHealthy(ctx context.Context, ref Ref) (ok, missing bool, err error) {
	if ok, err := s.packedFresh(ctx, ref); err != nil || ok {
		return ok, false, err
	}
	obj, info, err := s.openLooseInfo(ctx, ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, true, nil
	case err != nil && isBad(err):
		return false, false, nil
	case err != nil:
		return false, false, err
	case !s.young(info.ModTime):
		obj.closer.Close()
		return false, false, nil
	}
	if err := s.drain("put", ref, obj); err != nil {
		if isBad(err) {
			s.cfg.log.Warn("cas: rewriting a corrupt blob", "ref", ref, "err", err)
			return false, false, nil
		}
		return false, false, err
	}
	return true, false, nil
}

// packedFresh reports whether a pack holds ref and is young enough for
// GC's grace (see present).
func (s *Store) packedFresh(ctx context.Context, ref Ref) (bool, error) {
	if err := s.ensureIndex(ctx); err != nil {
		return false, err
	}
	e, ok := s.idx.lookup(ref)
	if !ok {
		return false, nil
	}
	t := s.idx.modTime(e.packID)
	return t.IsZero() || s.young(t), nil
}

// exists looks for ref; with fresh, only a copy young enough for GC's grace
// counts.
func (s *Store) exists(ctx context.Context, ref Ref, fresh bool) (bool, error) {
	if err := s.ensureIndex(ctx); err != nil {
		return false, err
	}
	if e, ok := s.idx.lookup(ref); ok {
		// A pack this process wrote has no listed time: it is young.
		if t := s.idx.modTime(e.packID); !fresh || t.IsZero() || s.young(t) {
			return true, nil
		}
	}
	if fresh && s.loose.none(ctx, s, ref.algo) {
		return false, nil
	}
	fi, err := s.st.Stat(ctx, s.looseName(ref))
	if err == nil {
		return !fresh || s.young(fi.ModTime), nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// looseSeen remembers, per algorithm, whether the store holds no loose
// object of it (its directory missing or empty), so that a put looks up
// only the pack indexes: a first snapshot of 5,000 files spent 50 ms of CPU
// (and on a bucket would spend a request each) looking for loose copies
// that a store of packs never has. Asked once per Store, forgotten when the
// Store writes one. Only puts ask (present): a loose object another process
// writes meanwhile costs at worst a second copy of its blob, in a pack,
// never a blob; Has and Get always look.
type looseSeen struct {
	mu    sync.Mutex
	known map[Algorithm]bool // algorithm -> no loose object
}

// none reports whether s has no loose object of algo, listing its
// directory the first time.
func (l *looseSeen) none(ctx context.Context, s *Store, algo Algorithm) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if none, ok := l.known[algo]; ok {
		return none
	}
	none := true // empty
	for _, err := range s.st.List(ctx, s.looseDir(algo)) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false // unknown: asked again next time
		}
		none = err != nil // missing; an entry is a fan-out directory
		break
	}
	l.set(algo, none)
	return none
}

// wrote records that a loose object of algo is about to be written, before
// any look: one racing the write would find the directory still missing.
func (l *looseSeen) wrote(algo Algorithm) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set(algo, false)
}

// set records what is known of algo; mu is held.
func (l *looseSeen) set(algo Algorithm, none bool) {
	if l.known == nil {
		l.known = map[Algorithm]bool{}
	}
	l.known[algo] = none
}

// young reports whether an object written at t is safe from GC for at
// least half the grace period.
func (s *Store) young(t time.Time) bool {
	return s.cfg.grace == 0 || s.cfg.now().Sub(t) < s.cfg.grace/2
}

func (s *Store) has(ctx context.Context, ref Ref) (bool, error) {
	if ok, err := s.exists(ctx, ref, false); err != nil || ok {
		return ok, err
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
		return s.packedInfo(ctx, e), nil
	}
	info, err := s.statLoose(ctx, ref)
	if !errors.Is(err, fs.ErrNotExist) {
		return info, refErr("stat", ref, err)
	}
	if err := s.refresh(ctx); err != nil {
		return Info{}, refErr("stat", ref, err)
	}
	if e, ok := s.idx.lookup(ref); ok {
		return s.packedInfo(ctx, e), nil
	}
	return Info{}, refErr("stat", ref, fs.ErrNotExist)
}

func (s *Store) packedInfo(ctx context.Context, e entry) Info {
	t := s.idx.modTime(e.packID)
	if t.IsZero() {
		// A pack this process wrote has no listed time yet; best effort.
		if fi, err := s.st.Stat(ctx, s.indexName(e.packID)); err == nil {
			t = fi.ModTime
		}
	}
	codec := e.codec
	if codec == codecSolid {
		codec = CodecZstd
	}
	return Info{Ref: e.ref, Size: e.size, StoredSize: e.stored, Codec: codec, Packed: true, ModTime: t}
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
