package cas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/walk"
)

// looseObject is one object in the loose directories. ref is zero for a name
// that is not a well-formed loose blob name.
type looseObj struct {
	ref  Ref
	info backend.Info
}

func (s *Store) listLoose(ctx context.Context) iter.Seq2[looseObj, error] {
	return func(yield func(looseObj, error) bool) {
		for _, algo := range []Algorithm{SHA256, BLAKE3} {
			dir := s.looseDir(algo)
			for fi, err := range walk.Ahead(ctx, s.st, dir, ScanAhead) {
				if err != nil {
					yield(looseObj{}, err)
					return
				}
				if fi.IsDir {
					continue
				}
				o := looseObj{info: fi}
				rel := strings.TrimPrefix(fi.Name, dir+"/")
				if fan, hex, ok := strings.Cut(rel, "/"); ok && len(hex) == 64 && fan == hex[:2] {
					if r, err := parseDigest(algo, hex); err == nil {
						o.ref = r
					}
				}
				if !yield(o, nil) {
					return
				}
			}
		}
	}
}

// listIndexes yields every index object, decoded, or with the error that
// stopped it from decoding.
type indexObj struct {
	id      string
	info    backend.Info
	size    int64
	entries []entry
	cold    bool // written by GC's repack
	err     error
}

func (s *Store) listIndexes(ctx context.Context) ([]indexObj, error) {
	var out []indexObj
	for fi, err := range s.st.List(ctx, s.indexDir()) {
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		if fi.IsDir {
			continue
		}
		o := indexObj{id: fi.Base(), info: fi}
		if !validID(o.id) {
			o.err = backend.PathErr("read", fi.Name, fmt.Errorf("%w: unexpected object", ErrCorrupt))
			out = append(out, o)
			continue
		}
		data, err := s.st.ReadFile(ctx, fi.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, err
		}
		o.size, o.entries, err = decodeIndex(o.id, data)
		o.cold = isColdIndex(data)
		if err != nil {
			o.err = backend.PathErr("read", fi.Name, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// listPacks yields every pack object, keyed by id; other names are ignored.
func (s *Store) listPacks(ctx context.Context) (map[string]backend.Info, error) {
	out := map[string]backend.Info{}
	for fi, err := range walk.Ahead(ctx, s.st, s.packDir(), ScanAhead) {
		if err != nil {
			return nil, err
		}
		if id := fi.Base(); !fi.IsDir && validID(id) && fi.Name == s.packName(id) {
			out[id] = fi
		}
	}
	return out, nil
}

// Walk yields the ref of every stored blob once, loose ones first, then
// packed ones. It stops at the first listing error.
func (s *Store) Walk(ctx context.Context) iter.Seq2[Ref, error] {
	return func(yield func(Ref, error) bool) {
		seen := map[Ref]struct{}{}
		for o, err := range s.listLoose(ctx) {
			if err != nil {
				yield(Ref{}, err)
				return
			}
			if o.ref.IsZero() {
				continue
			}
			seen[o.ref] = struct{}{}
			if !yield(o.ref, nil) {
				return
			}
		}
		if err := s.refresh(ctx); err != nil {
			yield(Ref{}, err)
			return
		}
		packs := s.idx.snapshot()
		slices.SortFunc(packs, func(a, b *packIdx) int { return strings.Compare(a.id, b.id) })
		for _, p := range packs {
			for _, e := range s.idx.entriesOf(p) {
				if _, ok := seen[e.ref]; ok {
					continue
				}
				seen[e.ref] = struct{}{}
				if !yield(e.ref, nil) {
					return
				}
			}
		}
	}
}

// Verify re-reads and re-hashes every stored copy of every blob. It yields
// (ref, nil) for a good copy and (ref, err) for a bad one, err wrapping
// ErrCorrupt (or ErrTooLarge, or ErrAlgorithmUnavailable for a blob this
// build cannot hash); a problem not tied to one blob (a stray object,
// an unreadable index) comes with the zero Ref and an error naming the
// object. Iteration goes on past bad blobs and stops at a storage error.
func (s *Store) Verify(ctx context.Context) iter.Seq2[Ref, error] {
	return func(yield func(Ref, error) bool) {
		for o, err := range s.listLoose(ctx) {
			if err != nil {
				yield(Ref{}, err)
				return
			}
			if o.ref.IsZero() {
				if !yield(Ref{}, backend.PathErr("verify", o.info.Name, fmt.Errorf("%w: unexpected object", ErrCorrupt))) {
					return
				}
				continue
			}
			err := s.verifyLoose(ctx, o.ref)
			if err != nil && !ofOneBlob(err) {
				yield(o.ref, err)
				return
			}
			if !yield(o.ref, err) {
				return
			}
		}
		indexes, err := s.listIndexes(ctx)
		if err != nil {
			yield(Ref{}, err)
			return
		}
		for _, x := range indexes {
			if x.err != nil {
				if !yield(Ref{}, x.err) {
					return
				}
				continue
			}
			if !s.verifyPack(ctx, x, yield) {
				return
			}
		}
	}
}

func isBad(err error) bool { return isCorrupt(err) || errors.Is(err, ErrTooLarge) }

// ofOneBlob says whether Verify goes on past err: a bad blob, or one whose
// algorithm this build cannot hash (ErrAlgorithmUnavailable).
func ofOneBlob(err error) bool { return isBad(err) || errors.Is(err, ErrAlgorithmUnavailable) }

// isCorrupt says whether err is corruption: of a blob, or of the bytes
// the storage holds (backend.ErrCorrupt: an encrypted store's tag fails).
func isCorrupt(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, backend.ErrCorrupt)
}

func (s *Store) verifyLoose(ctx context.Context, ref Ref) error {
	obj, err := s.openLoose(ctx, ref)
	if err != nil {
		if isBad(err) {
			return refErr("verify", ref, err)
		}
		return err
	}
	return s.drain("verify", ref, obj)
}

// drain reads obj to the end through a verifying reader.
func (s *Store) drain(op string, ref Ref, obj object) error {
	br, err := s.newBlobReader(op, ref, obj)
	if err != nil {
		obj.closer.Close()
		return refErr(op, ref, err)
	}
	defer br.Close()
	_, err = io.Copy(io.Discard, br)
	return err
}

// verifyPack reads a pack once from start to end, checking each record its
// index names. It returns false when yield asked to stop or storage failed.
func (s *Store) verifyPack(ctx context.Context, x indexObj, yield func(Ref, error) bool) bool {
	entries := slices.Clone(x.entries)
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.off, b.off) })
	rc, err := s.st.Open(ctx, s.packName(x.id))
	if errors.Is(err, fs.ErrNotExist) {
		for _, e := range entries {
			if !yield(e.ref, refErr("verify", e.ref, fmt.Errorf("%w: pack %s is missing", ErrCorrupt, x.id))) {
				return false
			}
		}
		return true
	}
	if err != nil {
		yield(Ref{}, err)
		return false
	}
	defer rc.Close()
	pack := &countReader{r: rc}
	// The blobs of a block follow one another: it is decoded once, not
	// once per blob (a cold block holds thousands of small trees).
	blockOff, block := int64(-1), []byte(nil)
	for _, e := range entries {
		var verr error
		if e.codec == codecSolid && e.off == blockOff {
			verr = s.verifyMember(block, e)
		} else if e.off >= pack.n {
			if _, err := io.CopyN(io.Discard, pack, e.off-pack.n); err != nil && !errors.Is(err, io.EOF) {
				yield(Ref{}, err)
				return false
			}
			rec := io.LimitReader(pack, e.n)
			blockOff, block = -1, nil
			verr = s.verifyRecord(e, io.NopCloser(rec), &block)
			if block != nil {
				blockOff = e.off
			}
			if _, err := io.Copy(io.Discard, rec); err != nil {
				yield(Ref{}, err)
				return false
			}
		} else {
			// Overlapping records (a hostile index): read this one on its own.
			rc, err := s.st.OpenRange(ctx, s.packName(e.packID), e.off, e.n)
			if err != nil {
				yield(Ref{}, err)
				return false
			}
			verr = s.verifyRecord(e, rc, nil)
		}
		if verr != nil && !ofOneBlob(verr) {
			yield(e.ref, verr)
			return false
		}
		if !yield(e.ref, verr) {
			return false
		}
	}
	return true
}

