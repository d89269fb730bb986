package crypt

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/trovekit/trove/backend"
)

func (c *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	const op = "read"
	sname, err := c.check(op, name, false)
	if err != nil {
		return nil, err
	}
	ct, err := c.inner.ReadFile(ctx, sname)
	if err != nil {
		return nil, fail(op, name, err)
	}
	out, err := c.openAll(name, ct)
	if err != nil {
		return nil, corrupt(op, name, err)
	}
	return out, nil
}

// openAll decrypts a whole object in the memory of ct, which it takes: a
// new buffer as large cost a process reading the stat cache or the pack
// index of an encrypted store a page fault every 4 KiB (0.9 MB of
// ciphertext: 230 faults). Each frame opens where it lies, then its
// plaintext moves down to follow the last.
func (c *Storage) openAll(name string, ct []byte) ([]byte, error) {
	out := ct[:0]
	var prev byte
	var off int64
	for pos := 0; pos < len(ct); {
		rest := ct[pos:]
		if len(rest) < hdrSize {
			return out, torn(rest, off)
		}
		kind, n := header(rest)
		if !validHeader(kind, n) {
			return nil, fmt.Errorf("%w: bad frame header at plaintext offset %d", ErrCorrupt, off)
		}
		if len(rest) < n+Overhead {
			return out, torn(rest, off)
		}
		frame := rest[:n+Overhead]
		plain, kind, err := c.s.open(frame[hdrSize+nonceSize:hdrSize+nonceSize], name, off, frame)
		if err != nil {
			return nil, err
		}
		out = append(out, plain...) // ahead of the frame: out ends at off, the frame starts at pos > off
		if err := sequence(prev, kind, off); err != nil {
			return nil, err
		}
		prev, off, pos = kind, off+int64(n), pos+n+Overhead
	}
	if prev == kindWhole {
		return nil, fmt.Errorf("%w: whole write cut at plaintext offset %d", ErrCorrupt, off)
	}
	return out, nil
}

// torn is nil for a torn append at the end (dropped, as a torn line is),
// and the corruption error for a damaged frame that only looks cut short.
func torn(rest []byte, off int64) error {
	if tornOrCorrupt(rest) {
		return fmt.Errorf("%w: frame at plaintext offset %d cut short or damaged", ErrCorrupt, off)
	}
	return nil
}

// sequence checks that a frame of kind may follow one of kind prev (0: the
// first read): a whole write's frames, then appends.
func sequence(prev, kind byte, off int64) error {
	ok := true
	switch prev {
	case kindWhole:
		ok = kind == kindWhole || kind == kindEnd
	case kindEnd, kindAppend:
		ok = kind == kindAppend
	}
	if !ok {
		return fmt.Errorf("%w: frame out of place at plaintext offset %d", ErrCorrupt, off)
	}
	return nil
}

func (c *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return c.OpenRange(ctx, name, 0, -1)
}

func (c *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	const op = "open"
	sname, err := c.check(op, name, false)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	rc, err := c.openRange(ctx, name, sname, offset, length)
	return rc, fail(op, name, err)
}

func (c *Storage) openRange(ctx context.Context, name, sname string, offset, length int64) (io.ReadCloser, error) {
	if length == 0 {
		offset = 0 // still an open: a missing file or a directory fails
	}
	var ctPos, plainPos int64
	switch {
	case offset == 0:
	case !c.appent(name):
		// Whole frames of FrameSize: the frame holding offset is found by
		// arithmetic, and only the frames the range covers are read.
		i := offset / FrameSize
		ctPos, plainPos = i*fullFrame, i*FrameSize
		if i > math.MaxInt64/fullFrame-1 {
			ctPos, plainPos = math.MaxInt64, offset // past any end
		}
	default:
		var err error
		if ctPos, plainPos, err = c.locate(ctx, sname, offset); err != nil {
			return nil, err
		}
	}
	ctLen := int64(-1)
	if length >= 0 && length < 1<<48 && !c.appent(name) {
		frames := (offset+length+FrameSize-1)/FrameSize - plainPos/FrameSize
		ctLen = max(frames, 1) * fullFrame
	}
	rc, err := c.inner.OpenRange(ctx, sname, ctPos, ctLen)
	if err != nil {
		return nil, err
	}
	r := &reader{c: c, name: name, rc: rc, off: plainPos, skip: offset - plainPos, left: length}
	if length == 0 {
		r.left, r.skip = 0, 0
	}
	return r, nil
}

// locate finds a frame of an appended file at or before the plaintext
// offset off, walking back from the end through the trailers, a small read
// each, for a few frames; else the start.
func (c *Storage) locate(ctx context.Context, sname string, off int64) (ctPos, plainPos int64, err error) {
	info, err := c.inner.Stat(ctx, sname)
	if err != nil {
		return 0, 0, err
	}
	end, start, ok, err := c.tail(ctx, sname, info.Size)
	if err != nil || !ok {
		return 0, 0, err
	}
	for range 8 {
		n := info.Size - start - Overhead // the frame's plaintext, as the trailer says
		if info.Size == start+Overhead+n && end-n <= off {
			return start, end - n, nil
		}
		if start < Overhead {
			break
		}
		info.Size = start
		if end, start, ok, err = c.tail(ctx, sname, start); err != nil || !ok {
			return 0, 0, err
		}
	}
	return 0, 0, nil
}

