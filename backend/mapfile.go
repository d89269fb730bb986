package backend

import "context"

// Mapper is an optional fast path of stores on a local disk: MapFile
// returns name's bytes mapped read-only into memory instead of read into
// a buffer, so a large file that is read once per process (an index) costs
// a page fault per 64 KiB or so instead of one per 4 KiB and its copy. The
// bytes are valid until release is called and must never be written.
// Map only files that are replaced whole (WriteFile writes a temporary file
// and renames it): a mapping keeps the bytes a rename replaced, but a file
// written in place changes under it, and one cut short makes a read past
// its new end fault.
type Mapper interface {
	MapFile(ctx context.Context, name string) (data []byte, release func() error, err error)
}

// MapFile maps name through s's Mapper fast path, or reads it with
// ReadFile (release then does nothing).
func MapFile(ctx context.Context, s Storage, name string) ([]byte, func() error, error) {
	if m, ok := s.(Mapper); ok {
		return m.MapFile(ctx, name)
	}
	data, err := s.ReadFile(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return data, noRelease, nil
}

func noRelease() error { return nil }
