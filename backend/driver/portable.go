package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/stage"
)

// Driver is what a backend implements: the few calls that differ from one
// store to the next. Portable wraps a Driver into a Storage and does the
// rest once: it validates names (ValidPath, ValidDir, and the driver's
// Capabilities limits), refuses calls after Close, checks ctx before each
// call, names the op and path in every error, and derives Open, ReadFile,
// ReadPrefix, WriteFile and (as a copy, then an unlink) Rename.
//
// So a driver sees only valid names and only while open. It returns errors
// wrapping the sentinels (fs.ErrNotExist, ErrIsDir, ...); an *fs.PathError
// it returns keeps its path (Rename naming its target, say) and gets the
// op of the call. Optional fast paths are found by type assertion on the
// driver: FileReader, FileWriter, Renamer, Locker, WriteOnce, WholeFile,
// Compacter.
type Driver interface {
	// Capabilities are read once, when Portable is made.
	Capabilities() backend.Capabilities
	// Mkdir is EnsureDir of a directory other than the root.
	Mkdir(ctx context.Context, dir string) error
	Stat(ctx context.Context, name string) (backend.Info, error)
	// List returns dir's children in any order; Portable sorts them and
	// leaves out reserved and invalid names.
	List(ctx context.Context, dir string) ([]backend.Info, error)
	// OpenRange is Storage.OpenRange with offset >= 0.
	OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error)
	WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error)
	// OpenWriter returns a writer that Portable keeps from being used
	// after its Close.
	OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error)
	Unlink(ctx context.Context, name string) error
	// Close is called once.
	Close() error
}

// FileReader is a Driver's fast path for ReadFile (a store that knows the
// size, or holds the bytes); without it ReadFile reads OpenRange to the end.
type FileReader interface {
	ReadFile(ctx context.Context, name string) ([]byte, error)
}

// FileWriter is a Driver's fast path for WriteFile; without it WriteFile is
// WriteFrom of the bytes.
type FileWriter interface {
	WriteFile(ctx context.Context, name string, data []byte) error
}

// FileStager is a Driver's fast path for Stage (stage.Stager); without
// it Stage writes the file whole at Commit.
type FileStager interface {
	Stage(ctx context.Context, name string, data []byte) (stage.Staged, error)
}

// Renamer is a Driver that moves files itself (atomically, where
// Capabilities.AtomicRename says so); without it Rename copies the file
// through OpenRange and WriteFrom, then unlinks the source.
type Renamer interface {
	Rename(ctx context.Context, from, to string) error
}

// Locker is a Driver that has locks; without it Lock is ErrNotSupported.
// Portable makes a second Unlock do nothing.
type Locker interface {
	Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error)
}

// Portable is the Storage over a Driver (see Driver). It implements
// WriteOnce, WholeFile and Compacter, through the driver's fast paths
// where it has them and else as the CreateFile, OpenInfo, PutFile,
// RemoveFile and Compact functions do.
type Portable struct {
	d      Driver
	caps   backend.Capabilities
	closed atomic.Bool
}

var (
	_ backend.Storage   = (*Portable)(nil)
	_ backend.WriteOnce = (*Portable)(nil)
	_ backend.WholeFile = (*Portable)(nil)
	_ backend.Compacter = (*Portable)(nil)
	_ stage.Stager      = (*Portable)(nil)
)

// NewPortable returns the Storage over d.
func NewPortable(d Driver) *Portable {
	return &Portable{d: d, caps: d.Capabilities()}
}

// Driver returns the driver under p.
func (p *Portable) Driver() Driver { return p.d }

// Capabilities are the driver's.
func (p *Portable) Capabilities() backend.Capabilities { return p.caps }

// begin checks what every call checks before reaching the driver: the
// name, Close, then ctx.
func (p *Portable) begin(ctx context.Context, op, name string, dir bool) error {
	check := backend.ValidPath
	if dir {
		check = backend.ValidDir
	}
	if err := check(name); err != nil {
		return backend.PathErr(op, name, err)
	}
	if err := p.limits(name); err != nil {
		return backend.PathErr(op, name, err)
	}
	if p.closed.Load() {
		return backend.PathErr(op, name, backend.ErrClosed)
	}
	return backend.CtxErr(ctx, op, name)
}

