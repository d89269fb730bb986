package mem

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/driver"
)

// Storage is an in-memory backend.Storage that can simulate a crash: the
// portable layer over the driver below.
type Storage struct {
	*driver.Portable
	d *memDriver
}

// memDriver is the in-memory driver.Driver.
type memDriver struct {
	now  func() time.Time
	keep KeepFunc

	closed atomic.Bool
	done   chan struct{} // closed by Close: wakes lock waiters
	once   sync.Once

	mu    sync.RWMutex
	nodes map[string]*node // by full name; "." is the root
	epoch uint64           // bumped by Crash: older writers are dead

	locks driver.LocalLocks
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
	_ backend.Storage   = (*Storage)(nil)
	_ backend.Crasher   = (*Storage)(nil)
	_ driver.FileReader = (*memDriver)(nil)
	_ driver.Locker     = (*memDriver)(nil)
	_ driver.Renamer    = (*memDriver)(nil)
)

// New returns an empty Storage.
func New(opts ...Option) *Storage {
	s := &memDriver{
		now:   time.Now,
		done:  make(chan struct{}),
		nodes: map[string]*node{".": {dir: true, durable: true, kids: map[string]*node{}}},
	}
	for _, o := range opts {
		o(s)
	}
	s.nodes["."].mod = s.now()
	return &Storage{Portable: driver.NewPortable(s), d: s}
}

// Crash implements backend.Crasher: every file reverts to its durable
// content, entries never made durable disappear, open writers die and locks
// are released. See the package documentation for the model.
func (s *Storage) Crash() { s.d.crash() }

func (s *memDriver) Capabilities() backend.Capabilities {
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

func info(name string, n *node) backend.Info {
	return backend.Info{Name: name, Size: int64(len(n.data)), ModTime: n.mod, IsDir: n.dir}
}

// clip caps b at its length so that appends never write into an array a
// reader may still hold.
func clip(b []byte) []byte { return b[:len(b):len(b)] }

// link puts n at name; the parent must exist. Callers hold mu.
func (s *memDriver) link(name string, n *node) {
	s.nodes[name] = n
	s.nodes[backend.Dir(name)].kids[name] = n
}

// unlink removes name, tolerating a parent already gone (Crash). Callers hold mu.
func (s *memDriver) unlink(name string) {
	delete(s.nodes, name)
	if p := s.nodes[backend.Dir(name)]; p != nil {
		delete(p.kids, name)
	}
}

// mkdirs creates the directories dirs (top down), failing before any change
// when one of them is a file. Durable marks them durable. Callers hold mu.
func (s *memDriver) mkdirs(dirs []string, durable bool) error {
	for _, d := range dirs {
		if n := s.nodes[d]; n != nil && !n.dir {
			return backend.ErrNotDir
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
func (s *memDriver) file(name string) (*node, error) {
	n := s.nodes[name]
	switch {
	case n == nil:
		return nil, fs.ErrNotExist
	case n.dir:
		return nil, backend.ErrIsDir
	}
	return n, nil
}

// content returns the visible bytes of the file name, to be read without mu.
func (s *memDriver) content(name string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return n.data, nil
}

func (s *memDriver) Mkdir(_ context.Context, dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mkdirs(append(backend.Parents(dir), dir), true)
}

func (s *memDriver) Stat(_ context.Context, name string) (backend.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[name]
	if n == nil {
		return backend.Info{}, fs.ErrNotExist
	}
	return info(name, n), nil
}

// List returns a snapshot of dir's children.
func (s *memDriver) List(_ context.Context, dir string) ([]backend.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[dir]
	switch {
	case n == nil:
		return nil, fs.ErrNotExist
	case !n.dir:
		return nil, backend.ErrNotDir
	}
	infos := make([]backend.Info, 0, len(n.kids))
	for name, kid := range n.kids {
		infos = append(infos, info(name, kid))
	}
	return infos, nil
}

// ReadFile is the driver.FileReader fast path: one copy of the bytes.
func (s *memDriver) ReadFile(_ context.Context, name string) ([]byte, error) {
	data, err := s.content(name)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, data...), nil
}

func (s *memDriver) OpenRange(_ context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	data, err := s.content(name)
	if err != nil {
		return nil, err
	}
	size := int64(len(data))
	offset = min(offset, size)
	end := size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	return &reader{s: s, data: data[offset:end]}, nil
}

// WriteFrom reads r to the end before publishing anything, so a failed
// copy leaves the old content.
func (s *memDriver) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	data := make([]byte, 0, 512)
	for {
		if err := ctx.Err(); err != nil {
			return int64(len(data)), err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		free := cap(data) - len(data)
		m, err := r.Read(data[len(data):cap(data)])
		if m < 0 || m > free {
			return int64(len(data)), errors.New("reader returned an invalid count")
		}
		data = data[:len(data)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return int64(len(data)), err
		}
	}
	return int64(len(data)), s.replace(ctx, name, data)
}

// replace publishes data, owned by the store from now on, as name.
func (s *memDriver) replace(ctx context.Context, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Checked again under the lock: a write cancelled while copying must not land.
	if err := ctx.Err(); err != nil {
		return err
	}
	if old := s.nodes[name]; old != nil && old.dir {
		return backend.ErrIsDir
	}
	if err := s.mkdirs(backend.Parents(name), true); err != nil {
		return err
	}
	data = clip(data)
	// A new node, as a temp file renamed over the old: writers still open on
	// the old one write to a file nobody can see.
	s.link(name, &node{durable: true, mod: s.now(), data: data, synced: data})
	return nil
}

func (s *memDriver) OpenWriter(_ context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	switch {
	case n != nil && opt.Exclusive:
		return nil, fs.ErrExist
	case n != nil && n.dir:
		return nil, backend.ErrIsDir
	case n == nil:
		if err := s.mkdirs(backend.Parents(name), false); err != nil {
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

// Rename moves files only.
func (s *memDriver) Rename(_ context.Context, from, to string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := s.file(from)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if dst := s.nodes[to]; dst != nil && dst.dir {
		return backend.PathErr("rename", to, backend.ErrIsDir)
	}
	if err := s.mkdirs(backend.Parents(to), true); err != nil {
		return backend.PathErr("rename", to, err)
	}
	s.unlink(from)
	s.link(to, src)
	src.durable = true
	return nil
}

func (s *memDriver) Unlink(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	switch {
	case n == nil:
		return fs.ErrNotExist
	case n.dir && len(n.kids) > 0:
		return backend.ErrNotEmpty
	}
	s.unlink(name)
	return nil
}

// Close makes every later call on open writers and readers fail with
// ErrClosed, and lock waiters give up.
func (s *memDriver) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { close(s.done) })
	return nil
}
