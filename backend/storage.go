package backend

import (
	"context"
	"io"
	"iter"
	"time"
)

// Storage is a tree of files under one root.
//
// Names are slash-separated and relative to the root (see ValidPath); "." names
// the root itself and is accepted only where a directory is expected. Every
// method honours ctx and every error names the operation and the path
// (*fs.PathError) and wraps a sentinel usable with errors.Is: fs.ErrNotExist,
// fs.ErrExist, ErrInvalidPath, ErrNotSupported, ErrLocked, ErrClosed.
//
// Writing operations create missing parent directories. A lookup below a
// file ("file/x") is fs.ErrNotExist (it may also wrap ErrNotDir). No backend
// follows a symlink out of its root: such names are ErrInvalidPath.
type Storage interface {
	// Capabilities says what this backend can do natively. It never changes
	// the results of the other methods, only their cost.
	Capabilities() Capabilities

	// EnsureDir creates dir and its parents; an existing directory is fine.
	EnsureDir(ctx context.Context, dir string) error

	// Stat describes the file or directory name.
	Stat(ctx context.Context, name string) (Info, error)

	// List yields the direct children of dir, sorted by name. A missing dir
	// yields one fs.ErrNotExist error. Iteration stops at the first error.
	List(ctx context.Context, dir string) iter.Seq2[Info, error]

	// ReadFile returns the whole content of name.
	ReadFile(ctx context.Context, name string) ([]byte, error)

	// Open streams the content of name.
	Open(ctx context.Context, name string) (io.ReadCloser, error)

	// OpenRange streams length bytes from offset; length < 0 reads to the end.
	// A range past the end is clipped; a negative offset is ErrInvalidRange.
	OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error)

	// ReadPrefix returns the first min(n, size) bytes without reading the
	// rest; n < 0 is ErrInvalidRange.
	ReadPrefix(ctx context.Context, name string, n int) ([]byte, error)

	// WriteFile replaces name with data, all or nothing: a reader, and the
	// file after a crash, holds the old content or the new, never a mix.
	// It is durable when it returns, and data is the caller's again.
	WriteFile(ctx context.Context, name string, data []byte) error

	// WriteFrom is WriteFile for a stream: it copies r to name atomically
	// and durably, without holding the content in memory. It does not close r.
	WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error)

	// OpenWriter opens name for appending, creating it if missing.
	OpenWriter(ctx context.Context, name string, opt WriterOptions) (Writer, error)

	// Rename moves a file, replacing to if it exists; a directory on either
	// side is ErrIsDir. On Durable backends it is durable when it returns.
	Rename(ctx context.Context, from, to string) error

	// Unlink removes a file or an empty directory. It need not be durable
	// when it returns.
	Unlink(ctx context.Context, name string) error

	// Lock takes an exclusive lock called name (a file name; the lock may be
	// kept in that file). With wait it blocks until the lock is free or ctx
	// ends; without, a held lock is ErrLocked. Backends without locks return
	// ErrNotSupported (see Capabilities.Locks).
	Lock(ctx context.Context, name string, wait bool) (Unlocker, error)

	// Close releases the backend. Calls after Close fail with ErrClosed.
	// Closing twice is not an error. Writers, readers and locks already open
	// may stay valid; close them first.
	Close() error
}

// Info describes a file or a directory.
type Info struct {
	Name    string    // full slash path relative to the root
	Size    int64     // logical size in bytes; 0 for directories
	ModTime time.Time // last modification
	IsDir   bool
}

// Base returns the last element of Name.
func (i Info) Base() string { return Base(i.Name) }

// WriterOptions tunes OpenWriter.
type WriterOptions struct {
	// Exclusive fails with fs.ErrExist when the file already exists.
	Exclusive bool
	// Fresh, with Exclusive, says the caller made name new (a random id in
	// a tree it owns): no parent of it is a file, it is no directory, and
	// no earlier file of that name left anything behind. A store may then
	// skip looking at the place (a bucket: one request, not three).
	Fresh bool
	// Truncate starts from an empty file instead of appending.
	Truncate bool
	// Overwrite, with Truncate, writes over the old bytes from the start
	// and cuts the file at what was written at Sync and Close, instead of
	// emptying it at open: a reader may see new bytes before old ones
	// until then. For a file rewritten whole and often (a cache with a
	// checksum): a local disk then reuses its blocks, where ext4 writes a
	// file emptied at open out at its close, delaying the fsyncs of other
	// files. A store that cannot empties it at open.
	Overwrite bool
}

// Writer appends to one file. Bytes written become visible to new readers at
// Sync or Close at the latest, and are durable once Sync returns. After a
// crash the file holds a prefix of what was written, at least everything
// synced. A Writer is not safe for concurrent use.
type Writer interface {
	io.Writer
	// Sync makes everything written so far durable and visible.
	Sync() error
	// Close makes everything written visible and releases the writer. It
	// does not promise durability; call Sync first for that. Calls after
	// Close fail with ErrClosed; Close twice is not an error.
	Close() error
}

// Unlocker releases a lock taken by Storage.Lock; Unlock twice is no error.
type Unlocker interface {
	Unlock() error
}

// Capabilities are what a backend does natively.
type Capabilities struct {
	AtomicRename bool // Rename replaces atomically (false: copy then delete)
	NativeAppend bool // appends cost O(new bytes) without emulation
	Locks        bool // Lock works across processes
	LocalLocks   bool // Lock works within this process only
	Durable      bool // Sync survives a power loss (false for memory)
	Directories  bool // directories are real objects (false: implied by names)
	Crash        bool // the backend can simulate a crash (see Crasher)
	WriteOnce    bool // CreateFile and OpenInfo are one request each (see WriteOnce)
	CrossProcess bool // other processes can open the same store
	MaxNameBytes int  // longest name the backend accepts, in bytes
	MaxElemBytes int  // longest path element, in bytes
}

// Crasher is implemented by backends that can simulate a crash: Crash drops
// every byte that was not synced, as a power loss may.
type Crasher interface {
	Crash()
}