// limits applies a driver's limits where they are tighter than ValidPath's.
func (p *Portable) limits(name string) error {
	if m := p.caps.MaxNameBytes; m > 0 && len(name) > m {
		return fmt.Errorf("%w: name longer than %d bytes", backend.ErrInvalidPath, m)
	}
	if m := p.caps.MaxElemBytes; m > 0 && m < backend.MaxElemBytes {
		for elem := range strings.SplitSeq(name, "/") {
			if len(elem) > m {
				return fmt.Errorf("%w: element longer than %d bytes", backend.ErrInvalidPath, m)
			}
		}
	}
	return nil
}

// fail names op and name in a driver's error (a path the driver named
// stays). A call that raced with Close also says ErrClosed, whatever the
// closed driver answered.
func (p *Portable) fail(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*fs.PathError); ok {
		name, err = pe.Path, pe.Err
	}
	if p.closed.Load() && !errors.Is(err, backend.ErrClosed) {
		err = &closedError{err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// closedError is a driver's error that also means ErrClosed.
type closedError struct{ err error }

func (e *closedError) Error() string   { return e.err.Error() }
func (e *closedError) Unwrap() []error { return []error{backend.ErrClosed, e.err} }

// errStreamClosed is the error of a reader or writer used after its own
// Close: both ErrClosed and fs.ErrClosed.
var errStreamClosed = &closedError{fs.ErrClosed}

func (p *Portable) EnsureDir(ctx context.Context, dir string) error {
	const op = "mkdir"
	if err := p.begin(ctx, op, dir, true); err != nil || dir == "." {
		return err
	}
	return p.fail(op, dir, p.d.Mkdir(ctx, dir))
}

func (p *Portable) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	if err := p.begin(ctx, op, name, true); err != nil {
		return backend.Info{}, err
	}
	info, err := p.d.Stat(ctx, name)
	if err != nil {
		return backend.Info{}, p.fail(op, name, err)
	}
	return info, nil
}

// List lists what the driver returns when iteration starts, sorted, with
// ctx checked before each entry.
func (p *Portable) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		const op = "list"
		if err := p.begin(ctx, op, dir, true); err != nil {
			yield(backend.Info{}, err)
			return
		}
		infos, err := p.d.List(ctx, dir)
		if err != nil {
			yield(backend.Info{}, p.fail(op, dir, err))
			return
		}
		// Names a caller could not have written (temps, segments, names
		// made outside trove) are not part of the tree.
		infos = slices.DeleteFunc(infos, func(i backend.Info) bool { return backend.ValidPath(i.Name) != nil })
		// Siblings share the prefix dir/, so full names sort as base names do.
		slices.SortFunc(infos, func(a, b backend.Info) int { return strings.Compare(a.Name, b.Name) })
		for _, in := range infos {
			if err := backend.CtxErr(ctx, op, dir); err != nil {
				yield(backend.Info{}, err)
				return
			}
			if !yield(in, nil) {
				return
			}
		}
	}
}

func (p *Portable) ReadFile(ctx context.Context, name string) ([]byte, error) {
	const op = "read"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if fr, ok := p.d.(FileReader); ok {
		data, err := fr.ReadFile(ctx, name)
		if err != nil {
			return nil, p.fail(op, name, err)
		}
		return data, nil
	}
	rc, err := p.openRange(ctx, op, name, 0, -1)
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

func (p *Portable) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return p.OpenRange(ctx, name, 0, -1)
}

func (p *Portable) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	const op = "open"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	return p.openRange(ctx, op, name, offset, length)
}

func (p *Portable) openRange(ctx context.Context, op, name string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	rc, err := p.d.OpenRange(ctx, name, offset, length)
	if err != nil {
		return nil, p.fail(op, name, err)
	}
	return &reader{p: p, ctx: ctx, name: name, rc: rc}, nil
}

