package beneath

import (
	"errors"
	"sync/atomic"
)

// ErrUnsupported is OpenFile's error where there is no fast path: another
// platform, an old kernel, a seccomp filter, or a root that did not open.
var ErrUnsupported = errors.New("beneath: no openat2 here")

// A Root is a directory opened for resolving names below it.
type Root struct {
	fd int // -1: no fast path here
	// off is set once openat2 proved missing (an old kernel) or refused
	// (a seccomp filter): later calls say at once that they cannot.
	off atomic.Bool
}

// FD returns the root's descriptor (for the *at calls of package unix),
// or -1 where there is none.
func (r *Root) FD() int { return r.fd }
