package crypt

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"

	"github.com/trovekit/trove/backend"
)

// closedError is the error of a stream used after its Close: both
// backend.ErrClosed and fs.ErrClosed, as driver.Portable's.
type closedError struct{}

func (closedError) Error() string   { return fs.ErrClosed.Error() }
func (closedError) Unwrap() []error { return []error{backend.ErrClosed, fs.ErrClosed} }

var errStreamClosed error = closedError{}

// sealedSize is the size of the whole write of n bytes.
func sealedSize(n int) int {
	return n + max((n+FrameSize-1)/FrameSize, 1)*Overhead
}

// Sealed buffers are kept for reuse, a few and none over maxPooled: in a
// channel, not a sync.Pool, which every GC empties (a 4 MiB put then pays
// for fresh pages again).
const (
	pooledBufs = 2
	maxPooled  = 16 << 20
)

// sealed seals data as a whole write of name into a recycled buffer and
// writes it with write, which must be done with the buffer when it
// returns (as the inner store's WriteFile is). Fresh pages for a 4 MiB
// blob cost more than sealing it: page faults and zeroing.
func (c *Storage) sealed(name string, data []byte, write func([]byte) error) error {
	var buf []byte
	select {
	case buf = <-c.bufs:
	default:
	}
	b := c.s.sealWhole(slices.Grow(buf[:0], sealedSize(len(data))), name, data)
	err := write(b)
	if err == nil && cap(b) <= maxPooled {
		// Kept only after a write that finished: a failed one may have
		// left the bytes with a goroutine of the inner store.
		select {
		case c.bufs <- b[:0]:
		default:
		}
	}
	return err
}

func (c *Storage) WriteFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return err
	}
	return fail(op, name, c.sealed(name, data, func(b []byte) error { return c.inner.WriteFile(ctx, sname, b) }))
}

// CreateFile is the inner store's write-once create of the sealed bytes.
func (c *Storage) CreateFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return err
	}
	return fail(op, name, c.sealed(name, data, func(b []byte) error { return backend.CreateFile(ctx, c.inner, sname, b) }))
}

// PutFile is the inner store's whole-file write of the sealed bytes.
func (c *Storage) PutFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return err
	}
	return fail(op, name, c.sealed(name, data, func(b []byte) error { return backend.PutFile(ctx, c.inner, sname, b) }))
}

func (c *Storage) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	const op = "write"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return 0, err
	}
	n, err := c.writeFrom(ctx, name, sname, r)
	return n, fail(op, name, err)
}

func (c *Storage) writeFrom(ctx context.Context, name, sname string, r io.Reader) (int64, error) {
	sr := &sealReader{s: c.s, name: name, src: r, chunk: make([]byte, FrameSize)}
	_, err := c.inner.WriteFrom(ctx, sname, sr)
	if err != nil && sr.err != nil {
		err = sr.err // the source's error, not the inner store's wrapping of it
	}
	return sr.off, err
}

// sealReader turns a plaintext stream into the frames of a whole write,
// reading one byte ahead to know which frame is the last.
type sealReader struct {
	s       *sealer
	name    string
	src     io.Reader
	chunk   []byte
	ahead   []byte // a byte read past the last chunk
	off     int64
	out     []byte
	pending []byte
	done    bool
	err     error
}