// ReadPrefix reads through a range read of n bytes, so no more is fetched.
func (p *Portable) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	const op = "read"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	rc, err := p.openRange(ctx, op, name, 0, int64(n))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Grown as bytes come: n may be far more than the file holds.
	buf := make([]byte, 0, min(n, 64<<10))
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= n {
				return buf, nil
			}
			buf = slices.Grow(buf, min(n-len(buf), max(len(buf), 64<<10)))
		}
		k, err := rc.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+k]
		if err == io.EOF || len(buf) == n {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *Portable) WriteFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	if err := p.begin(ctx, op, name, false); err != nil {
		return err
	}
	if fw, ok := p.d.(FileWriter); ok {
		return p.fail(op, name, fw.WriteFile(ctx, name, data))
	}
	_, err := p.d.WriteFrom(ctx, name, bytes.NewReader(data))
	return p.fail(op, name, err)
}

// Stage is the driver's FileStager, or a write of the whole file at
// Commit; Commit after Close fails with ErrClosed.
func (p *Portable) Stage(ctx context.Context, name string, data []byte) (stage.Staged, error) {
	const op = "write"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	fst, ok := p.d.(FileStager)
	if !ok {
		return stage.WriteAtCommit(p, name, data), nil
	}
	st, err := fst.Stage(ctx, name, data)
	if err != nil {
		return nil, p.fail(op, name, err)
	}
	return &portableStaged{p: p, name: name, st: st}, nil
}

// portableStaged names the op and path in Commit's errors and refuses a
// Commit after the store's Close.
type portableStaged struct {
	p    *Portable
	name string
	st   stage.Staged
}

func (s *portableStaged) Commit(ctx context.Context) error {
	if err := s.p.begin(ctx, "write", s.name, false); err != nil {
		s.st.Abort()
		return err
	}
	return s.p.fail("write", s.name, s.st.Commit(ctx))
}

func (s *portableStaged) Abort() { s.st.Abort() }

func (p *Portable) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	const op = "write"
	if err := p.begin(ctx, op, name, false); err != nil {
		return 0, err
	}
	n, err := p.d.WriteFrom(ctx, name, r)
	return n, p.fail(op, name, err)
}

func (p *Portable) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	w, err := p.d.OpenWriter(ctx, name, opt)
	if err != nil {
		return nil, p.fail(op, name, err)
	}
	return &writer{p: p, name: name, w: w}, nil
}

func (p *Portable) Rename(ctx context.Context, from, to string) error {
	const op = "rename"
	if err := p.begin(ctx, op, from, false); err != nil {
		return err
	}
	if err := p.begin(ctx, op, to, false); err != nil {
		return err
	}
	if r, ok := p.d.(Renamer); ok {
		return p.fail(op, from, r.Rename(ctx, from, to))
	}
	// A copy in one write, then the source's removal: what a bucket
	// offers. Opening the source first also tells a directory from a file.
	rc, err := p.d.OpenRange(ctx, from, 0, -1)
	if err != nil {
		return p.fail(op, from, err)
	}
	defer rc.Close()
	if from == to {
		return nil
	}
	if _, err := p.d.WriteFrom(ctx, to, rc); err != nil {
		return p.fail(op, to, err)
	}
	return p.fail(op, from, p.d.Unlink(ctx, from))
}

func (p *Portable) Unlink(ctx context.Context, name string) error {
	const op = "unlink"
	if err := p.begin(ctx, op, name, false); err != nil {
		return err
	}
	return p.fail(op, name, p.d.Unlink(ctx, name))
}

func (p *Portable) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	const op = "lock"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	l, ok := p.d.(Locker)
	if !ok {
		return nil, backend.PathErr(op, name, backend.ErrNotSupported)
	}
	u, err := l.Lock(ctx, name, wait)
	if err != nil {
		return nil, p.fail(op, name, err)
	}
	return &unlocker{p: p, name: name, u: u}, nil
}

// CreateFile is the driver's write-once create, or else a look then a
// WriteFile (see the CreateFile function).
func (p *Portable) CreateFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	if err := p.begin(ctx, op, name, false); err != nil {
		return err
	}
	if wo, ok := p.d.(backend.WriteOnce); ok {
		return p.fail(op, name, wo.CreateFile(ctx, name, data))
	}
	switch _, err := p.d.Stat(ctx, name); {
	case err == nil:
		return backend.PathErr(op, name, fs.ErrExist)
	case !errors.Is(err, fs.ErrNotExist):
		return p.fail(op, name, err)
	}
	return p.WriteFile(ctx, name, data)
}

