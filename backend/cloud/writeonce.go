package cloud

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/trovekit/trove/backend"
)

// CreateFile is the write-once fast path (backend.WriteOnce): one
// conditional upload, without looking at the place first.
func (s *bucketDriver) CreateFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	lost, err := s.create(ctx, name, bytes.NewReader(data))
	if lost {
		return backend.PathErr(op, name, fmt.Errorf("%w: %w", fs.ErrExist, err))
	}
	return fail(op, name, err)
}

// OpenInfo is the write-once fast path (backend.WriteOnce): one read of
// the object under name, which is the whole of a file never appended to.
func (s *bucketDriver) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	const op = "open"
	rr, err := s.b.NewRangeReader(ctx, enc(name), 0, -1, nil)
	if err != nil {
		return nil, backend.Info{}, fail(op, name, err)
	}
	return &objFile{r: rr, name: name}, backend.Info{Name: name, Size: rr.Size(), ModTime: rr.ModTime()}, nil
}

// objFile reads one object, with errors that name the file.
type objFile struct {
	r    objReader
	name string
}

func (o *objFile) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err != nil && err != io.EOF {
		err = fail("read", o.name, err)
	}
	return n, err
}

func (o *objFile) Close() error { return o.r.Close() }

// PutFile is the fast path of backend.WholeFile: one upload replacing the
// object under name (atomic on every bucket), without looking at the place
// or for appended parts.
func (s *bucketDriver) PutFile(ctx context.Context, name string, data []byte) error {
	const op = "write"
	return fail(op, name, s.put(ctx, name, bytes.NewReader(data)))
}

// RemoveFile is the fast path of backend.WholeFile: the delete of the
// object under name, without looking for appended parts or keeping the
// directory. Through WithDelete's delete (S3) it is one request, and a
// missing file is no error.
func (s *bucketDriver) RemoveFile(ctx context.Context, name string) error {
	const op = "unlink"
	return fail(op, name, s.b.Remove(ctx, enc(name)))
}