// reader decrypts the frames of a stream from the inner store.
type reader struct {
	c      *Storage
	name   string
	rc     io.ReadCloser
	off    int64 // plaintext offset of the next frame
	skip   int64 // plaintext still to drop before returning bytes
	left   int64 // bytes still to return; < 0: to the end
	prev   byte
	frame  []byte
	plain  []byte
	out    []byte
	err    error
	closed bool
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, backend.PathErr("read", r.name, errStreamClosed)
	}
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.left == 0 {
			return 0, io.EOF
		}
		var n int
		if n, r.err = r.next(p); n > 0 {
			return n, nil
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// next reads, checks and decrypts one frame: into p when it all fits
// there (returning its length), else into out.
func (r *reader) next(p []byte) (int, error) {
	const op = "read"
	if r.frame == nil {
		r.frame = r.c.frameBuf()
	}
	r.frame = grow(r.frame, hdrSize)
	k, err := io.ReadFull(r.rc, r.frame)
	switch {
	case err == io.EOF:
		if r.prev == kindWhole {
			return 0, corrupt(op, r.name, fmt.Errorf("%w: whole write cut at plaintext offset %d", ErrCorrupt, r.off))
		}
		return 0, io.EOF
	case err == io.ErrUnexpectedEOF:
		return 0, r.cut(r.frame[:k])
	case err != nil:
		return 0, fail(op, r.name, err)
	}
	kind, n := header(r.frame)
	if !validHeader(kind, n) {
		return 0, corrupt(op, r.name, fmt.Errorf("%w: bad frame header at plaintext offset %d", ErrCorrupt, r.off))
	}
	r.frame = grow(r.frame, n+Overhead)
	k, err = io.ReadFull(r.rc, r.frame[hdrSize:])
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return 0, r.cut(r.frame[:hdrSize+k])
	case err != nil:
		return 0, fail(op, r.name, err)
	}
	direct := r.skip == 0 && len(p) >= n && (r.left < 0 || r.left >= int64(n))
	dst := r.plain[:0]
	if direct {
		dst = p[:0]
	} else if r.plain == nil {
		dst = r.c.frameBuf()
	}
	plain, kind, err := r.c.s.open(dst, r.name, r.off, r.frame)
	if !direct {
		r.plain = plain
	}
	if err == nil {
		err = sequence(r.prev, kind, r.off)
	}
	if err != nil {
		return 0, corrupt(op, r.name, err)
	}
	r.prev, r.off = kind, r.off+int64(n)
	if direct {
		if r.left >= 0 {
			r.left -= int64(n)
		}
		return n, nil
	}
	if r.skip > 0 {
		d := min(r.skip, int64(len(plain)))
		plain, r.skip = plain[d:], r.skip-d
	}
	if r.left >= 0 && int64(len(plain)) > r.left {
		plain = plain[:r.left]
	}
	if r.left >= 0 {
		r.left -= int64(len(plain))
	}
	r.out = plain
	return 0, nil
}

// frameBuf is an empty buffer with room for a full frame, kept from a
// closed reader: fresh ones (two per read) cost page clearing and GC.
func (c *Storage) frameBuf() []byte {
	if b, ok := c.frames.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 0, fullFrame)
}

// freeFrameBuf keeps b, when it has room for a full frame, for frameBuf.
func (c *Storage) freeFrameBuf(b []byte) {
	if cap(b) >= fullFrame {
		b = b[:0]
		c.frames.Put(&b)
	}
}

// grow returns b resized to n bytes, keeping its first bytes and reusing
// its array when it is large enough.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return append(b[:cap(b)], make([]byte, n-cap(b))...)[:n]
}

// cut handles a stream that ends inside a frame: a torn append ends the
// file; anything else is corruption.
func (r *reader) cut(rest []byte) error {
	if err := torn(rest, r.off); err != nil {
		return corrupt("read", r.name, err)
	}
	return io.EOF
}

func (r *reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.c.freeFrameBuf(r.frame)
	r.c.freeFrameBuf(r.plain)
	r.frame, r.plain, r.out = nil, nil, nil
	return fail("close", r.name, r.rc.Close())
}

func (c *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	const op = "read"
	if _, err := c.check(op, name, false); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	rc, err := c.OpenRange(ctx, name, 0, int64(n))
	if err != nil {
		return nil, fail(op, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// OpenInfo is the inner store's one-request open, for files written whole;
// an appended file is looked at first, for its size.
func (c *Storage) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	const op = "open"
	sname, err := c.check(op, name, false)
	if err != nil {
		return nil, backend.Info{}, err
	}
	if c.appent(name) {
		info, err := c.Stat(ctx, name)
		if err != nil {
			return nil, backend.Info{}, err
		}
		if info.IsDir {
			return nil, backend.Info{}, backend.PathErr(op, name, backend.ErrIsDir)
		}
		rc, err := c.Open(ctx, name)
		return rc, info, err
	}
	rc, info, err := backend.OpenInfo(ctx, c.inner, sname)
	if err != nil {
		return nil, backend.Info{}, fail(op, name, err)
	}
	info.Name, info.Size = name, wholeSize(info.Size)
	return &reader{c: c, name: name, rc: rc, left: -1}, info, nil
}
