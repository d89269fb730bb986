package cas

import (
	"errors"
	"io/fs"
)

// Sentinel errors; a missing blob is fs.ErrNotExist. Errors about one blob are
// *fs.PathError values whose Path is the ref.
var (
	// ErrInvalidRef: a ref that is not blob:<sha256|blake3>:<64 lowercase hex>.
	ErrInvalidRef = errors.New("invalid blob ref")
	// ErrCorrupt: a stored object does not hold what its name promises.
	ErrCorrupt = errors.New("corrupt blob")
	// ErrTooLarge: a blob longer than the store's maximum blob size.
	ErrTooLarge = errors.New("blob too large")
)

func refErr(op string, ref Ref, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == op && pe.Path == ref.String() {
		return err
	}
	return &fs.PathError{Op: op, Path: ref.String(), Err: err}
}
