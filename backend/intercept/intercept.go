package intercept

import (
	"context"
	"io"
	"iter"

	"github.com/trovekit/trove/backend"
)

// Call is one call made through a Store: what an Interceptor
// sees, and may change before and after the call.
type Call struct {
	// Op is the method: "EnsureDir", "Stat", "List", "ReadFile", "Open",
	// "OpenRange", "ReadPrefix", "WriteFile", "WriteFrom", "CreateFile",
	// "PutFile", "RemoveFile", "OpenInfo", "OpenWriter", "Rename", "Unlink",
	// "Lock", "Compact", "Close",
	// "Capabilities", "Crash", and on the values calls return
	// "Writer.Write", "Writer.Sync", "Writer.Close", "Reader.Read",
	// "Reader.Close", "Unlocker.Unlock".
	Op string
	// Name is the path (Rename's source; empty for Close, Capabilities and
	// Crash; a stream's file for the calls on it). An interceptor may
	// rewrite Name and To before the call: the inner store gets the result.
	Name, To string
	// Data is what a WriteFile, CreateFile, PutFile or Writer.Write writes; an
	// interceptor may shorten it (a short write).
	Data []byte
	// Src is WriteFrom's source; an interceptor may wrap it.
	Src io.Reader
	// N is set by the call: bytes written or read, or entries listed.
	N int64
	// Caps is what Capabilities returns, set by the call; an interceptor
	// may change it after.
	Caps backend.Capabilities
	// MapInfo, when an interceptor sets it before the call, rewrites every
	// Info the call returns (Stat, OpenInfo, each entry of List).
	MapInfo func(backend.Info) backend.Info
}

// Interceptor runs around every call of a Store, and of the
// writers, readers and locks it returns: next makes the call (with c's
// Name, To, Data and Src as they are then) and returns its error, and the
// interceptor returns the call's result error. Not calling next fails the
// call without reaching the inner store. ctx is the call's context; calls
// on a writer, reader or lock get the context of the call that opened it.
type Interceptor func(ctx context.Context, c *Call, next func(context.Context) error) error

// New returns s with ic around every call: one forwarder on which
// decorators (Sub, spy, faults, retries, logging) are written as a
// function each. It implements WriteOnce (through CreateFile and OpenInfo on
// s), WholeFile (PutFile and RemoveFile), Compacter and Crasher
// (crashing s when it can).
func New(s backend.Storage, ic Interceptor) *Store {
	return &Store{inner: s, ic: ic}
}

// Store is a Storage with an Interceptor around every call.
type Store struct {
	inner backend.Storage
	ic    Interceptor
}

var (
	_ backend.Storage   = (*Store)(nil)
	_ backend.WriteOnce = (*Store)(nil)
	_ backend.WholeFile = (*Store)(nil)
	_ backend.Crasher   = (*Store)(nil)
	_ backend.Compacter = (*Store)(nil)
)

// Inner returns the wrapped store.
func (x *Store) Inner() backend.Storage { return x.inner }

func (x *Store) do(ctx context.Context, c *Call, f func(ctx context.Context) error) error {
	return x.ic(ctx, c, f)
}

func (c *Call) info(i backend.Info) backend.Info {
	if c.MapInfo != nil {
		return c.MapInfo(i)
	}
	return i
}

// Capabilities passes through the interceptor as the op "Capabilities".
func (x *Store) Capabilities() backend.Capabilities {
	c := &Call{Op: "Capabilities"}
	_ = x.do(context.Background(), c, func(context.Context) error {
		c.Caps = x.inner.Capabilities()
		return nil
	})
	return c.Caps
}

// Crash crashes the inner store when it can, as the op "Crash".
func (x *Store) Crash() {
	_ = x.do(context.Background(), &Call{Op: "Crash"}, func(context.Context) error {
		if cr, ok := x.inner.(backend.Crasher); ok {
			cr.Crash()
		}
		return nil
	})
}

func (x *Store) EnsureDir(ctx context.Context, dir string) error {
	c := &Call{Op: "EnsureDir", Name: dir}
	return x.do(ctx, c, func(ctx context.Context) error { return x.inner.EnsureDir(ctx, c.Name) })
}

