//go:build !linux

package beneath

// Open returns a Root with no fast path: every OpenFile says it cannot.
func Open(string) *Root { return &Root{fd: -1} }

// Close does nothing.
func (r *Root) Close() {}

// OpenFile always fails with ErrUnsupported.
func (r *Root) OpenFile(string, int, uint32, bool) (int, error) { return -1, ErrUnsupported }

// Undecided reports whether err leaves the answer to os.Root: here, always.
func Undecided(error) bool { return true }
