package cloud

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"

	"gocloud.dev/blob"

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
		_, err := s.b.Attributes(ctx, p)
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

// putBase writes the base object of name from r in one atomic object write,
// covering every segment listed before, then deletes those segments.
// Readers see the old file or the new one: segments at or below covers are
// ignored as soon as the new base exists.
func (s *Storage) putBase(ctx context.Context, op, name string, r io.Reader) (int64, error) {
	segs, err := s.listSegs(ctx, name)
	if err != nil {
		return 0, fail(op, name, err)
	}
	var covers uint64
	if len(segs) > 0 {
		covers = segs[len(segs)-1].n
	}
	if covers == 0 {
		// Keep numbering above whatever an older base covered, so segments
		// a reader may still skip are never reused.
		if attrs, err := s.b.Attributes(ctx, name); err == nil {
			covers = coversOf(attrs.ContentType)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(wctx, name, &blob.WriterOptions{ContentType: baseType(covers)})
	if err != nil {
		return 0, fail(op, name, err)
	}
	n, err := io.Copy(w, ctxReader{ctx, r})
	if err != nil {
		cancel() // aborts the upload: nothing becomes visible
		w.Close()
		return n, backend.PathErr(op, name, err)
	}
	if err := w.Close(); err != nil {
		return n, fail(op, name, err)
	}
	s.dropSegs(ctx, name, segs)
	return n, nil
}

// dropSegs deletes segments already folded into a base. A failure only
// leaves garbage that readers skip and the next putBase deletes.
func (s *Storage) dropSegs(ctx context.Context, name string, segs []seg) {
	for _, sg := range segs {
		if err := s.b.Delete(ctx, sg.key); err != nil && !isNotFound(err) {
			s.log.Warn("trove/cloud: leaving a folded segment", "name", name, "key", sg.key, "err", err)
		}
	}
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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
	return s.putBase(ctx, op, name, r)
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
	l, err := s.resolve(ctx, name, -1)
	switch {
	case err == nil && opt.Exclusive:
		return nil, backend.PathErr(op, name, fs.ErrExist)
	case err == nil && opt.Truncate:
		if _, err := s.putBase(ctx, op, name, bytes.NewReader(nil)); err != nil {
			return nil, err
		}
		if l, err = s.resolve(ctx, name, -1); err != nil {
			return nil, fail(op, name, err)
		}
	case err != nil && !isNotFound(err):
		return nil, fail(op, name, err)
	case err != nil:
		// Create an empty base; only one creator wins.
		segs, lerr := s.listSegs(ctx, name)
		if lerr != nil {
			return nil, fail(op, name, lerr)
		}
		var covers uint64
		if len(segs) > 0 {
			covers = segs[len(segs)-1].n // stale leftovers of an unlinked file
		}
		uerr := s.b.Upload(ctx, name, bytes.NewReader(nil), &blob.WriterOptions{IfNotExist: true, ContentType: baseType(covers)})
		lost := uerr != nil && s.lostRace(ctx, name, uerr)
		if uerr != nil && (!lost || opt.Exclusive) {
			if lost {
				return nil, backend.PathErr(op, name, fmt.Errorf("%w: %w", fs.ErrExist, uerr))
			}
			return nil, fail(op, name, uerr)
		}
		if l, err = s.resolve(ctx, name, -1); err != nil {
			return nil, fail(op, name, err)
		}
	}
	return &writer{s: s, ctx: context.WithoutCancel(ctx), name: name, next: l.last + 1, live: len(l.parts) - 1}, nil
}

// writer buffers appends and uploads them as one segment per Sync.
type writer struct {
	s      *Storage
	ctx    context.Context
	name   string
	buf    []byte
	next   uint64 // number of the next segment
	live   int    // segments beyond the base
	err    error  // first upload error, latched
	closed bool
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

// flush uploads the buffer as the next segment. IfNotExist makes a second
// writer that reached the same number fail instead of merging.
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
	key := segKey(w.name, w.next)
	err := w.s.b.Upload(w.ctx, key, bytes.NewReader(w.buf), &blob.WriterOptions{IfNotExist: true, ContentType: segType})
	if err != nil {
		if w.s.lostRace(w.ctx, key, err) {
			w.err = backend.PathErr("sync", w.name, fmt.Errorf("%w: another writer appended segment %d: %w", backend.ErrLocked, w.next, err))
		} else {
			w.err = fail("sync", w.name, err)
		}
		return w.err
	}
	w.next++
	w.live++
	w.buf = w.buf[:0]
	return nil
}

// Close uploads what is buffered and folds the segments into the base when
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
		return w.s.compact(w.ctx, w.name)
	}
	return nil
}

// compact folds name's segments into a new base holding the same bytes.
func (s *Storage) compact(ctx context.Context, name string) error {
	const op = "compact"
	l, err := s.resolve(ctx, name, -1)
	if err != nil {
		return fail(op, name, err)
	}
	rd := &reader{s: s, ctx: ctx, op: op, name: name, l: l, end: l.size, need: -1}
	defer rd.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(wctx, name, &blob.WriterOptions{ContentType: baseType(l.last)})
	if err != nil {
		return fail(op, name, err)
	}
	if _, err := io.Copy(w, rd); err != nil {
		cancel()
		w.Close()
		return backend.PathErr(op, name, err)
	}
	if err := w.Close(); err != nil {
		return fail(op, name, err)
	}
	s.dropSegs(ctx, name, l.segs)
	return nil
}