func (x *Store) Stat(ctx context.Context, name string) (backend.Info, error) {
	c := &Call{Op: "Stat", Name: name}
	var info backend.Info
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		info, err = x.inner.Stat(ctx, c.Name)
		return err
	})
	if err != nil {
		return backend.Info{}, err
	}
	return c.info(info), nil
}

// List passes its whole iteration through the interceptor: the call ends
// when the iteration does, with the entries yielded in N and the error
// that ended it, if any.
func (x *Store) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		c := &Call{Op: "List", Name: dir}
		stopped := false
		err := x.do(ctx, c, func(ctx context.Context) error {
			for info, err := range x.inner.List(ctx, c.Name) {
				if err != nil {
					return err
				}
				c.N++
				if !yield(c.info(info), nil) {
					stopped = true
					return nil
				}
			}
			return nil
		})
		if err != nil && !stopped {
			yield(backend.Info{}, err)
		}
	}
}

func (x *Store) ReadFile(ctx context.Context, name string) ([]byte, error) {
	c := &Call{Op: "ReadFile", Name: name}
	var data []byte
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		data, err = x.inner.ReadFile(ctx, c.Name)
		c.N = int64(len(data))
		return err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

func (x *Store) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, _, err := x.open(ctx, "Open", name, func(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
		rc, err := x.inner.Open(ctx, name)
		return rc, backend.Info{}, err
	})
	return rc, err
}

func (x *Store) OpenRange(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	rc, _, err := x.open(ctx, "OpenRange", name, func(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
		rc, err := x.inner.OpenRange(ctx, name, offset, length)
		return rc, backend.Info{}, err
	})
	return rc, err
}

// OpenInfo is the inner store's OpenInfo (see the OpenInfo function), as
// the op "OpenInfo".
func (x *Store) OpenInfo(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
	return x.open(ctx, "OpenInfo", name, func(ctx context.Context, name string) (io.ReadCloser, backend.Info, error) {
		return backend.OpenInfo(ctx, x.inner, name)
	})
}

func (x *Store) open(ctx context.Context, op, name string, f func(context.Context, string) (io.ReadCloser, backend.Info, error)) (io.ReadCloser, backend.Info, error) {
	c := &Call{Op: op, Name: name}
	var rc io.ReadCloser
	var info backend.Info
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		rc, info, err = f(ctx, c.Name)
		return err
	})
	if err != nil {
		if rc != nil {
			rc.Close()
		}
		return nil, backend.Info{}, err
	}
	return &icReader{x: x, ctx: ctx, name: name, rc: rc}, c.info(info), nil
}

func (x *Store) ReadPrefix(ctx context.Context, name string, n int) ([]byte, error) {
	c := &Call{Op: "ReadPrefix", Name: name}
	var data []byte
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		data, err = x.inner.ReadPrefix(ctx, c.Name, n)
		c.N = int64(len(data))
		return err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

func (x *Store) WriteFile(ctx context.Context, name string, data []byte) error {
	c := &Call{Op: "WriteFile", Name: name, Data: data, N: int64(len(data))}
	return x.do(ctx, c, func(ctx context.Context) error { return x.inner.WriteFile(ctx, c.Name, c.Data) })
}

func (x *Store) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	c := &Call{Op: "WriteFrom", Name: name, Src: r}
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		c.N, err = x.inner.WriteFrom(ctx, c.Name, c.Src)
		return err
	})
	return c.N, err
}

// CreateFile is the inner store's write-once create (see the CreateFile
// function), as the op "CreateFile".
func (x *Store) CreateFile(ctx context.Context, name string, data []byte) error {
	c := &Call{Op: "CreateFile", Name: name, Data: data, N: int64(len(data))}
	return x.do(ctx, c, func(ctx context.Context) error { return backend.CreateFile(ctx, x.inner, c.Name, c.Data) })
}

// PutFile is the inner store's whole-file write (see the PutFile
// function), as the op "PutFile".
func (x *Store) PutFile(ctx context.Context, name string, data []byte) error {
	c := &Call{Op: "PutFile", Name: name, Data: data, N: int64(len(data))}
	return x.do(ctx, c, func(ctx context.Context) error { return backend.PutFile(ctx, x.inner, c.Name, c.Data) })
}

