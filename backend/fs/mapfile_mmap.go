//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fs

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/trovekit/trove/backend"
)

var _ backend.Mapper = (*Storage)(nil)

// MapFile maps name read-only (see backend.Mapper) on the OS; on any other
// tree, and for any name it cannot map (missing, a directory, bad), it
// reads it with ReadFile, whose errors name the path as every other
// call's do.
func (s *Storage) MapFile(ctx context.Context, name string) ([]byte, func() error, error) {
	if data, release, ok := s.mapFile(ctx, name); ok {
		return data, release, nil
	}
	data, err := s.ReadFile(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return data, noRelease, nil
}

func noRelease() error { return nil }

// mapFile maps name when it can; ok false leaves the caller to read it.
func (s *Storage) mapFile(ctx context.Context, name string) ([]byte, func() error, bool) {
	if !s.d.os || ctx.Err() != nil || backend.ValidPath(name) != nil || name == "." {
		return nil, nil, false
	}
	f, size, err := s.d.openRead(name)
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	osf, isOS := f.(*os.File)
	if !isOS || size <= 0 || int64(int(size)) != size {
		return nil, nil, false // an empty file has no mapping
	}
	data, err := syscall.Mmap(int(osf.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, sync.OnceValue(func() error { return syscall.Munmap(data) }), true
}