// OpenInfo is the driver's one-request open, or else Stat then Open.
func (p *Portable) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	const op = "open"
	if err := p.begin(ctx, op, name, false); err != nil {
		return nil, backend.Info{}, err
	}
	var rc io.ReadCloser
	var info backend.Info
	var err error
	if wo, ok := p.d.(backend.WriteOnce); ok {
		rc, info, err = wo.OpenInfo(ctx, name)
	} else if info, err = p.d.Stat(ctx, name); err == nil {
		if info.IsDir {
			return nil, backend.Info{}, backend.PathErr(op, name, backend.ErrIsDir)
		}
		rc, err = p.d.OpenRange(ctx, name, 0, -1)
	}
	if err != nil {
		return nil, backend.Info{}, p.fail(op, name, err)
	}
	return &reader{p: p, ctx: ctx, name: name, rc: rc}, info, nil
}

// PutFile is the driver's whole-file write, or else WriteFile.
func (p *Portable) PutFile(ctx context.Context, name string, data []byte) error {
	if wf, ok := p.d.(backend.WholeFile); ok {
		const op = "write"
		if err := p.begin(ctx, op, name, false); err != nil {
			return err
		}
		return p.fail(op, name, wf.PutFile(ctx, name, data))
	}
	return p.WriteFile(ctx, name, data)
}

// RemoveFile is the driver's whole-file removal, or else Unlink.
func (p *Portable) RemoveFile(ctx context.Context, name string) error {
	if wf, ok := p.d.(backend.WholeFile); ok {
		const op = "unlink"
		if err := p.begin(ctx, op, name, false); err != nil {
			return err
		}
		return p.fail(op, name, wf.RemoveFile(ctx, name))
	}
	return p.Unlink(ctx, name)
}

// Compact is the driver's Compacter, or else nothing (see Compact).
func (p *Portable) Compact(ctx context.Context, name string) error {
	const op = "compact"
	if err := p.begin(ctx, op, name, false); err != nil {
		return err
	}
	if c, ok := p.d.(backend.Compacter); ok {
		return p.fail(op, name, c.Compact(ctx, name))
	}
	return nil
}

// Close closes the driver once; later calls fail with ErrClosed. Readers,
// writers and locks already open are the driver's to keep or end.
func (p *Portable) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	if err := p.d.Close(); err != nil {
		return backend.PathErr("close", ".", err)
	}
	return nil
}

// reader checks ctx before each Read, refuses a Read after Close and names
// the file in its errors.
type reader struct {
	p      *Portable
	ctx    context.Context
	name   string
	rc     io.ReadCloser
	closed bool
}

func (r *reader) Read(b []byte) (int, error) {
	const op = "read"
	if r.closed {
		return 0, backend.PathErr(op, r.name, errStreamClosed)
	}
	if err := backend.CtxErr(r.ctx, op, r.name); err != nil {
		return 0, err
	}
	n, err := r.rc.Read(b)
	if err != nil && err != io.EOF {
		err = r.p.fail(op, r.name, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.p.closeOnce(&r.closed, r.name, r.rc) }

// closeOnce closes c the first time only, naming the file in its error.
func (p *Portable) closeOnce(closed *bool, name string, c io.Closer) error {
	if *closed {
		return nil
	}
	*closed = true
	return p.fail("close", name, c.Close())
}

// writer refuses a Write or Sync after Close, makes a second Close do
// nothing and names the file in its errors.
type writer struct {
	p      *Portable
	name   string
	w      backend.Writer
	closed bool
}

func (w *writer) Write(b []byte) (int, error) {
	if w.closed {
		return 0, backend.PathErr("write", w.name, errStreamClosed)
	}
	n, err := w.w.Write(b)
	return n, w.p.fail("write", w.name, err)
}

func (w *writer) Sync() error {
	if w.closed {
		return backend.PathErr("sync", w.name, errStreamClosed)
	}
	return w.p.fail("sync", w.name, w.w.Sync())
}

func (w *writer) Close() error { return w.p.closeOnce(&w.closed, w.name, w.w) }

// unlocker makes a second Unlock do nothing.
type unlocker struct {
	p    *Portable
	name string
	u    backend.Unlocker
	once sync.Once
}

func (u *unlocker) Unlock() error {
	var err error
	u.once.Do(func() { err = u.u.Unlock() })
	return u.p.fail("unlock", u.name, err)
}