// verifyRecord verifies the blob of e in its record rc; for a blob of a
// block, the decoded block goes to *block when block is not nil.
func (s *Store) verifyRecord(e entry, rc io.ReadCloser, block *[]byte) error {
	if e.codec == codecSolid {
		rec, err := io.ReadAll(io.LimitReader(rc, e.n))
		rc.Close()
		if err != nil {
			return refErr("verify", e.ref, err)
		}
		if int64(len(rec)) < e.n {
			return refErr("verify", e.ref, fmt.Errorf("%w: pack %s is truncated", ErrCorrupt, e.packID))
		}
		b, err := s.decodeBlock(rec)
		if err != nil {
			return refErr("verify", e.ref, err)
		}
		if block != nil {
			*block = b
		}
		return s.verifyMember(b, e)
	}
	obj, err := packedObject(rc, e)
	if err != nil {
		rc.Close()
		return refErr("verify", e.ref, err)
	}
	return s.drain("verify", e.ref, obj)
}

// verifyMember verifies the blob of e in its decoded block.
func (s *Store) verifyMember(block []byte, e entry) error {
	obj, err := blockObject(cachedBlock{data: block, full: true}, e)
	if err != nil {
		return refErr("verify", e.ref, err)
	}
	return s.drain("verify", e.ref, obj)
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}
