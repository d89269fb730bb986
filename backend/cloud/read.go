package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/trovekit/trove/backend"
)

// part is one object of a logical file.
type part struct {
	key  string
	size int64
}

// layout is a logical file as found at one moment.
type layout struct {
	parts  []part
	size   int64
	mod    time.Time
	covers uint64 // last segment number the base already holds
	last   uint64 // highest segment number seen (>= covers)
	segs   []seg  // every segment object listed, live or stale
	full   bool   // segments were listed
}

type seg struct {
	n    uint64
	key  string
	size int64
	mod  time.Time
}

// listKeys lists what opts asks for. A listing that trips over an object
// vanishing under it (fileblob lists a file, then fails to stat it) starts
// again.
func (s *Storage) listKeys(ctx context.Context, opts *blob.ListOptions) ([]*blob.ListObject, error) {
	for try := 0; ; try++ {
		var out []*blob.ListObject
		it := s.b.List(opts)
		var err error
		for {
			var obj *blob.ListObject
			if obj, err = it.Next(ctx); err != nil {
				break
			}
			out = append(out, obj)
		}
		if err == io.EOF {
			return out, nil
		}
		if !isNotFound(err) || try >= 8 {
			return nil, err
		}
	}
}

// listSegs lists name's segment objects in number order.
func (s *Storage) listSegs(ctx context.Context, name string) ([]seg, error) {
	prefix := segPrefix(name)
	objs, err := s.listKeys(ctx, &blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	if err != nil {
		return nil, err
	}
	var out []seg
	for _, obj := range objs {
		if obj.IsDir {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(obj.Key, prefix), 10, 64)
		if err != nil {
			continue // not ours
		}
		out = append(out, seg{n: n, key: obj.Key, size: obj.Size, mod: obj.ModTime})
	}
	slices.SortFunc(out, func(a, b seg) int { return cmpU(a.n, b.n) })
	return out, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// resolve finds the objects of a logical file. With need >= 0 it stops at the
// base when the base alone holds need bytes (ReadPrefix stays one range read).
func (s *Storage) resolve(ctx context.Context, name string, need int64) (layout, error) {
	attrs, err := s.b.Attributes(ctx, name)
	for try := 0; err != nil && torn(err) && try < 8; try++ {
		attrs, err = s.b.Attributes(ctx, name)
	}
	if err != nil {
		return layout{}, err
	}
	var l layout
	l.covers = coversOf(attrs.ContentType)
	l.last = l.covers
	l.parts = []part{{key: name, size: attrs.Size}}
	l.size = attrs.Size
	l.mod = attrs.ModTime
	if need >= 0 && attrs.Size >= need {
		return l, nil
	}
	segs, err := s.listSegs(ctx, name)
	if err != nil {
		return layout{}, err
	}
	l.full = true
	l.segs = segs
	for _, sg := range segs {
		l.last = max(l.last, sg.n)
		if sg.n <= l.covers {
			continue
		}
		l.parts = append(l.parts, part{key: sg.key, size: sg.size})
		l.size += sg.size
		if sg.mod.After(l.mod) {
			l.mod = sg.mod
		}
	}
	return l, nil
}

// isDir reports whether some object lies below dir.
func (s *Storage) isDir(ctx context.Context, dir string) (bool, error) {
	if dir == "." {
		return true, nil
	}
	page, _, err := s.b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: dir + "/"})
	if err != nil {
		return false, err
	}
	return len(page) > 0, nil
}

