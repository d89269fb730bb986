package backend_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

// Every call, and every call on what calls return, passes the interceptor
// once, named as faulty and spy name it.
func TestInterceptSeesEveryCall(t *testing.T) {
	var ops []string
	s := backend.Intercept(mem.New(), func(ctx context.Context, c *backend.Call, next func(context.Context) error) error {
		ops = append(ops, c.Op)
		return next(ctx)
	})
	ctx := t.Context()
	s.Capabilities()
	s.EnsureDir(ctx, "d")
	s.WriteFile(ctx, "d/f", []byte("abc"))
	s.CreateFile(ctx, "d/g", []byte("abc"))
	s.WriteFrom(ctx, "d/h", strings.NewReader("abc"))
	s.Stat(ctx, "d/f")
	for range s.List(ctx, "d") {
	}
	s.ReadFile(ctx, "d/f")
	s.ReadPrefix(ctx, "d/f", 1)
	for _, open := range []func() (io.ReadCloser, error){
		func() (io.ReadCloser, error) { return s.Open(ctx, "d/f") },
		func() (io.ReadCloser, error) { return s.OpenRange(ctx, "d/f", 1, 1) },
		func() (io.ReadCloser, error) { rc, _, err := s.OpenInfo(ctx, "d/f"); return rc, err },
	} {
		rc, err := open()
		if err != nil {
			t.Fatal(err)
		}
		rc.Read(make([]byte, 8))
		rc.Close()
	}
	w, err := s.OpenWriter(ctx, "d/w", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x"))
	w.Sync()
	w.Close()
	u, err := s.Lock(ctx, "d/lock", false)
	if err != nil {
		t.Fatal(err)
	}
	u.Unlock()
	s.Rename(ctx, "d/h", "d/i")
	s.Unlink(ctx, "d/i")
	s.Crash()
	s.Close()
	want := "Capabilities EnsureDir WriteFile CreateFile WriteFrom Stat List ReadFile ReadPrefix " +
		"Open Reader.Read Reader.Close OpenRange Reader.Read Reader.Close OpenInfo Reader.Read Reader.Close " +
		"OpenWriter Writer.Write Writer.Sync Writer.Close Lock Unlocker.Unlock Rename Unlink Crash Close"
	if got := strings.Join(ops, " "); got != want {
		t.Fatalf("ops seen:\n%s\nwant:\n%s", got, want)
	}
}

// An interceptor rewrites names on the way in and infos on the way out,
// shortens writes, and fails calls without reaching the store.
func TestInterceptRewrites(t *testing.T) {
	inner := mem.New()
	ctx := t.Context()
	s := backend.Intercept(inner, func(ctx context.Context, c *backend.Call, next func(context.Context) error) error {
		switch c.Op {
		case "Unlink":
			return backend.PathErr("unlink", c.Name, syscall.EROFS)
		case "Writer.Write":
			c.Data = c.Data[:1]
		}
		c.Name = strings.ToUpper(c.Name)
		c.MapInfo = func(i backend.Info) backend.Info { i.Name = strings.ToLower(i.Name); return i }
		return next(ctx)
	})
	if err := s.WriteFile(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Stat(ctx, "A"); err != nil {
		t.Fatalf("the inner store did not get the rewritten name: %v", err)
	}
	if fi, err := s.Stat(ctx, "a"); err != nil || fi.Name != "a" {
		t.Fatalf("Stat = %+v, %v", fi, err)
	}
	if err := s.Unlink(ctx, "a"); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Unlink = %v", err)
	}
	w, err := s.OpenWriter(ctx, "w", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write([]byte("xyz")); n != 1 || err != nil {
		t.Fatalf("short Write = %d, %v", n, err)
	}
	w.Close()
	if data, _ := inner.ReadFile(ctx, "W"); string(data) != "x" {
		t.Fatalf("inner W = %q", data)
	}
}

// flaky fails the first fails calls of op with err.
type flaky struct {
	backend.Storage
	op    string
	fails int
	err   error
	calls int
	// midway fails a List after its first entry
	midway error
}

func (f *flaky) hit(op string) error {
	if op != f.op {
		return nil
	}
	f.calls++
	if f.calls <= f.fails {
		return f.err
	}
	return nil
}

func (f *flaky) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := f.hit("ReadFile"); err != nil {
		return nil, err
	}
	return f.Storage.ReadFile(ctx, name)
}

func (f *flaky) Rename(ctx context.Context, from, to string) error {
	if err := f.hit("Rename"); err != nil {
		return err
	}
	return f.Storage.Rename(ctx, from, to)
}

func (f *flaky) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	if err := f.hit("WriteFrom"); err != nil {
		io.CopyN(io.Discard, r, 2) // fails mid-stream
		return 0, err
	}
	return f.Storage.WriteFrom(ctx, name, r)
}

// List fails before its first entry, or with midway after it.
func (f *flaky) List(ctx context.Context, dir string) iter.Seq2[backend.Info, error] {
	return func(yield func(backend.Info, error) bool) {
		if err := f.hit("List"); err != nil {
			yield(backend.Info{}, err)
			return
		}
		for info, err := range f.Storage.List(ctx, dir) {
			if !yield(info, err) {
				return
			}
			if f.midway != nil {
				f.calls++
				yield(backend.Info{}, f.midway)
				return
			}
		}
	}
}

func (f *flaky) Stat(ctx context.Context, name string) (backend.Info, error) {
	if f.op == "Stat" {
		f.calls++
		<-ctx.Done() // never answers
		return backend.Info{}, ctx.Err()
	}
	return f.Storage.Stat(ctx, name)
}

