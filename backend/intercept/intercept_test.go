package intercept_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/intercept"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/backend/sub"
)

// Every call, and every call on what calls return, passes the interceptor
// once, named as faulty and spy name it.
func TestInterceptSeesEveryCall(t *testing.T) {
	var ops []string
	s := intercept.New(mem.New(), func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
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
	s := intercept.New(inner, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
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
	s, err := sub.New(intercept.New(inner, func(ctx context.Context, c *intercept.Call, next func(context.Context) error) error {
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
