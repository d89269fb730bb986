package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/trovekit/trove/backend"
)

// checkPlace makes sure a file may live at name: no parent is a file and
// name is not a directory. Parents known not to be files are cached; Unlink
// and Rename clear the cache.
func (s *Storage) checkPlace(ctx context.Context, op, name string) error {
	for _, p := range backend.Parents(name) {
		s.mu.Lock()
		ok := s.notFile[p]
		s.mu.Unlock()
		if ok {
			continue
		}
		_, err := s.b.Attributes(ctx, enc(p))
		if err == nil {
			return backend.PathErr(op, name, fmt.Errorf("%w: %s is a file", backend.ErrNotDir, p))
		}
		if !isNotFound(err) {
			return fail(op, name, err)
		}
		s.mu.Lock()
		s.notFile[p] = true
		s.mu.Unlock()
	}
	dir, err := s.isDir(ctx, name)
	if err != nil {
		return fail(op, name, err)
	}
	if dir {
		return backend.PathErr(op, name, backend.ErrIsDir)
	}
	return nil
}

func (s *Storage) forgetDirs() {
	s.mu.Lock()
	clear(s.notFile)
	s.mu.Unlock()
}

// replace makes r the content of name in one atomic step. A file without
// segments is one object, replaced in place. A file with segments gets a
// write base: an empty segment claims the next number (so a writer racing
// for it fails instead of merging), the base object under that number holds
// the new content and hides every lower number, and the objects it hides
// are deleted after. Readers see the old file or the new one.
func (s *Storage) replace(ctx context.Context, op, name string, r io.Reader) (int64, error) {
	objs, err := s.listObjs(ctx, name)
	if err != nil {
		return 0, fail(op, name, err)
	}
	cr := &countingReader{r: r}
	if len(objs) == 0 {
		err := s.put(ctx, name, cr)
		return cr.n, fail(op, name, err)
	}
	n := objs[len(objs)-1].n + 1
	for try := 0; ; try++ {
		lost, err := s.create(ctx, objKey(name, n, kindSeg), bytes.NewReader(nil))
		if err == nil {
			break
		}
		if !lost || try >= maxRetries {
			return 0, fail(op, name, err)
		}
		n++
	}
	if err := s.put(ctx, objKey(name, n, kindWrite), cr); err != nil {
		return cr.n, fail(op, name, err)
	}
	// The object under the name marks that the file exists; leftovers of
	// an unlinked file may be all there was.
	if _, err := s.b.Attributes(ctx, enc(name)); isNotFound(err) {
		if err := s.put(ctx, name, bytes.NewReader(nil)); err != nil {
			return cr.n, fail(op, name, err)
		}
	} else if err != nil {
		return cr.n, fail(op, name, err)
	}
	s.drop(ctx, name, objs)
	return cr.n, nil
}

type countingReader struct {
	r      io.Reader
	n      int64
	origin int64 // offset of the first Seek, so a rewind resets n
	seeked bool
}

// Seek lets an upload of a seekable source be retried from its start.
func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	sk, ok := c.r.(io.Seeker)
	if !ok {
		return 0, fmt.Errorf("cloud: source cannot seek: %w", errors.ErrUnsupported)
	}
	pos, err := sk.Seek(off, whence)
	if err != nil {
		return pos, err
	}
	if !c.seeked {
		c.origin, c.seeked = pos-c.n, true
	}
	c.n = pos - c.origin
	return pos, nil
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// WriteFile replaces name with data in one object write.
func (s *Storage) WriteFile(ctx context.Context, name string, data []byte) error {
	_, err := s.writeFrom(ctx, "write", name, bytes.NewReader(data))
	return err
}

// WriteFrom replaces name with the content of r, streamed.
func (s *Storage) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	return s.writeFrom(ctx, "write", name, r)
}

func (s *Storage) writeFrom(ctx context.Context, op, name string, r io.Reader) (int64, error) {
	if err := s.begin(ctx, op, name, false); err != nil {
		return 0, err
	}
	if err := s.checkPlace(ctx, op, name); err != nil {
		return 0, err
	}
	return s.replace(ctx, op, name, r)
}