// Retry repeats a call that is safe to repeat when it failed transiently,
// rewinds a seekable source, never repeats a rename, and bounds each
// attempt with its own deadline.
func TestRetry(t *testing.T) {
	ctx := t.Context()
	opts := backend.RetryOptions{Attempts: 3, Backoff: time.Microsecond, Timeout: 20 * time.Millisecond}
	newFlaky := func(op string, fails int, err error) (*flaky, backend.Storage) {
		f := &flaky{Storage: mem.New(), op: op, fails: fails, err: err}
		f.Storage.WriteFile(ctx, "f", []byte("data"))
		return f, backend.Retry(f, opts)
	}
	f, s := newFlaky("ReadFile", 2, syscall.ECONNRESET)
	if data, err := s.ReadFile(ctx, "f"); err != nil || string(data) != "data" || f.calls != 3 {
		t.Fatalf("ReadFile after two resets = %q, %v after %d calls", data, err, f.calls)
	}
	f, s = newFlaky("ReadFile", 5, syscall.ECONNRESET)
	if _, err := s.ReadFile(ctx, "f"); !errors.Is(err, syscall.ECONNRESET) || f.calls != 3 {
		t.Fatalf("ReadFile that keeps failing = %v after %d calls, want 3", err, f.calls)
	}
	f, s = newFlaky("ReadFile", 5, fs.ErrPermission)
	if _, err := s.ReadFile(ctx, "f"); !errors.Is(err, fs.ErrPermission) || f.calls != 1 {
		t.Fatalf("a lasting failure was tried %d times (%v)", f.calls, err)
	}
	f, s = newFlaky("Rename", 1, syscall.ECONNRESET)
	if err := s.Rename(ctx, "f", "g"); !errors.Is(err, syscall.ECONNRESET) || f.calls != 1 {
		t.Fatalf("Rename was tried %d times (%v)", f.calls, err)
	}
	f, s = newFlaky("WriteFrom", 1, syscall.ECONNRESET)
	if _, err := s.WriteFrom(ctx, "g", bytes.NewReader([]byte("whole"))); err != nil || f.calls != 2 {
		t.Fatalf("WriteFrom = %v after %d calls", err, f.calls)
	}
	if data, _ := f.Storage.ReadFile(ctx, "g"); string(data) != "whole" {
		t.Fatalf("a retried WriteFrom wrote %q", data)
	}
	list := func(s backend.Storage) (n int, err error) {
		for _, err := range s.List(ctx, ".") {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	f, s = newFlaky("List", 1, syscall.ECONNRESET)
	if n, err := list(s); n != 1 || err != nil || f.calls != 2 {
		t.Fatalf("List after a reset = %d entries, %v after %d calls", n, err, f.calls)
	}
	f, s = newFlaky("List", 0, nil)
	f.midway = syscall.ECONNRESET
	if n, err := list(s); n != 1 || !errors.Is(err, syscall.ECONNRESET) || f.calls != 2 { // one List, one midway failure
		t.Fatalf("List failing midway = %d entries, %v after %d calls; want no second try", n, err, f.calls)
	}
	f, s = newFlaky("Stat", 0, nil)
	if _, err := s.Stat(ctx, "f"); !errors.Is(err, backend.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || f.calls != 3 {
		t.Fatalf("Stat that never answers = %v after %d calls", err, f.calls)
	}
}

// Logged logs each call with its op, name and error, failures at warn.
func TestLogged(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := backend.Logged(mem.New(), l)
	ctx := t.Context()
	s.WriteFile(ctx, "a", []byte("123"))
	s.ReadFile(ctx, "missing")
	s.Rename(ctx, "a", "b/../c")
	out := buf.String()
	for _, want := range []string{
		"level=DEBUG msg=trove/backend op=WriteFile name=a n=3",
		"level=DEBUG msg=trove/backend op=ReadFile name=missing",
		"level=WARN msg=trove/backend op=Rename name=a to=b/../c",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// wholeMem is mem with a WholeFile fast path that says it was taken.
type wholeMem struct {
	backend.Storage
	took []string
}

func (w *wholeMem) PutFile(ctx context.Context, name string, data []byte) error {
	w.took = append(w.took, "PutFile "+name)
	return w.Storage.WriteFile(ctx, name, data)
}

func (w *wholeMem) RemoveFile(ctx context.Context, name string) error {
	w.took = append(w.took, "RemoveFile "+name)
	return w.Storage.Unlink(ctx, name)
}

// PutFile and RemoveFile reach the inner store's fast path through
// decorators (here Sub over an interceptor), named as themselves.
func TestInterceptWholeFile(t *testing.T) {
	inner := &wholeMem{Storage: mem.New()}
	var ops []string
	s, err := backend.Sub(backend.Intercept(inner, func(ctx context.Context, c *backend.Call, next func(context.Context) error) error {
		ops = append(ops, c.Op+" "+c.Name)
		return next(ctx)
	}), "d")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := backend.PutFile(ctx, s, "f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := backend.RemoveFile(ctx, s, "f"); err != nil {
		t.Fatal(err)
	}
	if err := backend.RemoveFile(ctx, s, "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RemoveFile of a removed file = %v", err)
	}
	if got := strings.Join(inner.took, ", "); got != "PutFile d/f, RemoveFile d/f, RemoveFile d/f" {
		t.Fatalf("fast paths taken: %s", got)
	}
	if got := strings.Join(ops, ", "); got != "PutFile d/f, RemoveFile d/f, RemoveFile d/f" {
		t.Fatalf("ops seen: %s", got)
	}
}
