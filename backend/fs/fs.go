package fs

import (
	"errors"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/driver"
)

const (
	filePerm = 0o600
	dirPerm  = 0o700

	// tempDir holds the temp files of atomic writes. One directory at the
	// root (rather than temps beside their targets) keeps every other
	// directory exactly as List shows it, so Unlink of a directory that
	// lists empty never fails on a hidden temp, and crash leftovers are found
	// with one read at open.
	tempDir = backend.ReservedPrefix + "tmp"

	defaultStaleTemp = time.Hour
	defaultLockPoll  = 5 * time.Millisecond
)

// Storage is a backend.Storage on a directory: the portable layer over the
// driver below. It is safe for concurrent use.
type Storage struct {
	*driver.Portable
	d *fsDriver
}

// fsDriver is the driver.Driver on a tree.
type fsDriver struct {
	t       tree
	os      bool   // t is an osTree: durable, cross-process
	abs     string // absolute root on the OS, for flock
	log     *slog.Logger
	poll    time.Duration
	locks   driver.LocalLocks
	appendM sync.Mutex // emulates O_APPEND on Fs that only seek at open
}

var (
	_ backend.Storage   = (*Storage)(nil)
	_ driver.FileReader = (*fsDriver)(nil)
	_ driver.FileWriter = (*fsDriver)(nil)
	_ driver.FileStager = (*fsDriver)(nil)
	_ driver.Locker     = (*fsDriver)(nil)
	_ driver.Renamer    = (*fsDriver)(nil)
)

// Option configures New and NewOS.
type Option func(*config)

type config struct {
	log       *slog.Logger
	staleTemp time.Duration
	poll      time.Duration
}

// WithLogger sets where the Storage reports what it cleans up or skips.
// The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithStaleTempAge sets how old a temp file must be before opening a Storage
// removes it as a crash leftover (default one hour: a live writer, in any
// process, touches its temp on every write). Zero or less disables cleanup.
func WithStaleTempAge(d time.Duration) Option {
	return func(c *config) { c.staleTemp = d }
}

// WithLockPoll sets how often a waiting Lock retries a lock held by another
// process (default 5ms). Waits within one Storage do not poll.
func WithLockPoll(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.poll = d
		}
	}
}

// NewOS opens a Storage on the directory root of the operating system,
// creating it (0700) if missing.
func NewOS(root string, opts ...Option) (*Storage, error) {
	const op = "open"
	if root == "" {
		return nil, backend.PathErr(op, root, backend.ErrInvalidPath)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, backend.PathErr(op, root, err)
	}
	if err := mkdirAllOS(abs); err != nil {
		return nil, backend.PathErr(op, root, classify(err))
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, backend.PathErr(op, root, classify(err))
	}
	return open(newOSTree(r, abs), true, abs, opts), nil
}

// New opens a Storage on the directory root inside fsys, creating it (0700)
// if missing. An *afero.OsFs gets the full OS treatment of NewOS.
func New(fsys afero.Fs, root string, opts ...Option) (*Storage, error) {
	const op = "open"
	switch fsys.(type) {
	case *afero.OsFs, afero.OsFs:
		return NewOS(root, opts...)
	}
	if fsys == nil || root == "" {
		return nil, backend.PathErr(op, root, backend.ErrInvalidPath)
	}
	root = filepath.Clean(root)
	fi, err := fsys.Stat(root)
	if notExist(err) {
		err = fsys.MkdirAll(root, dirPerm)
		if err == nil {
			fi, err = fsys.Stat(root)
		}
	}
	if err != nil {
		return nil, backend.PathErr(op, root, classify(err))
	}
	if !fi.IsDir() {
		return nil, backend.PathErr(op, root, backend.ErrNotDir)
	}
	return open(aferoTree{fs: fsys, base: root, excl: new(sync.Mutex)}, false, "", opts), nil
}

func open(t tree, onOS bool, abs string, opts []Option) *Storage {
	c := config{log: slog.New(slog.DiscardHandler), staleTemp: defaultStaleTemp, poll: defaultLockPoll}
	for _, o := range opts {
		o(&c)
	}
	d := &fsDriver{t: t, os: onOS, abs: abs, log: c.log, poll: c.poll}
	if c.staleTemp > 0 {
		d.cleanTemps(time.Now().Add(-c.staleTemp))
	}
	return &Storage{Portable: driver.NewPortable(d), d: d}
}

// mkdirAllOS creates dir and its missing parents, fsyncing the parent of each
// new one, before there is a Root to do it through.
func mkdirAllOS(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &iofs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !notExist(err) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllOS(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, iofs.ErrExist) {
		return err
	}
	return syncPath(parent)
}

func syncPath(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// cleanTemps removes temp files last touched before cutoff: leftovers of a
// writer that crashed between creating its temp and renaming it.
func (s *fsDriver) cleanTemps(cutoff time.Time) {
	d, err := s.t.openFile(tempDir, os.O_RDONLY, 0)
	if err != nil {
		return // none yet
	}
	infos, err := d.Readdir(-1)
	_ = d.Close()
	if err != nil {
		s.log.Debug("trove/fs: reading temp dir", "err", err)
		return
	}
	for _, fi := range infos {
		if fi.ModTime().Before(cutoff) {
			name := tempDir + "/" + fi.Name()
			err := s.t.remove(name)
			s.log.Debug("trove/fs: removed stale temp file", "name", name, "err", err)
		}
	}
}

// OSRoot returns the absolute root directory on the operating system's
// file system, or "" when the storage is on another afero.Fs: where
// something that belongs beside the store (a catalog) may go.
func (s *Storage) OSRoot() string {
	if _, ok := s.d.t.(osTree); ok {
		return s.d.abs
	}
	return ""
}

// Root returns the root directory as given to New, or made absolute by NewOS.
func (s *Storage) Root() string {
	switch t := s.d.t.(type) {
	case osTree:
		return s.d.abs
	case aferoTree:
		return t.base
	}
	return ""
}

// Capabilities reports full OS capabilities on the OS, in-process ones elsewhere.
func (s *fsDriver) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		AtomicRename: true,
		NativeAppend: true,
		Locks:        s.os,
		LocalLocks:   true,
		Durable:      s.os,
		Directories:  true,
		CrossProcess: s.os,
		MaxNameBytes: backend.MaxNameBytes,
		MaxElemBytes: backend.MaxElemBytes,
	}
}

// Close releases the root. Open readers, writers and held locks stay valid
// until closed or unlocked by their owners.
func (s *fsDriver) Close() error { return classify(s.t.close()) }
