package mem_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op == "" {
		t.Fatalf("err = %v, does not name the operation and path", err)
	}
}

func read(t *testing.T, s backend.Storage, name string) string {
	t.Helper()
	b, err := s.ReadFile(context.Background(), name)
	must(t, err)
	return string(b)
}

func list(t *testing.T, s backend.Storage, dir string) []string {
	t.Helper()
	var names []string
	for i, err := range s.List(context.Background(), dir) {
		must(t, err)
		names = append(names, i.Name)
	}
	return names
}

func write(t *testing.T, s backend.Storage, name, data string) {
	t.Helper()
	must(t, s.WriteFile(context.Background(), name, []byte(data)))
}

func TestCapabilities(t *testing.T) {
	c := mem.New().Capabilities()
	if !c.AtomicRename || !c.NativeAppend || !c.LocalLocks || !c.Directories || !c.Crash {
		t.Errorf("missing capability: %+v", c)
	}
	if c.Durable || c.Locks || c.CrossProcess {
		t.Errorf("claims too much: %+v", c)
	}
	if c.MaxNameBytes != backend.MaxNameBytes || c.MaxElemBytes != backend.MaxElemBytes {
		t.Errorf("limits: %+v", c)
	}
}

// calls runs every method of s on name and returns their errors by method.
func calls(ctx context.Context, s backend.Storage, name string) map[string]error {
	errs := map[string]error{}
	errs["EnsureDir"] = s.EnsureDir(ctx, name)
	_, errs["Stat"] = s.Stat(ctx, name)
	for _, err := range s.List(ctx, name) {
		errs["List"] = err
		break
	}
	_, errs["ReadFile"] = s.ReadFile(ctx, name)
	_, errs["Open"] = s.Open(ctx, name)
	_, errs["OpenRange"] = s.OpenRange(ctx, name, 0, 1)
	_, errs["ReadPrefix"] = s.ReadPrefix(ctx, name, 1)
	errs["WriteFile"] = s.WriteFile(ctx, name, []byte("x"))
	_, errs["WriteFrom"] = s.WriteFrom(ctx, name, strings.NewReader("x"))
	_, errs["OpenWriter"] = s.OpenWriter(ctx, name, backend.WriterOptions{})
	errs["Rename from"] = s.Rename(ctx, name, "ok")
	errs["Rename to"] = s.Rename(ctx, "ok", name)
	errs["Unlink"] = s.Unlink(ctx, name)
	_, errs["Lock"] = s.Lock(ctx, name, false)
	return errs
}

func TestInvalidNames(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{
		"", "/abs", "a/../b", "..", "../x", "a//b", "a/", "./a", "a/.", "nul\x00", "back\\slash",
		"ctl\x01", "\xff\xfe", ".~tmp", "a/.~seg/1", strings.Repeat("a", 256),
		strings.Repeat("a/", 520) + "a",
	} {
		s := mem.New()
		write(t, s, "ok", "ok")
		for method, err := range calls(ctx, s, name) {
			if !errors.Is(err, backend.ErrInvalidPath) {
				t.Errorf("%s(%q) = %v, want ErrInvalidPath", method, name, err)
			}
		}
		if got := list(t, s, "."); len(got) != 1 || read(t, s, "ok") != "ok" {
			t.Errorf("%q: store changed: %v", name, got)
		}
	}
}

func TestValidOddNames(t *testing.T) {
	s := mem.New()
	names := []string{" space", "%41", ".hidden", "a b/c d", "ünï/çødé", "x~", "日本"}
	for _, n := range names {
		write(t, s, n, n)
	}
	for _, n := range names {
		if got := read(t, s, n); got != n {
			t.Errorf("%q: read %q", n, got)
		}
	}
	got := list(t, s, "ünï")
	if len(got) != 1 || got[0] != "ünï/çødé" {
		t.Errorf("list = %q", got)
	}
}