func (r *sealReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.done {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

func (r *sealReader) next() error {
	buf := r.chunk[:copy(r.chunk, r.ahead)]
	r.ahead = r.ahead[:0]
	n, err := io.ReadFull(r.src, r.chunk[len(buf):])
	buf = r.chunk[:len(buf)+n]
	last := false
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		last = true
	case err != nil:
		return err
	default:
		var one [1]byte
		k, err := io.ReadFull(r.src, one[:])
		switch {
		case err == io.EOF:
			last = true
		case err != nil:
			return err
		}
		r.ahead = append(r.ahead, one[:k]...)
	}
	kind := kindWhole
	if last {
		kind, r.done = kindEnd, true
	}
	r.pending = r.s.seal(r.pending[:0], r.name, kind, r.off, buf)
	r.out = r.pending
	r.off += int64(len(buf))
	return nil
}

// OpenWriter opens a writer. On an appendable file (WithAppendable) each
// Sync appends one frame; on any other, each Sync rewrites the file whole
// (so its size stays a function of the object's).
func (c *Storage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	sname, err := c.checkMaking(ctx, op, name, false)
	if err != nil {
		return nil, err
	}
	if !c.appent(name) {
		return c.wholeWriter(ctx, name, sname, opt)
	}
	var off int64
	if !opt.Truncate && !opt.Exclusive {
		if off, err = c.appendOffset(ctx, sname); err != nil {
			return nil, fail(op, name, err)
		}
	}
	w, err := c.inner.OpenWriter(ctx, sname, opt)
	if err != nil {
		return nil, fail(op, name, err)
	}
	return &appendWriter{c: c, name: name, w: w, off: off}, nil
}

// appendOffset is where an append to sname starts, after cutting a torn
// last frame (a crash's) off the file, so that new frames follow the last
// complete one.
func (c *Storage) appendOffset(ctx context.Context, sname string) (int64, error) {
	info, err := c.inner.Stat(ctx, sname)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil || info.IsDir || info.Size == 0 {
		return 0, err // a directory fails at the inner OpenWriter
	}
	end, _, ok, err := c.tail(ctx, sname, info.Size)
	if err != nil || ok {
		return end, err
	}
	data, err := c.inner.ReadFile(ctx, sname)
	if err != nil {
		return 0, err
	}
	end, n := scan(data)
	return end, c.inner.WriteFile(ctx, sname, data[:n])
}

// appendWriter seals what is written into frames of kind append: one per
// Sync, or per FrameSize bytes written between Syncs.
type appendWriter struct {
	c      *Storage
	name   string
	w      backend.Writer
	off    int64
	buf    []byte
	frame  []byte
	err    error
	closed bool
}

func (w *appendWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, backend.PathErr("write", w.name, errStreamClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	for len(w.buf) >= FrameSize {
		if err := w.emit(FrameSize); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// emit seals the first n buffered bytes and writes the frame.
func (w *appendWriter) emit(n int) error {
	w.frame = w.c.s.seal(w.frame[:0], w.name, kindAppend, w.off, w.buf[:n])
	if _, err := w.w.Write(w.frame); err != nil {
		w.err = fail("write", w.name, err)
		return w.err
	}
	w.off += int64(n)
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	return nil
}

func (w *appendWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		return w.emit(len(w.buf))
	}
	return nil
}

func (w *appendWriter) Sync() error {
	if w.closed {
		return backend.PathErr("sync", w.name, errStreamClosed)
	}
	if err := w.flush(); err != nil {
		return err
	}
	return fail("sync", w.name, w.w.Sync())
}

func (w *appendWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.flush()
	if cerr := fail("close", w.name, w.w.Close()); err == nil {
		err = cerr
	}
	return err
}

// wholeWriter holds a file that is not appendable in memory and writes it
// whole at each Sync and at Close.
type wholeWriter struct {
	c      *Storage
	ctx    context.Context
	name   string
	sname  string
	buf    []byte
	dirty  bool
	closed bool
}

func (c *Storage) wholeWriter(ctx context.Context, name, sname string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	w := &wholeWriter{c: c, ctx: ctx, name: name, sname: sname}
	if opt.Exclusive {
		// The inner writer creates the file, or fails, atomically.
		iw, err := c.inner.OpenWriter(ctx, sname, opt)
		if err != nil {
			return nil, fail(op, name, err)
		}
		if err := iw.Close(); err != nil {
			return nil, fail(op, name, err)
		}
		w.dirty = true
		return w, nil
	}
	if !opt.Truncate {
		ct, err := c.inner.ReadFile(ctx, sname)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fail(op, name, err)
		default:
			if w.buf, err = c.openAll(name, ct); err != nil {
				return nil, corrupt(op, name, err)
			}
		}
	}
	// Replaced, not truncated in place: a reader sees the old file or the
	// new, never a frame cut by the truncation.
	w.dirty = true
	if err := w.flush(ctx, op); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *wholeWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, backend.PathErr("write", w.name, errStreamClosed)
	}
	w.buf = append(w.buf, p...)
	w.dirty = true
	return len(p), nil
}

func (w *wholeWriter) flush(ctx context.Context, op string) error {
	if !w.dirty {
		return nil
	}
	if err := w.c.sealed(w.name, w.buf, func(b []byte) error { return w.c.inner.WriteFile(ctx, w.sname, b) }); err != nil {
		return fail(op, w.name, err)
	}
	w.dirty = false
	return nil
}

func (w *wholeWriter) Sync() error {
	if w.closed {
		return backend.PathErr("sync", w.name, errStreamClosed)
	}
	return w.flush(context.WithoutCancel(w.ctx), "sync")
}

func (w *wholeWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.flush(context.WithoutCancel(w.ctx), "close")
}
