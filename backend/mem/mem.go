package mem

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovekit/trove/backend"
)

// Storage is an in-memory backend.Storage that can simulate a crash.
type Storage struct {
	now  func() time.Time
	keep KeepFunc

	closed atomic.Bool
	done   chan struct{} // closed by Close: wakes lock waiters
	once   sync.Once

	mu    sync.RWMutex
	nodes map[string]*node // by full name; "." is the root
	epoch uint64           // bumped by Crash: older writers are dead

	lockMu sync.Mutex
	locks  map[string]chan struct{} // held locks; closed on release
}

// node is a file or a directory.
//
// A file's data is never changed below its length once published: writes
// append past it and shrinking assigns a clipped or new slice. So readers may
// keep a slice and read it without the lock.
type node struct {
	dir     bool
	durable bool // the entry survives a crash
	mod     time.Time
	data    []byte           // file: visible content
	synced  []byte           // file: content after a crash
	kids    map[string]*node // dir: children by full name
}

var (
	_ backend.Storage = (*Storage)(nil)
	_ backend.Crasher = (*Storage)(nil)
)

// New returns an empty Storage.
func New(opts ...Option) *Storage {
	s := &Storage{
		now:   time.Now,
		done:  make(chan struct{}),
		nodes: map[string]*node{".": {dir: true, durable: true, kids: map[string]*node{}}},
		locks: map[string]chan struct{}{},
	}
	for _, o := range opts {
		o(s)
	}
	s.nodes["."].mod = s.now()
	return s
}

// Capabilities implements backend.Storage.
func (s *Storage) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		AtomicRename: true,
		NativeAppend: true,
		LocalLocks:   true,
		Directories:  true,
		Crash:        true,
		MaxNameBytes: backend.MaxNameBytes,
		MaxElemBytes: backend.MaxElemBytes,
	}
}

// begin checks what every call checks first: the name, Close, then ctx.
func (s *Storage) begin(ctx context.Context, op, name string, dir bool) error {
	check := backend.ValidPath
	if dir {
		check = backend.ValidDir
	}
	if err := check(name); err != nil {
		return backend.PathErr(op, name, err)
	}
	if s.closed.Load() {
		return backend.PathErr(op, name, backend.ErrClosed)
	}
	return backend.CtxErr(ctx, op, name)
}

func info(name string, n *node) backend.Info {
	return backend.Info{Name: name, Size: int64(len(n.data)), ModTime: n.mod, IsDir: n.dir}
}

// clip caps b at its length so that appends never write into an array a
// reader may still hold.
func clip(b []byte) []byte { return b[:len(b):len(b)] }

// link puts n at name; the parent must exist. Callers hold mu.
func (s *Storage) link(name string, n *node) {
	s.nodes[name] = n
	s.nodes[backend.Dir(name)].kids[name] = n
}

// unlink removes name, tolerating a parent already gone (Crash). Callers hold mu.
func (s *Storage) unlink(name string) {
	delete(s.nodes, name)
	if p := s.nodes[backend.Dir(name)]; p != nil {
		delete(p.kids, name)
	}
}

// mkdirs creates the directories dirs (top down), failing before any change
// when one of them is a file. Durable marks them durable. Callers hold mu.
func (s *Storage) mkdirs(op, name string, dirs []string, durable bool) error {
	for _, d := range dirs {
		if n := s.nodes[d]; n != nil && !n.dir {
			return backend.PathErr(op, name, backend.ErrNotDir)
		}
	}
	for _, d := range dirs {
		n := s.nodes[d]
		if n == nil {
			n = &node{dir: true, mod: s.now(), kids: map[string]*node{}}
			s.link(d, n)
		}
		if durable {
			n.durable = true
		}
	}
	return nil
}

// file returns the file called name. Callers hold mu.
func (s *Storage) file(op, name string) (*node, error) {
	n := s.nodes[name]
	switch {
	case n == nil:
		return nil, backend.PathErr(op, name, fs.ErrNotExist)
	case n.dir:
		return nil, backend.PathErr(op, name, backend.ErrIsDir)
	}
	return n, nil
}

// content returns the visible bytes of the file name, to be read without mu.
func (s *Storage) content(op, name string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, err := s.file(op, name)
	if err != nil {
		return nil, err
	}
	return n.data, nil
}

// EnsureDir implements backend.Storage.
func (s *Storage) EnsureDir(ctx context.Context, dir string) error {
	const op = "mkdir"
	if err := s.begin(ctx, op, dir, true); err != nil || dir == "." {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mkdirs(op, dir, append(backend.Parents(dir), dir), true)
}

// Stat implements backend.Storage.
func (s *Storage) Stat(ctx context.Context, name string) (backend.Info, error) {
	const op = "stat"
	if err := s.begin(ctx, op, name, true); err != nil {
		return backend.Info{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[name]
	if n == nil {
		return backend.Info{}, backend.PathErr(op, name, fs.ErrNotExist)
	}
	return info(name, n), nil
}

// List implements backend.Storage. It lists a snapshot taken when iteration
// starts.
func (s *Storage) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	const op = "list"
	return func(yield func(backend.Info, error) bool) {
		if err := s.begin(ctx, op, dir, true); err != nil {
			yield(backend.Info{}, err)
			return
		}
		s.mu.RLock()
		n := s.nodes[dir]
		var infos []backend.Info
		var err error
		switch {
		case n == nil:
			err = backend.PathErr(op, dir, fs.ErrNotExist)
		case !n.dir:
			err = backend.PathErr(op, dir, backend.ErrNotDir)
		default:
			infos = make([]backend.Info, 0, len(n.kids))
			for name, kid := range n.kids {
				infos = append(infos, info(name, kid))
			}
		}
		s.mu.RUnlock()
		if err != nil {
			yield(backend.Info{}, err)
			return
		}
		// Siblings share the prefix dir/, so full names sort as base names do.
		slices.SortFunc(infos, func(a, b backend.Info) int { return strings.Compare(a.Name, b.Name) })
		for _, i := range infos {
			if err := backend.CtxErr(ctx, op, dir); err != nil {
				yield(backend.Info{}, err)
				return
			}
			if !yield(i, nil) {
				return
			}
		}
	}
}

// ReadFile implements backend.Storage.
func (s *Storage) ReadFile(ctx context.Context, name string) ([]byte, error) {
	const op = "read"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	data, err := s.content(op, name)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, data...), nil
}

// Open implements backend.Storage.
func (s *Storage) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.OpenRange(ctx, name, 0, -1)
}

