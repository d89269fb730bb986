package backend

import (
	"context"
	"errors"
	"io"
	"io/fs"
)

// WriteOnce is an optional fast path for content-addressed files: created
// whole, never appended to, renamed over or replaced, in a tree the caller
// owns. On a bucket each call is one request, where the general methods
// also look at the place (a parent that is a file, a directory of that
// name) and at appended parts. Use it through CreateFile and OpenInfo.
type WriteOnce interface {
	// CreateFile writes data as the new file name, all or nothing and
	// durably. When name exists it fails with fs.ErrExist (a wrapper over a
	// store without the fast path looks first, then writes: see the
	// CreateFile function). It need not check that no parent is a file or
	// that name is not a directory.
	CreateFile(ctx context.Context, name string, data []byte) error
	// OpenInfo opens a file written by CreateFile (or WriteFile, WriteFrom,
	// Rename) and describes it. A missing file is fs.ErrNotExist; a
	// directory may be fs.ErrNotExist too. It may miss bytes appended by
	// an OpenWriter.
	OpenInfo(ctx context.Context, name string) (io.ReadCloser, Info, error)
}

// CreateFile writes data as the new file name through s's WriteOnce fast
// path, or else with Stat and WriteFile. It is meant for names whose
// content is fixed by the name (content addresses): without the fast path,
// two creators racing may both write, the same bytes.
func CreateFile(ctx context.Context, s Storage, name string, data []byte) error {
	if w, ok := s.(WriteOnce); ok {
		return w.CreateFile(ctx, name, data)
	}
	switch _, err := s.Stat(ctx, name); {
	case err == nil:
		return PathErr("write", name, fs.ErrExist)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return s.WriteFile(ctx, name, data)
}

// OpenInfo opens name and describes it, in one request where s has the
// WriteOnce fast path (see WriteOnce.OpenInfo for what it may miss), else
// with Stat and Open. A directory is fs.ErrNotExist or ErrIsDir.
func OpenInfo(ctx context.Context, s Storage, name string) (io.ReadCloser, Info, error) {
	if w, ok := s.(WriteOnce); ok {
		return w.OpenInfo(ctx, name)
	}
	info, err := s.Stat(ctx, name)
	if err != nil {
		return nil, Info{}, err
	}
	if info.IsDir {
		return nil, Info{}, PathErr("open", name, ErrIsDir)
	}
	rc, err := s.Open(ctx, name)
	if err != nil {
		return nil, Info{}, err
	}
	return rc, info, nil
}

// WholeFile is an optional fast path for small files always written whole
// (metadata, markers, leases, indexes): on a bucket PutFile is one upload
// and RemoveFile one delete, without the looks at the place and at appended
// parts that WriteFile and Unlink make. PutFile replaces the file
// atomically and durably, as WriteFile does; RemoveFile of a missing file
// is fs.ErrNotExist, or no error where the delete does not say (S3, where
// asking costs a request). Neither checks that no parent is a file or that
// name is not a directory; on a store without directories of its own, a
// directory whose last file RemoveFile removes may vanish with it.
type WholeFile interface {
	PutFile(ctx context.Context, name string, data []byte) error
	RemoveFile(ctx context.Context, name string) error
}

// PutFile writes data as name through s's WholeFile fast path, or WriteFile.
func PutFile(ctx context.Context, s Storage, name string, data []byte) error {
	if w, ok := s.(WholeFile); ok {
		return w.PutFile(ctx, name, data)
	}
	return s.WriteFile(ctx, name, data)
}

// RemoveFile removes name through s's WholeFile fast path, or Unlink.
func RemoveFile(ctx context.Context, s Storage, name string) error {
	if r, ok := s.(WholeFile); ok {
		return r.RemoveFile(ctx, name)
	}
	return s.Unlink(ctx, name)
}

// Compacter is an optional call of stores that emulate appends (buckets):
// Compact folds an appended file's parts into fewer, so reading it stays a
// few requests, without fencing off a writer open on it. Such stores never
// fold at Sync (a Sync costs the same few requests however long a writer
// stays open); the next opener folds, and an owner that keeps a writer
// open long calls Compact when it can spare the requests (it reads and
// rewrites recent bytes).
type Compacter interface {
	Compact(ctx context.Context, name string) error
}

// Compact folds name's parts where s keeps files in parts (see Compacter),
// and does nothing elsewhere.
func Compact(ctx context.Context, s Storage, name string) error {
	if c, ok := s.(Compacter); ok {
		return c.Compact(ctx, name)
	}
	return nil
}