// Stat describes a file (with its logical size) or a directory.
func (s *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	if err := s.begin(ctx, op, name, true); err != nil {
		return backend.Info{}, err
	}
	if name == "." {
		return backend.Info{Name: ".", IsDir: true}, nil
	}
	l, err := s.resolve(ctx, name, -1)
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

// ReadFile returns the whole logical file.
func (s *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	rc, err := s.openRange(ctx, "read", name, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Open streams the logical file.
func (s *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.openRange(ctx, "open", name, 0, -1)
}

// OpenRange streams a range through range reads of the parts it covers.
func (s *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	return s.openRange(ctx, "open", name, offset, length)
}

// ReadPrefix reads min(n, size) bytes; a long enough base costs one range read.
func (s *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	if n < 0 {
		if err := s.begin(ctx, "read", name, false); err != nil {
			return nil, err
		}
		return nil, backend.PathErr("read", name, backend.ErrInvalidRange)
	}
	rc, err := s.openRange(ctx, "read", name, 0, int64(n))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, 0, min(n, 1<<20))
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), 1<<20))
		}
		k, err := rc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *Storage) openRange(ctx context.Context, op, name string, offset, length int64) (io.ReadCloser, error) {
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	need := int64(-1)
	if length >= 0 && offset <= (1<<62)-length {
		need = offset + length
	}
	l, err := s.resolve(ctx, name, need)
	if err != nil {
		if isNotFound(err) {
			if dir, derr := s.isDir(ctx, name); derr == nil && dir {
				return nil, backend.PathErr(op, name, backend.ErrIsDir)
			}
		}
		return nil, fail(op, name, err)
	}
	end := l.size
	if !l.full {
		end = need // the base alone covers the range
	}
	if need >= 0 && need < end {
		end = need
	}
	offset = min(offset, end)
	return &reader{s: s, ctx: ctx, op: op, name: name, l: l, pos: offset, start: offset, end: end, need: need}, nil
}

var errReplaced = errors.New("replaced while being read")

// reader reads [pos, end) of a logical file part by part.
type reader struct {
	s       *Storage
	ctx     context.Context
	op      string
	name    string
	l       layout
	pos     int64
	start   int64 // pos at open: nothing read while pos == start
	end     int64
	need    int64 // requested end, -1 for the whole file
	cur     *blob.Reader
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
		if r.pos >= r.end {
			return 0, io.EOF
		}
		if r.cur == nil {
			if err := r.openPart(); err != nil {
				return 0, err
			}
			if r.cur == nil {
				continue // the file shrank to pos
			}
		}
		want := p
		if rem := r.end - r.pos; int64(len(want)) > rem {
			want = want[:rem]
		}
		n, err := r.cur.Read(want)
		r.pos += int64(n)
		if err == io.EOF {
			r.cur.Close()
			r.cur = nil
			err = nil
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

// openPart opens a range reader at pos. A segment that vanished was folded
// into the base by a compaction: resolve again and go on at the same offset,
// since the new base holds the same bytes.
func (r *reader) openPart() error {
	for {
		start := int64(0)
		for _, pt := range r.l.parts {
			if r.pos < start+pt.size {
				rr, err := r.s.b.NewRangeReader(r.ctx, pt.key, r.pos-start, min(start+pt.size, r.end)-r.pos, nil)
				if err != nil && torn(err) {
					err = errReplaced
				}
				if err == nil && pt.key == r.name && (rr.Size() != pt.size || coversOf(rr.ContentType()) != r.l.covers) {
					// The base was replaced since it was resolved.
					rr.Close()
					err = errReplaced
				}
				if err == nil {
					r.cur = rr
					return nil
				}
				if (!isNotFound(err) && err != errReplaced) || r.retries >= 8 {
					return fail("read", r.name, err)
				}
				break
			}
			start += pt.size
		}
		if r.retries >= 8 {
			return backend.PathErr("read", r.name, fmt.Errorf("%w: file shrank while being read", errors.ErrUnsupported))
		}
		r.retries++
		l, err := r.s.resolve(r.ctx, r.name, -1)
		if err != nil {
			return fail("read", r.name, err)
		}
		r.l = l
		if r.pos == r.start {
			// Nothing read yet: read the new version whole, not a mix.
			r.end = l.size
			if r.need >= 0 {
				r.end = min(r.end, r.need)
			}
			r.pos = min(r.pos, r.end)
			if r.pos >= r.end {
				return nil
			}
		}
	}
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
