package cas

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// framedBlock returns a block record of blockStore's with several frames,
// its entries in block order, and its frames.
func framedBlock(t *testing.T, s *Store) ([]byte, []entry, []frameSpan) {
	t.Helper()
	es := solidEntries(t, s)
	slices.SortFunc(es, func(a, b entry) int {
		if a.off != b.off {
			return int(a.off - b.off)
		}
		return int(a.inner - b.inner)
	})
	for len(es) > 0 {
		n := 1
		for n < len(es) && es[n].off == es[0].off && es[n].packID == es[0].packID {
			n++
		}
		block := es[:n]
		es = es[n:]
		if rec, spans := recordFrames(t, s, block[0]); len(spans) >= 3 {
			return rec, block, spans
		}
	}
	t.Fatal("no block of three frames or more")
	return nil, nil, nil
}

// recordFrames reads the block record of e and walks its frames.
func recordFrames(t *testing.T, s *Store, e entry) ([]byte, []frameSpan) {
	t.Helper()
	rec, err := s.readRecord(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseBlockHeader(rec)
	if err != nil {
		t.Fatal(err)
	}
	spans, ok := blockFrames(rec[headerSize:], h.size)
	if !ok {
		t.Fatalf("block at %d: frames not told apart", e.off)
	}
	return rec, spans
}

// frameOf returns the number of the frame holding e.
func frameOf(spans []frameSpan, e entry) int {
	for i, f := range spans {
		if e.inner >= f.at && e.inner+e.size <= f.at+f.size {
			return i
		}
	}
	return -1
}

// blobPerFrame returns a blob of each frame, by frame number.
func blobPerFrame(block []entry, spans []frameSpan) map[int]entry {
	out := map[int]entry{}
	for _, e := range block {
		out[frameOf(spans, e)] = e
	}
	return out
}

// A Batch's block is frames of blockFrameMin or more that end at blob
// ends; reading a blob decodes its frame only, and a blob of another
// frame that frame only, kept beside the first.
func TestBlockFrames(t *testing.T) {
	ctx := t.Context()
	s, blobs, refs := blockStore(t)
	rec, block, spans := framedBlock(t, s)
	ends := map[int64]bool{}
	for _, e := range block {
		ends[e.inner+e.size] = true
		if frameOf(spans, e) < 0 {
			t.Fatalf("blob at %d+%d is in no one frame", e.inner, e.size)
		}
	}
	for i, f := range spans {
		if !ends[f.at+f.size] || (i < len(spans)-1 && f.size < blockFrameMin) {
			t.Fatalf("frame %d of %d bytes ends at %d, not at a blob's end past %d bytes", i, f.size, f.at+f.size, blockFrameMin)
		}
	}
	blob := func(e entry) []byte { return blobs[slices.Index(refs, e.ref)] }
	byFrame := blobPerFrame(block, spans)
	mid, other := byFrame[1], byFrame[2]
	if got, err := s.Get(ctx, mid.ref); err != nil || !bytes.Equal(got, blob(mid)) {
		t.Fatalf("Get of a blob of frame 1 = %v", err)
	}
	c := s.blocks.first(blockKey{mid.packID, mid.off})
	if c.full || c.at != spans[1].at || int64(len(c.data)) != spans[1].size {
		t.Fatalf("decoded %d bytes from %d (full %v), want frame 1: %d bytes from %d", len(c.data), c.at, c.full, spans[1].size, spans[1].at)
	}
	if got, err := s.Get(ctx, other.ref); err != nil || !bytes.Equal(got, blob(other)) {
		t.Fatalf("Get of a blob of frame 2 = %v", err)
	}
	kept := s.blocks.kept(blockKey{mid.packID, mid.off})
	if len(kept) != 2 || kept[1].full || kept[1].at != spans[2].at || int64(len(kept[1].data)) != spans[2].size {
		t.Fatalf("after a blob of frame 2, kept %d parts, want frames 1 and 2", len(kept))
	}
	if got, err := s.Get(ctx, mid.ref); err != nil || !bytes.Equal(got, blob(mid)) || len(s.blocks.kept(blockKey{mid.packID, mid.off})) != 2 {
		t.Fatalf("Get of the blob of frame 1 again = %v, or the frames kept changed", err)
	}

	// A record of one frame (as trove wrote blocks before) reads the same.
	whole, err := s.decodeBlock(rec)
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.frame(appendHeader(nil, CodecZstd, int64(len(whole))), whole, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.decodeMember(old, mid, false); err != nil || got.at != 0 || !bytes.Equal(got.data[mid.inner:mid.inner+mid.size], blob(mid)) {
		t.Fatalf("a blob of a one-frame block = %v", err)
	}
}

// A damaged or cut frame fails with ErrCorrupt, whether its headers are
// read or the whole record is decoded; blobs of the frames intact still
// read.
func TestBlockFramesDamaged(t *testing.T) {
	ctx := t.Context()
	s, _, _ := blockStore(t)
	rec, block, spans := framedBlock(t, s)
	byFrame := blobPerFrame(block, spans)
	first, mid := byFrame[0], byFrame[1]
	f := spans[1]
	cut := rec[:headerSize+f.off+(f.end-f.off)/2]
	if _, err := s.decodeMember(cut, mid, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a blob of a cut frame = %v, want ErrCorrupt", err)
	}
	for name, at := range map[string]int64{"content size": f.off + 5, "block header": f.off + 7, "payload": (f.off + f.end) / 2} {
		bad := slices.Clone(rec)
		bad[headerSize+at] ^= 0x55
		c, err := s.decodeMember(bad, mid, false)
		if err == nil {
			if _, err = s.readAll("get", mid.ref, mustObject(t, c, mid)); err == nil {
				t.Fatalf("damaged %s: a blob of the frame read", name)
			}
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("damaged %s: %v, want ErrCorrupt", name, err)
		}
	}

	damaged := slices.Clone(rec)
	damaged[headerSize+(f.off+f.end)/2] ^= 0x55
	name := s.packName(mid.packID)
	pack, err := s.st.ReadFile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	copy(pack[mid.off:], damaged)
	if err := s.st.WriteFile(ctx, name, pack); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, mid.ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a blob of a damaged frame = %v, want ErrCorrupt", err)
	}
	s.blocks = blockCache{}
	if _, err := s.Get(ctx, first.ref); err != nil {
		t.Fatalf("Get of a blob of an intact frame = %v", err)
	}
}

func mustObject(t *testing.T, c cachedBlock, e entry) object {
	t.Helper()
	obj, err := blockObject(c, e)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// A block's record is read into the buffer given where it fits (one buffer
// of the process for every record decoded), else into its own.
func TestReadRecordTo(t *testing.T) {
	s, _, _ := blockStore(t)
	e := solidEntries(t, s)[0]
	want, err := s.readRecord(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, e.n)
	got, err := s.readRecordTo(t.Context(), e, buf)
	if err != nil || !bytes.Equal(got, want) || &got[0] != &buf[:1][0] {
		t.Fatalf("record read into a buffer it fits: equal %v, in the buffer %v, %v", bytes.Equal(got, want), err == nil && &got[0] == &buf[:1][0], err)
	}
	small := make([]byte, 0, e.n-1)
	got, err = s.readRecordTo(t.Context(), e, small)
	if err != nil || !bytes.Equal(got, want) || &got[0] == &small[:1][0] {
		t.Fatalf("record read with a buffer too small: %v", err)
	}
}

// A blob alone in its frame is decoded for the caller: Get returns those
// bytes verified, keeps no copy a caller could change, and a damaged frame
// is ErrCorrupt.
func TestBlockFrameOwned(t *testing.T) {
	ctx := t.Context()
	var blobs [][]byte
	for i := range 4 {
		blobs = append(blobs, sourceLike(blockFrameMin+1000*i, i))
	}
	s, refs := storeOf(t, blobs)
	st := s.st
	es := solidEntries(t, s)
	if len(es) != len(blobs) {
		t.Fatalf("%d of %d blobs in blocks", len(es), len(blobs))
	}
	e := es[1]
	i := slices.Index(refs, e.ref)
	got, err := s.Get(ctx, e.ref)
	if err != nil || !bytes.Equal(got, blobs[i]) {
		t.Fatalf("Get = %v", err)
	}
	if n := s.blocks.len(); n != 0 {
		t.Fatalf("%d blocks kept for a blob alone in its frame", n)
	}
	got[0] ^= 0xff
	if again, err := s.Get(ctx, e.ref); err != nil || !bytes.Equal(again, blobs[i]) {
		t.Fatalf("Get after the caller changed its bytes = %v", err)
	}
	_, spans := recordFrames(t, s, e)
	if frameOf(spans, e) < 0 {
		t.Fatal("the blob is in no one frame")
	}
	f := spans[frameOf(spans, e)]
	if f.at != e.inner || f.size != e.size {
		t.Fatalf("blob at %d+%d in a frame of %d+%d", e.inner, e.size, f.at, f.size)
	}
	pack, err := st.ReadFile(ctx, s.packName(e.packID))
	if err != nil {
		t.Fatal(err)
	}
	pack[e.off+headerSize+(f.off+f.end)/2] ^= 0x55
	if err := st.WriteFile(ctx, s.packName(e.packID), pack); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, e.ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get from a damaged frame = %v, want ErrCorrupt", err)
	}
}