func TestMissing(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "ok", "ok")
	for _, name := range []string{"missing", "dir/missing", "ok/missing"} {
		_, err := s.Stat(ctx, name)
		wantErr(t, err, fs.ErrNotExist)
		_, err = s.ReadFile(ctx, name)
		wantErr(t, err, fs.ErrNotExist)
		_, err = s.Open(ctx, name)
		wantErr(t, err, fs.ErrNotExist)
		_, err = s.OpenRange(ctx, name, 1, 1)
		wantErr(t, err, fs.ErrNotExist)
		_, err = s.ReadPrefix(ctx, name, 1)
		wantErr(t, err, fs.ErrNotExist)
		wantErr(t, s.Rename(ctx, name, "x"), fs.ErrNotExist)
		wantErr(t, s.Unlink(ctx, name), fs.ErrNotExist)
	}
	var n int
	for _, err := range s.List(ctx, "nope") {
		wantErr(t, err, fs.ErrNotExist)
		n++
	}
	if n != 1 {
		t.Errorf("List of a missing dir yielded %d times, want 1", n)
	}
}

func TestDirectories(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	must(t, s.EnsureDir(ctx, "a/b/c"))
	must(t, s.EnsureDir(ctx, "a/b/c"))
	must(t, s.EnsureDir(ctx, "."))
	for _, d := range []string{".", "a", "a/b", "a/b/c"} {
		i, err := s.Stat(ctx, d)
		must(t, err)
		if !i.IsDir || i.Size != 0 || i.Name != d {
			t.Errorf("Stat(%q) = %+v", d, i)
		}
	}
	write(t, s, "x/y/z", "z")
	if i, err := s.Stat(ctx, "x/y"); err != nil || !i.IsDir {
		t.Errorf("WriteFile did not create parents: %+v %v", i, err)
	}
	wantErr(t, s.Unlink(ctx, "x/y"), backend.ErrNotEmpty)
	must(t, s.Unlink(ctx, "x/y/z"))
	must(t, s.Unlink(ctx, "x/y"))
	if got := list(t, s, "x"); len(got) != 0 {
		t.Errorf("list x = %v", got)
	}

	write(t, s, "f", "f")
	for _, err := range s.List(ctx, "f") {
		wantErr(t, err, backend.ErrNotDir)
	}
	wantErr(t, s.WriteFile(ctx, "f/g", nil), backend.ErrNotDir)
	wantErr(t, s.EnsureDir(ctx, "f"), backend.ErrNotDir)
	wantErr(t, s.EnsureDir(ctx, "f/g/h"), backend.ErrNotDir)
	_, err := s.OpenWriter(ctx, "f/g", backend.WriterOptions{})
	wantErr(t, err, backend.ErrNotDir)
	wantErr(t, s.Rename(ctx, "f", "f/g"), backend.ErrNotDir)

	_, err = s.ReadFile(ctx, "a")
	wantErr(t, err, backend.ErrIsDir)
	_, err = s.Open(ctx, "a")
	wantErr(t, err, backend.ErrIsDir)
	wantErr(t, s.WriteFile(ctx, "a", nil), backend.ErrIsDir)
	_, err = s.OpenWriter(ctx, "a", backend.WriterOptions{})
	wantErr(t, err, backend.ErrIsDir)
	_, err = s.OpenWriter(ctx, "a", backend.WriterOptions{Exclusive: true})
	wantErr(t, err, fs.ErrExist)
	wantErr(t, s.Rename(ctx, "a", "z"), backend.ErrIsDir)
	wantErr(t, s.Rename(ctx, "f", "a"), backend.ErrIsDir)
	if read(t, s, "f") != "f" {
		t.Error("failed calls changed f")
	}
}

