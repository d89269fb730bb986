package fs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"syscall"

	"github.com/trovekit/trove/backend"
)

// sentinelErr keeps an OS error in the chain under the backend sentinel it
// means, so both errors.Is(err, backend.ErrNotEmpty) and
// errors.Is(err, syscall.ENOTEMPTY) hold.
type sentinelErr struct {
	sentinels []error
	err       error
}

func (e *sentinelErr) Error() string { return e.err.Error() }
func (e *sentinelErr) Unwrap() []error {
	return append(e.sentinels[:len(e.sentinels):len(e.sentinels)], e.err)
}

func withSentinel(err error, sentinels ...error) error {
	return &sentinelErr{sentinels: sentinels, err: err}
}

// errEscape is what we report when a name resolves out of the root.
var errEscape = withSentinel(errors.New("path escapes the root through a symlink"), backend.ErrInvalidPath)

// escapeMsg is the text of os.Root's unexported escape error. It is matched
// as a string because the os package does not export the value; the symlink
// tests fail loudly should it ever change.
const escapeMsg = "path escapes from parent"

func isEscape(err error) bool {
	for err != nil {
		if err.Error() == escapeMsg {
			return true
		}
		switch e := err.(type) {
		case *iofs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			err = errors.Unwrap(err)
		}
	}
	return false
}

// cause strips the *PathError or *LinkError an OS or afero call wraps around
// its errno, whose path is absolute or otherwise not ours.
func cause(err error) error {
	for {
		switch e := err.(type) {
		case *iofs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		default:
			return err
		}
	}
}

// classify maps an OS or afero error onto the backend sentinels. Errnos that
// already match io/fs sentinels (ENOENT, EEXIST, EACCES) pass unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if isEscape(err) {
		return errEscape
	}
	// Already classified by us (also keeps context errors as they are).
	var se *sentinelErr
	if errors.As(err, &se) {
		return err
	}
	c := cause(err)
	switch {
	case errors.Is(c, syscall.ENOTEMPTY):
		return withSentinel(c, backend.ErrNotEmpty)
	case errors.Is(c, syscall.ENOTDIR):
		return withSentinel(c, backend.ErrNotDir)
	case errors.Is(c, syscall.EISDIR):
		return withSentinel(c, backend.ErrIsDir)
	case errors.Is(c, syscall.ELOOP), errors.Is(c, syscall.ENAMETOOLONG):
		return withSentinel(c, backend.ErrInvalidPath)
	}
	return c
}

// missing adds fs.ErrNotExist to ENOTDIR for lookups: "file/x" names nothing,
// as on backends without real directories.
func missing(err error) error {
	err = classify(err)
	if errors.Is(err, backend.ErrNotDir) && !errors.Is(err, iofs.ErrNotExist) {
		return withSentinel(err, iofs.ErrNotExist)
	}
	return err
}

func notExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

func isDir(name string) error {
	return withSentinel(fmt.Errorf("%s is a directory", name), backend.ErrIsDir)
}

func notDir(name string) error {
	return withSentinel(fmt.Errorf("%s is a file", name), backend.ErrNotDir)
}
