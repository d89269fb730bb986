package fs

import (
	"context"
	"syscall"

	"github.com/trovekit/trove/backend"
)

// readRange reads on the OS when it can; ok false leaves the caller to
// read through OpenRange.
func (s *Storage) readRange(ctx context.Context, name string, off int64, p []byte) (n int, ok bool) {
	t, isOS := s.d.t.(osTree)
	if !isOS || off < 0 || ctx.Err() != nil || backend.ValidPath(name) != nil || name == "." {
		return 0, false
	}
	fd, err := t.b.OpenFile(name, syscall.O_RDONLY, 0, false)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	for n < len(p) {
		k, err := syscall.Pread(fd, p[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, true
}
