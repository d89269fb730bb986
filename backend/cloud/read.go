package cloud

import (
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/trovekit/trove/backend"
)

// isDir reports whether some object lies below dir.
func (s *bucketDriver) isDir(ctx context.Context, dir string) (bool, error) {
	if dir == "." {
		return true, nil
	}
	page, err := s.listPage(ctx, dir+"/", 1)
	if err != nil {
		return false, err
	}
	return len(page) > 0, nil
}

// Stat describes a file (with its logical size) or a directory.
func (s *bucketDriver) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	if name == "." {
		return backend.Info{Name: ".", IsDir: true}, nil
	}
	l, err := s.resolve(ctx, name, true)
	if err == nil {
		return backend.Info{Name: name, Size: l.size, ModTime: l.mod}, nil
	}
	if !isNotFound(err) {
		return backend.Info{}, fail(op, name, err)
	}
	dir, err := s.isDir(ctx, name)
	if err != nil {
		return backend.Info{}, fail(op, name, err)
	}
	if !dir {
		return backend.Info{}, backend.PathErr(op, name, fs.ErrNotExist)
	}
	return backend.Info{Name: name, IsDir: true}, nil
}

// OpenRange streams a range through range reads of the parts it covers.
func (s *bucketDriver) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	return s.openRange(ctx, "open", name, offset, length)
}

func (s *bucketDriver) openRange(ctx context.Context, op, name string, offset, length int64) (io.ReadCloser, error) {
	need := int64(-1)
	if length >= 0 && offset <= (1<<62)-length {
		need = offset + length
	}
	r := &reader{s: s, ctx: ctx, op: op, name: name, pos: offset, start: offset, need: need}
	err := r.reresolve(false)
	if err == nil && (r.end < 0 || r.pos < r.end) {
		// Open the first part now, so a missing file fails here.
		err = r.openPart()
	}
	if err != nil {
		r.Close()
		if errors.Is(err, fs.ErrNotExist) {
			if dir, derr := s.isDir(ctx, name); derr == nil && dir {
				return nil, backend.PathErr(op, name, backend.ErrIsDir)
			}
		}
		return nil, err
	}
	return r, nil
}

// errReplaced is an object that changed or vanished since it was resolved.
var errReplaced = errors.New("replaced while being read")

// maxRetries bounds how often in a row a read resolves the file again after
// meeting a compaction or a replacement.
const maxRetries = 8

// reader reads [pos, end) of a logical file part by part.
type reader struct {
	s       *bucketDriver
	ctx     context.Context
	op      string
	name    string
	l       layout
	pos     int64
	start   int64 // pos at open: nothing read while pos == start
	end     int64 // -1: to the end of a plain file
	need    int64 // requested end, -1 for the whole file
	cur     objReader
	retries int
	closed  bool
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, backend.PathErr("read", r.name, backend.ErrClosed)
	}
	for {
		if err := r.ctx.Err(); err != nil {
			return 0, backend.PathErr("read", r.name, err)
		}
		if r.end >= 0 && r.pos >= r.end {
			return 0, io.EOF
		}
		if r.cur == nil {
			if err := r.openPart(); err != nil {
				return 0, err
			}
			continue
		}
		want := p
		if rem := r.end - r.pos; r.end >= 0 && int64(len(want)) > rem {
			want = want[:rem]
		}
		n, err := r.cur.Read(want)
		r.pos += int64(n)
		if err == io.EOF {
			r.cur.Close()
			r.cur = nil
			err = nil
			if r.l.plain {
				r.end = r.pos // a plain file ends where its object does
			}
			if n == 0 {
				continue
			}
		}
		if err != nil {
			return n, fail("read", r.name, err)
		}
		return n, nil
	}
}

// openPart opens a range reader at pos, or finds that the file ends there.
// A part that vanished or changed was folded into a new base by a
// compaction (read on at the same offset: the new base holds the same
// bytes) or replaced (start over if nothing was read yet, else fail).
func (r *reader) openPart() error {
	for {
		if r.end >= 0 && r.pos >= r.end {
			return nil // the file ends here
		}
		err := r.tryPart()
		if err == nil {
			r.retries = 0 // only retries in a row count: the read made progress
			return nil
		}
		if err != errReplaced && !isNotFound(err) || r.l.plain && isNotFound(err) || r.retries >= maxRetries {
			return fail("read", r.name, err)
		}
		r.retries++
		if err := r.reresolve(true); err != nil {
			return err
		}
	}
}

// tryPart opens the part holding pos. errReplaced means the layout is stale.
func (r *reader) tryPart() error {
	start := int64(0)
	for _, pt := range r.l.parts {
		if pt.size >= 0 && r.pos >= start+pt.size {
			start += pt.size
			continue
		}
		length := int64(-1)
		switch {
		case pt.size >= 0 && r.end >= 0:
			length = min(start+pt.size, r.end) - r.pos
		case pt.size >= 0:
			length = start + pt.size - r.pos
		case r.end >= 0:
			length = r.end - r.pos
		}
		rr, err := r.s.b.NewRangeReader(r.ctx, enc(pt.key), r.pos-start, length, nil)
		if err != nil {
			if r.s.replaced(err) || r.l.plain && r.l.size < 0 && r.pos > 0 && !isNotFound(err) {
				// A range past the end, or fileblob's seek error for
				// one: the read learns the size and ends there.
				return errReplaced
			}
			return err
		}
		if pt.size >= 0 && rr.Size() != pt.size {
			rr.Close()
			return errReplaced
		}
		r.cur = rr
		return nil
	}
	return errReplaced // the parts end before the layout's size
}

// reresolve finds the file's layout again. Before the first byte is
// returned the read follows the new version whole. After it, the read goes
// on at the same offset, as a read of a disk file rewritten in place does:
// after a compaction the bytes are the same; after a replacement they are
// the new version's, and a file that shrank below the offset ends there.
func (r *reader) reresolve(sized bool) error {
	l, err := r.s.resolve(r.ctx, r.name, sized)
	if err != nil {
		return fail("read", r.name, err)
	}
	r.l = l
	if r.pos == r.start {
		r.end = l.size
		if r.need >= 0 && (r.end < 0 || r.need < r.end) {
			r.end = r.need
		}
	} else if l.size >= 0 && l.size < r.end {
		r.end = l.size
	}
	if r.end >= 0 {
		r.pos = min(r.pos, r.end)
	}
	return nil
}

func (r *reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}