// OpenRange implements backend.Storage.
func (s *Storage) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	const op = "open"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	data, err := s.content(op, name)
	if err != nil {
		return nil, err
	}
	size := int64(len(data))
	offset = min(offset, size)
	end := size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	return &reader{s: s, ctx: ctx, name: name, data: data[offset:end]}, nil
}

// ReadPrefix implements backend.Storage.
func (s *Storage) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	const op = "read"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, backend.PathErr(op, name, backend.ErrInvalidRange)
	}
	data, err := s.content(op, name)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, data[:min(n, len(data))]...), nil
}

// WriteFile implements backend.Storage.
func (s *Storage) WriteFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	if err := s.begin(ctx, op, name, false); err != nil {
		return err
	}
	return s.replace(ctx, op, name, append([]byte{}, data...))
}

// WriteFrom implements backend.Storage. It reads r to the end before
// publishing anything, so a failed copy leaves the old content.
func (s *Storage) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	const op = "write"
	if err := s.begin(ctx, op, name, false); err != nil {
		return 0, err
	}
	data := make([]byte, 0, 512)
	for {
		if err := backend.CtxErr(ctx, op, name); err != nil {
			return int64(len(data)), err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		free := cap(data) - len(data)
		m, err := r.Read(data[len(data):cap(data)])
		if m < 0 || m > free {
			return int64(len(data)), backend.PathErr(op, name, errors.New("reader returned an invalid count"))
		}
		data = data[:len(data)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return int64(len(data)), backend.PathErr(op, name, err)
		}
	}
	return int64(len(data)), s.replace(ctx, op, name, data)
}

// replace publishes data, owned by the store from now on, as name.
func (s *Storage) replace(ctx context.Context, op, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Checked again under the lock: a write cancelled while copying must not land.
	if err := backend.CtxErr(ctx, op, name); err != nil {
		return err
	}
	if old := s.nodes[name]; old != nil && old.dir {
		return backend.PathErr(op, name, backend.ErrIsDir)
	}
	if err := s.mkdirs(op, name, backend.Parents(name), true); err != nil {
		return err
	}
	data = clip(data)
	// A new node, as a temp file renamed over the old: writers still open on
	// the old one write to a file nobody can see.
	s.link(name, &node{durable: true, mod: s.now(), data: data, synced: data})
	return nil
}

// OpenWriter implements backend.Storage.
func (s *Storage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	const op = "open"
	if err := s.begin(ctx, op, name, false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	switch {
	case n != nil && opt.Exclusive:
		return nil, backend.PathErr(op, name, fs.ErrExist)
	case n != nil && n.dir:
		return nil, backend.PathErr(op, name, backend.ErrIsDir)
	case n == nil:
		if err := s.mkdirs(op, name, backend.Parents(name), false); err != nil {
			return nil, err
		}
		n = &node{mod: s.now()}
		s.link(name, n)
	case opt.Truncate:
		// Not durable until Sync: synced keeps the old content for Crash.
		n.data = nil
		n.mod = s.now()
	}
	return &writer{s: s, n: n, name: name, epoch: s.epoch}, nil
}

// Rename implements backend.Storage. Only files can be renamed.
func (s *Storage) Rename(ctx context.Context, from, to string) error {
	const op = "rename"
	if err := s.begin(ctx, op, from, false); err != nil {
		return err
	}
	if err := s.begin(ctx, op, to, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := s.file(op, from)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if dst := s.nodes[to]; dst != nil && dst.dir {
		return backend.PathErr(op, to, backend.ErrIsDir)
	}
	if err := s.mkdirs(op, to, backend.Parents(to), true); err != nil {
		return err
	}
	s.unlink(from)
	s.link(to, src)
	src.durable = true
	return nil
}

// Unlink implements backend.Storage.
func (s *Storage) Unlink(ctx context.Context, name string) error {
	const op = "unlink"
	if err := s.begin(ctx, op, name, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	switch {
	case n == nil:
		return backend.PathErr(op, name, fs.ErrNotExist)
	case n.dir && len(n.kids) > 0:
		return backend.PathErr(op, name, backend.ErrNotEmpty)
	}
	s.unlink(name)
	return nil
}

// Close implements backend.Storage. Every later call, including on open
// writers and readers, fails with ErrClosed, and lock waiters give up.
func (s *Storage) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { close(s.done) })
	return nil
}
