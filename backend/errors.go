package backend

import (
	"context"
	"errors"
	"io/fs"
)

// Sentinel errors. Missing and existing files use fs.ErrNotExist and fs.ErrExist.
var (
	ErrInvalidPath  = errors.New("invalid path")
	ErrInvalidRange = errors.New("invalid range")
	ErrNotSupported = errors.New("not supported")
	ErrLocked       = errors.New("locked by another writer")
	ErrClosed       = errors.New("storage closed")
	ErrNotDir       = errors.New("not a directory")
	ErrIsDir        = errors.New("is a directory")
	ErrNotEmpty     = errors.New("directory not empty")
	// ErrCorrupt is wrapped when a storage finds a file's stored bytes
	// damaged or tampered with (backend/crypt's ErrCorrupt is one): layers
	// above take it for corruption of their own data, not a storage failure.
	ErrCorrupt = errors.New("stored bytes corrupt")
)

// PathErr wraps err as a *fs.PathError naming op and path. A nil err stays nil
// and an error that already names the same op and path is returned as is.
func PathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == op && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// CtxErr returns a PathError for a done ctx, or nil.
func CtxErr(ctx context.Context, op, path string) error {
	return PathErr(op, path, ctx.Err()) // nil stays nil
}