// RemoveFile is the inner store's whole-file removal (see the RemoveFile
// function), as the op "RemoveFile".
func (x *Store) RemoveFile(ctx context.Context, name string) error {
	c := &Call{Op: "RemoveFile", Name: name}
	return x.do(ctx, c, func(ctx context.Context) error { return backend.RemoveFile(ctx, x.inner, c.Name) })
}

// Compact is the inner store's (see the Compact function), as the op
// "Compact".
func (x *Store) Compact(ctx context.Context, name string) error {
	c := &Call{Op: "Compact", Name: name}
	return x.do(ctx, c, func(ctx context.Context) error { return backend.Compact(ctx, x.inner, c.Name) })
}

func (x *Store) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	c := &Call{Op: "OpenWriter", Name: name}
	var w backend.Writer
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		w, err = x.inner.OpenWriter(ctx, c.Name, opt)
		return err
	})
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, err
	}
	return &icWriter{x: x, ctx: ctx, name: name, w: w}, nil
}

func (x *Store) Rename(ctx context.Context, from, to string) error {
	c := &Call{Op: "Rename", Name: from, To: to}
	return x.do(ctx, c, func(ctx context.Context) error { return x.inner.Rename(ctx, c.Name, c.To) })
}

func (x *Store) Unlink(ctx context.Context, name string) error {
	c := &Call{Op: "Unlink", Name: name}
	return x.do(ctx, c, func(ctx context.Context) error { return x.inner.Unlink(ctx, c.Name) })
}

func (x *Store) Lock(ctx context.Context, name string, wait bool) (backend.Unlocker, error) {
	c := &Call{Op: "Lock", Name: name}
	var u backend.Unlocker
	err := x.do(ctx, c, func(ctx context.Context) (err error) {
		u, err = x.inner.Lock(ctx, c.Name, wait)
		return err
	})
	if err != nil {
		if u != nil {
			u.Unlock()
		}
		return nil, err
	}
	return &icUnlocker{x: x, ctx: ctx, name: name, u: u}, nil
}

func (x *Store) Close() error {
	return x.do(context.Background(), &Call{Op: "Close"}, func(context.Context) error { return x.inner.Close() })
}

type icWriter struct {
	x    *Store
	ctx  context.Context
	name string
	w    backend.Writer
}

func (w *icWriter) Write(p []byte) (int, error) {
	c := &Call{Op: "Writer.Write", Name: w.name, Data: p}
	err := w.x.do(w.ctx, c, func(context.Context) error {
		n, err := w.w.Write(c.Data)
		c.N = int64(n)
		return err
	})
	return int(c.N), err
}

func (w *icWriter) Sync() error {
	return w.x.do(w.ctx, &Call{Op: "Writer.Sync", Name: w.name}, func(context.Context) error { return w.w.Sync() })
}

func (w *icWriter) Close() error {
	return w.x.do(w.ctx, &Call{Op: "Writer.Close", Name: w.name}, func(context.Context) error { return w.w.Close() })
}

type icReader struct {
	x    *Store
	ctx  context.Context
	name string
	rc   io.ReadCloser
}

func (r *icReader) Read(p []byte) (int, error) {
	c := &Call{Op: "Reader.Read", Name: r.name}
	err := r.x.do(r.ctx, c, func(context.Context) error {
		n, err := r.rc.Read(p)
		c.N = int64(n)
		return err
	})
	return int(c.N), err
}

func (r *icReader) Close() error {
	return r.x.do(r.ctx, &Call{Op: "Reader.Close", Name: r.name}, func(context.Context) error { return r.rc.Close() })
}

type icUnlocker struct {
	x    *Store
	ctx  context.Context
	name string
	u    backend.Unlocker
}

func (u *icUnlocker) Unlock() error {
	return u.x.do(u.ctx, &Call{Op: "Unlocker.Unlock", Name: u.name}, func(context.Context) error { return u.u.Unlock() })
}
