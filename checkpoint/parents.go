package checkpoint

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/trovekit/trove/backend"
)

// isNotEmpty: a directory removal refused for what is still inside.
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// isAbsent: the path does not exist, or a parent is not a directory.
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// parentCheck walks the parents of workspace paths with lstat, caching what
// it found: paths under a symlink or a file are never followed.
type parentCheck struct {
	ws   Workspace
	seen map[string]parentState
}

type parentState int

const (
	parentsOK      parentState = iota // every parent is a real directory
	parentsMissing                    // a parent is missing: the path is absent
	parentFile                        // a parent is a file (or other non-directory)
	parentSymlink                     // a parent is a symlink
)

// check returns the state of p's parents and, unless parentsOK, the first
// parent that is not a directory.
func (pc *parentCheck) check(p string) (parentState, string, error) {
	if pc.seen == nil {
		pc.seen = make(map[string]parentState)
	}
	for _, dir := range backend.Parents(p) {
		s, ok := pc.seen[dir]
		if !ok {
			st, err := pc.ws.lstat(dir)
			switch {
			case isAbsent(err):
				s = parentsMissing
			case err != nil:
				return 0, "", err
			case st.IsSymlink():
				s = parentSymlink
			case !st.IsDir():
				s = parentFile
			default:
				s = parentsOK
			}
			pc.seen[dir] = s
		}
		if s != parentsOK {
			return s, dir, nil
		}
	}
	return parentsOK, "", nil
}
