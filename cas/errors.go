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
	// ErrAlgorithmUnavailable: a digest algorithm this build cannot hash
	// with (BLAKE3 under the build tag trove_noblake3, see Algorithm.Linked).
	ErrAlgorithmUnavailable = errors.New("digest algorithm not in this build")
)

func refErr(op string, ref Ref, err error) error {
	if err == nil {
		return nil
	}
	path := "blob" // no ref known yet, as for a put that failed early
	if ref.valid() {
		path = ref.String()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == op && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