func TestListAndStat(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := mem.New(mem.WithClock(func() time.Time { clock = clock.Add(time.Second); return clock }))
	for _, n := range []string{"d/b", "d/a", "d/c/x", "d/B", "d/a b", "d/a.b", "top"} {
		write(t, s, n, n)
	}
	want := []string{"d/B", "d/a", "d/a b", "d/a.b", "d/b", "d/c"}
	if got := list(t, s, "d"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("list d = %q, want %q", got, want)
	}
	if got := list(t, s, "."); strings.Join(got, "|") != "d|top" {
		t.Errorf("list . = %q", got)
	}
	for i, err := range s.List(ctx, "d") {
		must(t, err)
		st, err := s.Stat(ctx, i.Name)
		must(t, err)
		if st != i {
			t.Errorf("Stat %+v != List %+v", st, i)
		}
		if !i.IsDir && i.Size != int64(len(i.Name)) {
			t.Errorf("%s: size %d", i.Name, i.Size)
		}
	}
	before := clock
	write(t, s, "top", "longer")
	st, err := s.Stat(ctx, "top")
	must(t, err)
	if !st.ModTime.After(before) || st.Size != 6 || st.Base() != "top" {
		t.Errorf("after rewrite: %+v (clock was %v)", st, before)
	}
	w, err := s.OpenWriter(ctx, "top", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("!"))
	must(t, err)
	st2, err := s.Stat(ctx, "top")
	must(t, err)
	if !st2.ModTime.After(st.ModTime) || st2.Size != 7 {
		t.Errorf("after append: %+v", st2)
	}
	must(t, w.Close())

	// Breaking off the iteration early is fine and stops it.
	n := 0
	for range s.List(ctx, "d") {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break: %d", n)
	}
}

func TestReads(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "f", "0123456789")
	write(t, s, "empty", "")
	for _, c := range []struct {
		n    int
		want string
	}{{0, ""}, {3, "012"}, {10, "0123456789"}, {11, "0123456789"}, {1 << 30, "0123456789"}} {
		b, err := s.ReadPrefix(ctx, "f", c.n)
		must(t, err)
		if string(b) != c.want || b == nil {
			t.Errorf("ReadPrefix(%d) = %q", c.n, b)
		}
	}
	_, err := s.ReadPrefix(ctx, "f", -1)
	wantErr(t, err, backend.ErrInvalidRange)
	if b, err := s.ReadFile(ctx, "empty"); err != nil || b == nil || len(b) != 0 {
		t.Errorf("ReadFile empty = %q, %v", b, err)
	}

	for _, c := range []struct {
		off, n int64
		want   string
	}{
		{0, -1, "0123456789"}, {3, -1, "3456789"}, {3, 2, "34"}, {3, 0, ""},
		{8, 5, "89"}, {10, 1, ""}, {20, -1, ""}, {0, 100, "0123456789"},
	} {
		rc, err := s.OpenRange(ctx, "f", c.off, c.n)
		must(t, err)
		b, err := io.ReadAll(rc)
		must(t, err)
		must(t, rc.Close())
		if string(b) != c.want {
			t.Errorf("OpenRange(%d, %d) = %q, want %q", c.off, c.n, b, c.want)
		}
	}
	_, err = s.OpenRange(ctx, "f", -1, 2)
	wantErr(t, err, backend.ErrInvalidRange)

	rc, err := s.Open(ctx, "f")
	must(t, err)
	must(t, rc.Close())
	_, err = rc.Read(make([]byte, 1))
	wantErr(t, err, backend.ErrClosed)
}