// OpenWriter opens name for appending; see the package doc for the layout.
func (s *Storage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if err := s.checkPlace(ctx, op, name); err != nil {
		return nil, err
	}
	l, err := s.resolve(ctx, name, true)
	switch {
	case err == nil && opt.Exclusive:
		return nil, backend.PathErr(op, name, fs.ErrExist)
	case err == nil && opt.Truncate:
		if _, err := s.replace(ctx, op, name, bytes.NewReader(nil)); err != nil {
			return nil, err
		}
		if l, err = s.resolve(ctx, name, true); err != nil {
			return nil, fail(op, name, err)
		}
	case err != nil && !isNotFound(err):
		return nil, fail(op, name, err)
	case err != nil:
		// Leftovers of an unlinked file (a crash between its deletes)
		// would read as content: remove them, then create the file; only
		// one creator wins.
		s.drop(ctx, name, l.objs)
		lost, cerr := s.create(ctx, name, bytes.NewReader(nil))
		if cerr != nil && (!lost || opt.Exclusive) {
			if lost {
				return nil, backend.PathErr(op, name, fmt.Errorf("%w: %w", fs.ErrExist, cerr))
			}
			return nil, fail(op, name, cerr)
		}
		if l, err = s.resolve(ctx, name, true); err != nil {
			return nil, fail(op, name, err)
		}
	}
	// Claim the next number with an empty segment. A writer still holding
	// an older number then fails at its next Sync (ErrLocked), so no number
	// that a compaction or a replacement deleted can be filled again by a
	// writer that does not know the new base hides it.
	next := l.last + 1
	if lost, err := s.create(ctx, objKey(name, next, kindSeg), bytes.NewReader(nil)); err != nil {
		if lost {
			return nil, backend.PathErr(op, name, fmt.Errorf("%w: another writer is appending: %w", backend.ErrLocked, err))
		}
		return nil, fail(op, name, err)
	}
	w := &writer{s: s, ctx: context.WithoutCancel(ctx), name: name, next: next + 1, live: len(l.parts),
		prev: objKey(name, next, kindSeg), baseBytes: l.parts[0].size}
	for _, pt := range l.parts[1:] {
		w.segBytes += pt.size
	}
	return w, nil
}

// writer buffers appends and uploads them as one segment per Sync.
type writer struct {
	s    *Storage
	ctx  context.Context
	name string
	buf  []byte
	next uint64 // number of the next segment
	live int    // segments beyond the base
	prev string // this writer's last object, which must still exist
	// bytes in the base and in the segments beyond it
	baseBytes, segBytes int64
	err                 error // first upload error, latched
	closed              bool
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, backend.PathErr("write", w.name, backend.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= w.s.opts.segMax {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *writer) Sync() error {
	if w.closed {
		return backend.PathErr("sync", w.name, backend.ErrClosed)
	}
	return w.flush()
}

// flush uploads the buffer as the next segment. A conditional create makes
// a second writer that reached the same number fail instead of merging.
func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	if w.s.closed.Load() {
		return backend.PathErr("sync", w.name, backend.ErrClosed)
	}
	lost, err := w.s.create(w.ctx, objKey(w.name, w.next, kindSeg), bytes.NewReader(w.buf))
	if err != nil {
		if lost {
			w.err = backend.PathErr("sync", w.name, fmt.Errorf("%w: another writer took segment %d: %w", backend.ErrLocked, w.next, err))
		} else {
			w.err = fail("sync", w.name, err)
		}
		return w.err
	}
	// A compaction or replacement by a writer that opened later may have
	// deleted this number and hidden it under its base; it deleted the
	// number below first (drop goes upwards), so look there.
	if _, err := w.s.b.Attributes(w.ctx, enc(w.prev)); err != nil {
		if isNotFound(err) {
			w.s.drop(w.ctx, w.name, []obj{{key: objKey(w.name, w.next, kindSeg)}})
			err = fmt.Errorf("%w: another writer compacted, replaced or removed the file", backend.ErrLocked)
		}
		w.err = fail("sync", w.name, err)
		return w.err
	}
	w.prev = objKey(w.name, w.next, kindSeg)
	w.next++
	w.live++
	w.segBytes += int64(len(w.buf))
	w.buf = w.buf[:0]
	if on := w.s.opts.compactOn; w.live >= on && (w.segBytes >= w.baseBytes || w.live >= 16*on) {
		// A writer that stays open keeps reads of its file cheap. Failure
		// is not the writer's: the segments hold every byte.
		if key, size, err := w.s.compact(w.ctx, w.name, w.next-1); err != nil {
			w.s.log.Warn("trove/cloud: compaction failed; segments kept", "name", w.name, "err", err)
		} else if key != "" {
			w.prev, w.live, w.baseBytes, w.segBytes = key, 0, size, 0
		}
	}
	return nil
}

// Close uploads what is buffered and folds the segments into a base when
// there are more than the store tolerates.
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	err := w.flush()
	w.closed = true
	w.buf = nil
	if err != nil {
		return err
	}
	if w.live > w.s.opts.compactAt {
		_, _, err := w.s.compact(w.ctx, w.name, w.next-1)
		return err
	}
	return nil
}

// compact folds name's segments into a compaction base under the highest
// number, holding the same bytes, then deletes what it holds. Two
// compactions of one state write the same bytes, so the loser of the
// conditional create has nothing to do. through is the writer's last
// number: when another writer has taken a higher one, the file is not this
// writer's to fold (its next Sync fails instead). It returns the base's key
// and size ("" when there was nothing to fold).
func (s *Storage) compact(ctx context.Context, name string, through uint64) (key string, size int64, err error) {
	const op = "compact"
	l, err := s.resolve(ctx, name, true)
	if err != nil {
		return "", 0, fail(op, name, err)
	}
	if len(l.parts) < 2 || l.last != through {
		return "", 0, nil
	}
	rd := &reader{s: s, ctx: ctx, op: op, name: name, l: l, end: l.size, need: -1}
	defer rd.Close()
	key = objKey(name, l.last, kindCompact)
	lost, err := s.create(ctx, key, rd)
	if err != nil && !lost {
		return "", 0, fail(op, name, err)
	}
	s.drop(ctx, name, l.objs)
	return key, l.size, nil
}