// failingReader returns its data then err, and records Close.
type failingReader struct {
	data   []byte
	err    error
	closed bool
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (r *failingReader) Close() error { r.closed = true; return nil }

func TestWriteFrom(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	big := bytes.Repeat([]byte("abcdefgh"), 10000)
	r := &failingReader{data: big, err: io.EOF}
	n, err := s.WriteFrom(ctx, "a/f", r)
	must(t, err)
	if n != int64(len(big)) || read(t, s, "a/f") != string(big) || r.closed {
		t.Errorf("n=%d closed=%v", n, r.closed)
	}

	boom := errors.New("boom")
	_, err = s.WriteFrom(ctx, "a/f", &failingReader{data: []byte("partial"), err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if read(t, s, "a/f") != string(big) {
		t.Error("a failed WriteFrom changed the file")
	}
	_, err = s.WriteFrom(ctx, "new", &failingReader{data: []byte("partial"), err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.Stat(ctx, "new"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed WriteFrom left a file: %v", err)
	}
	n, err = s.WriteFrom(ctx, "empty", strings.NewReader(""))
	must(t, err)
	if n != 0 || read(t, s, "empty") != "" {
		t.Errorf("empty: %d", n)
	}
}

func TestWriter(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	w, err := s.OpenWriter(ctx, "d/log", backend.WriterOptions{})
	must(t, err)
	for _, p := range []string{"a", "", "bc"} {
		n, err := w.Write([]byte(p))
		if err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if read(t, s, "d/log") != "abc" {
		t.Error("written bytes not visible")
	}
	must(t, w.Sync())
	must(t, w.Close())
	must(t, w.Close())
	_, err = w.Write([]byte("x"))
	wantErr(t, err, backend.ErrClosed)
	wantErr(t, w.Sync(), backend.ErrClosed)

	// Appending by default.
	w, err = s.OpenWriter(ctx, "d/log", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("def"))
	must(t, err)
	must(t, w.Close())
	if read(t, s, "d/log") != "abcdef" {
		t.Errorf("append: %q", read(t, s, "d/log"))
	}

	_, err = s.OpenWriter(ctx, "d/log", backend.WriterOptions{Exclusive: true})
	wantErr(t, err, fs.ErrExist)

	w, err = s.OpenWriter(ctx, "d/log", backend.WriterOptions{Truncate: true})
	must(t, err)
	_, err = w.Write([]byte("new"))
	must(t, err)
	must(t, w.Close())
	if read(t, s, "d/log") != "new" {
		t.Errorf("truncate: %q", read(t, s, "d/log"))
	}

	// Open then close with no write: an empty file.
	w, err = s.OpenWriter(ctx, "empty", backend.WriterOptions{Exclusive: true})
	must(t, err)
	must(t, w.Close())
	if i, err := s.Stat(ctx, "empty"); err != nil || i.Size != 0 || i.IsDir {
		t.Errorf("empty: %+v %v", i, err)
	}
}

func TestWriterFollowsRenameNotReplace(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	w, err := s.OpenWriter(ctx, "a", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("1"))
	must(t, err)
	must(t, s.Rename(ctx, "a", "b"))
	_, err = w.Write([]byte("2"))
	must(t, err)
	if read(t, s, "b") != "12" {
		t.Errorf("b = %q", read(t, s, "b"))
	}
	// WriteFile replaces the file: the writer now writes to an orphan.
	write(t, s, "b", "fresh")
	_, err = w.Write([]byte("3"))
	must(t, err)
	must(t, w.Sync())
	must(t, w.Close())
	if read(t, s, "b") != "fresh" {
		t.Errorf("b = %q", read(t, s, "b"))
	}
}

func TestRename(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "a", "A")
	write(t, s, "b", "B")
	must(t, s.Rename(ctx, "a", "b"))
	if read(t, s, "b") != "A" {
		t.Error("rename did not replace")
	}
	if _, err := s.Stat(ctx, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("source still there: %v", err)
	}
	must(t, s.Rename(ctx, "b", "x/y/c"))
	must(t, s.Rename(ctx, "x/y/c", "x/y/c"))
	if read(t, s, "x/y/c") != "A" || len(list(t, s, ".")) != 1 {
		t.Errorf("across dirs: %v", list(t, s, "."))
	}
	wantErr(t, s.Rename(ctx, "gone", "z"), fs.ErrNotExist)
}

func TestNoAliasing(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	in := []byte("hello")
	must(t, s.WriteFile(ctx, "f", in))
	in[0] = 'J'
	out, err := s.ReadFile(ctx, "f")
	must(t, err)
	out[1] = 'E'
	p, err := s.ReadPrefix(ctx, "f", 5)
	must(t, err)
	p[2] = 'L'
	w, err := s.OpenWriter(ctx, "f", backend.WriterOptions{})
	must(t, err)
	buf := []byte("!!")
	_, err = w.Write(buf)
	must(t, err)
	buf[0] = '?'
	must(t, w.Close())
	if got := read(t, s, "f"); got != "hello!!" {
		t.Errorf("aliased: %q", got)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := mem.New()
	write(t, s, "f", "old")
	must(t, s.EnsureDir(context.Background(), "d"))
	for _, name := range []string{"f", "d", "new"} {
		for method, err := range calls(ctx, s, name) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s(%q) = %v, want context.Canceled", method, name, err)
			}
		}
	}
	if read(t, s, "f") != "old" || len(list(t, s, ".")) != 2 {
		t.Error("a cancelled call changed the store")
	}

	// Cancelled during a listing and during a streamed read.
	ctx, cancel = context.WithCancel(context.Background())
	write(t, s, "g", "g")
	var got []error
	for _, err := range s.List(ctx, ".") {
		got = append(got, err)
		cancel()
	}
	if len(got) != 2 || got[0] != nil || !errors.Is(got[1], context.Canceled) {
		t.Errorf("list cancelled after the first item: %v", got)
	}
	ctx, cancel = context.WithCancel(context.Background())
	rc, err := s.Open(ctx, "f")
	must(t, err)
	cancel()
	if _, err := io.ReadAll(rc); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}

	// A WriteFrom cancelled while copying keeps the old content.
	ctx, cancel = context.WithCancel(context.Background())
	r := &cancelReader{cancel: cancel}
	_, err = s.WriteFrom(ctx, "f", r)
	if !errors.Is(err, context.Canceled) || read(t, s, "f") != "old" {
		t.Errorf("WriteFrom cancelled midway: %v, %q", err, read(t, s, "f"))
	}
}

// cancelReader yields data forever and cancels its context on the first Read.
type cancelReader struct{ cancel func() }

func (r *cancelReader) Read(p []byte) (int, error) {
	r.cancel()
	return copy(p, "new"), nil
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	write(t, s, "f", "f")
	w, err := s.OpenWriter(ctx, "w", backend.WriterOptions{})
	must(t, err)
	rc, err := s.Open(ctx, "f")
	must(t, err)
	must(t, s.Close())
	must(t, s.Close())
	for method, err := range calls(ctx, s, "f") {
		if !errors.Is(err, backend.ErrClosed) {
			t.Errorf("%s after Close = %v", method, err)
		}
	}
	_, err = w.Write([]byte("x"))
	wantErr(t, err, backend.ErrClosed)
	wantErr(t, w.Sync(), backend.ErrClosed)
	_, err = rc.Read(make([]byte, 1))
	wantErr(t, err, backend.ErrClosed)
	s.Crash() // does nothing after Close
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	u, err := s.Lock(ctx, "l", false)
	must(t, err)
	_, err = s.Lock(ctx, "l", false)
	wantErr(t, err, backend.ErrLocked)
	other, err := s.Lock(ctx, "other", false)
	must(t, err)
	must(t, other.Unlock())

	got := make(chan error)
	go func() {
		u2, err := s.Lock(ctx, "l", true)
		if err == nil {
			err = u2.Unlock()
		}
		got <- err
	}()
	must(t, u.Unlock())
	must(t, <-got)
	must(t, u.Unlock()) // twice: nothing happens

	// A waiter gives up when its ctx ends, and when the store closes.
	u, err = s.Lock(ctx, "l", false)
	must(t, err)
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := s.Lock(wctx, "l", true)
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("waiter after cancel: %v", err)
	}
	go func() {
		_, err := s.Lock(ctx, "l", true)
		got <- err
	}()
	must(t, s.Close())
	if err := <-got; !errors.Is(err, backend.ErrClosed) {
		t.Errorf("waiter after Close: %v", err)
	}
	must(t, u.Unlock())
}

func TestLockManyWaiters(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	var mu sync.Mutex
	held := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			u, err := s.Lock(ctx, "l", true)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held++
			if held != 1 {
				t.Error("two holders")
			}
			held--
			mu.Unlock()
			if err := u.Unlock(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
