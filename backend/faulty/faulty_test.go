package faulty_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/mem"
)

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantFault checks err is target and names op and path.
func wantFault(t *testing.T, err, target error, op, path string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != op || pe.Path != path {
		t.Fatalf("err = %v, want op %q path %q", err, op, path)
	}
}

func read(t *testing.T, s backend.Storage, name string) string {
	t.Helper()
	b, err := s.ReadFile(ctx, name)
	must(t, err)
	return string(b)
}

func TestPassThrough(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner)
	if s.Capabilities() != inner.Capabilities() || s.Inner() != inner {
		t.Error("capabilities or inner not passed through")
	}
	must(t, s.EnsureDir(ctx, "d"))
	must(t, s.WriteFile(ctx, "d/f", []byte("hello")))
	_, err := s.WriteFrom(ctx, "d/g", strings.NewReader("from"))
	must(t, err)
	w, err := s.OpenWriter(ctx, "d/log", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("x"))
	must(t, err)
	must(t, w.Sync())
	must(t, w.Close())
	rc, err := s.OpenRange(ctx, "d/f", 1, 3)
	must(t, err)
	b, err := io.ReadAll(rc)
	must(t, err)
	must(t, rc.Close())
	p, err := s.ReadPrefix(ctx, "d/f", 2)
	must(t, err)
	if string(b) != "ell" || string(p) != "he" || read(t, inner, "d/g") != "from" {
		t.Errorf("range %q prefix %q", b, p)
	}
	var names []string
	for i, err := range s.List(ctx, "d") {
		must(t, err)
		names = append(names, i.Base())
	}
	if strings.Join(names, " ") != "f g log" {
		t.Errorf("list %v", names)
	}
	must(t, s.Rename(ctx, "d/g", "d/h"))
	must(t, s.Unlink(ctx, "d/h"))
	u, err := s.Lock(ctx, "l", false)
	must(t, err)
	must(t, u.Unlock())
	s.Crash()
	if s.Faults() != 0 {
		t.Errorf("faults = %d", s.Faults())
	}
	must(t, s.Close())
	if _, err := inner.Stat(ctx, "d"); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("inner not closed: %v", err)
	}
}

func TestFailNthCall(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.FailNth(3, nil))
	must(t, s.WriteFile(ctx, "a", []byte("1")))
	_, err := s.Stat(ctx, "a")
	must(t, err)
	wantFault(t, s.WriteFile(ctx, "a", []byte("2")), faulty.ErrInjected, "WriteFile", "a")
	must(t, s.WriteFile(ctx, "b", []byte("3")))
	if read(t, inner, "a") != "1" || s.Faults() != 1 {
		t.Errorf("a = %q, faults = %d", read(t, inner, "a"), s.Faults())
	}
}

func TestFailNthOfOps(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.FailNth(2, syscall.EIO, "WriteFile", "Rename"))
	must(t, s.WriteFile(ctx, "f", []byte("old")))
	_, err := s.Stat(ctx, "f") // not counted
	must(t, err)
	wantFault(t, s.Rename(ctx, "f", "g"), syscall.EIO, "Rename", "f")
	must(t, s.WriteFile(ctx, "f", []byte("new")))
	if read(t, s, "f") != "new" {
		t.Error("third call failed")
	}

	// A failed WriteFile leaves the old content, even across a crash.
	s.Inject(faulty.FailNth(1, nil, "WriteFile"))
	wantFault(t, s.WriteFile(ctx, "f", []byte("lost")), faulty.ErrInjected, "WriteFile", "f")
	s.Crash()
	if read(t, inner, "f") != "new" {
		t.Errorf("f = %q", read(t, inner, "f"))
	}
}

func TestFailFrom(t *testing.T) {
	s := faulty.New(mem.New(), faulty.FailFrom(2, syscall.EROFS, "WriteFile", "Writer.Write"))
	must(t, s.WriteFile(ctx, "f", []byte("ok")))
	w, err := s.OpenWriter(ctx, "f", backend.WriterOptions{})
	must(t, err)
	for range 3 {
		n, err := w.Write([]byte("x"))
		if n != 0 {
			t.Errorf("n = %d", n)
		}
		wantFault(t, err, syscall.EROFS, "Writer.Write", "f")
		wantFault(t, s.WriteFile(ctx, "f", nil), syscall.EROFS, "WriteFile", "f")
	}
	must(t, w.Close())
	if read(t, s, "f") != "ok" || s.Faults() != 6 {
		t.Errorf("f = %q, faults = %d", read(t, s, "f"), s.Faults())
	}
	s.Clear()
	must(t, s.WriteFile(ctx, "f", nil))
}

func TestFailRandomly(t *testing.T) {
	pattern := func(seed uint64, rate float64) string {
		s := faulty.New(mem.New(), faulty.FailRandomly(seed, rate, nil, "Stat"))
		var b strings.Builder
		for range 64 {
			if _, err := s.Stat(ctx, "."); errors.Is(err, faulty.ErrInjected) {
				b.WriteByte('x')
			} else {
				must(t, err)
				b.WriteByte('.')
			}
			must(t, s.EnsureDir(ctx, "d")) // other ops never fail
		}
		return b.String()
	}
	a, again := pattern(1, 0.5), pattern(1, 0.5)
	if a != again {
		t.Errorf("not reproducible: %s vs %s", a, again)
	}
	if a == pattern(2, 0.5) || !strings.Contains(a, ".") || !strings.Contains(a, "x") {
		t.Errorf("pattern %s", a)
	}
	if p := pattern(3, 0); strings.Contains(p, "x") {
		t.Errorf("rate 0 failed: %s", p)
	}
	if p := pattern(3, 1); strings.Contains(p, ".") {
		t.Errorf("rate 1 passed: %s", p)
	}
}

func TestFailSyncKeepsOnlyTheSyncedPrefix(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.FailSync(2))
	w, err := s.OpenWriter(ctx, "log", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("acked\n"))
	must(t, err)
	must(t, w.Sync())
	_, err = w.Write([]byte("unacked\n"))
	must(t, err)
	wantFault(t, w.Sync(), syscall.EIO, "Writer.Sync", "log")
	s.Crash()
	if got := read(t, inner, "log"); got != "acked\n" {
		t.Errorf("after crash: %q", got)
	}
}

func TestShortWrite(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.ShortWrite(2))
	w, err := s.OpenWriter(ctx, "f", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("1234"))
	must(t, err)
	n, err := w.Write([]byte("abcd"))
	if n >= 4 || n != 2 {
		t.Errorf("short write n = %d", n)
	}
	wantFault(t, err, io.ErrShortWrite, "Writer.Write", "f")
	_, err = w.Write([]byte("5"))
	must(t, err)
	must(t, w.Close())
	if got := read(t, inner, "f"); got != "1234ab5" {
		t.Errorf("f = %q", got)
	}
}

func TestNoSpace(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.NoSpaceAfter(10))
	must(t, s.WriteFile(ctx, "f", []byte("12345")))
	wantFault(t, s.WriteFile(ctx, "f", []byte("too long!")), syscall.ENOSPC, "WriteFile", "f")
	if read(t, inner, "f") != "12345" {
		t.Error("a failed WriteFile changed the file")
	}

	// A Writer gets the bytes that fit and a short count.
	s.Inject(faulty.NoSpaceAfter(6))
	w, err := s.OpenWriter(ctx, "log", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("abc"))
	must(t, err)
	must(t, w.Sync())
	n, err := w.Write([]byte("defgh"))
	if n != 3 {
		t.Errorf("n = %d, want 3", n)
	}
	wantFault(t, err, syscall.ENOSPC, "Writer.Write", "log")
	n, err = w.Write([]byte("x"))
	if n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("full: %d, %v", n, err)
	}
	if read(t, inner, "log") != "abcdef" {
		t.Errorf("log = %q", read(t, inner, "log"))
	}
	s.Crash()
	if read(t, inner, "log") != "abc" {
		t.Errorf("after crash log = %q", read(t, inner, "log"))
	}

	// WriteFrom sees its source fail and publishes nothing.
	s.Inject(faulty.NoSpaceAfter(4))
	src := strings.NewReader("0123456789")
	_, err = s.WriteFrom(ctx, "g", src)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteFrom: %v", err)
	}
	if _, err := inner.Stat(ctx, "g"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("g visible: %v", err)
	}
	if src.Len() != 6 {
		t.Errorf("source read past the space: %d left", src.Len())
	}
	if s.Faults() != 4 {
		t.Errorf("faults = %d", s.Faults())
	}

	s.Clear()
	_, err = s.WriteFrom(ctx, "g", bytes.NewReader(make([]byte, 1000)))
	must(t, err)
}

func TestHook(t *testing.T) {
	inner := mem.New()
	var seen []string
	var mu sync.Mutex
	deny := errors.New("denied")
	s := faulty.New(inner, faulty.WithHook(func(op, name string) error {
		mu.Lock()
		seen = append(seen, op+" "+name)
		mu.Unlock()
		if op == "Unlink" && strings.HasPrefix(name, "keep/") {
			return deny
		}
		return nil
	}))
	must(t, s.WriteFile(ctx, "keep/a", []byte("a")))
	wantFault(t, s.Unlink(ctx, "keep/a"), deny, "Unlink", "keep/a")
	w, err := s.OpenWriter(ctx, "w", backend.WriterOptions{})
	must(t, err)
	_, err = w.Write([]byte("x"))
	must(t, err)
	must(t, w.Sync())
	must(t, w.Close())
	rc, err := s.Open(ctx, "w")
	must(t, err)
	_, err = io.ReadAll(rc)
	must(t, err)
	must(t, rc.Close())
	want := "WriteFile keep/a|Unlink keep/a|OpenWriter w|Writer.Write w|Writer.Sync w|Writer.Close w|Open w|Reader.Read w|Reader.Read w|Reader.Close w"
	if got := strings.Join(seen, "|"); got != want {
		t.Errorf("hook saw\n%s\nwant\n%s", got, want)
	}
	if read(t, inner, "keep/a") != "a" {
		t.Error("denied unlink happened")
	}
}

// TestReleasesAlwaysRelease checks that a fault on Close or Unlock still
// releases what the inner store holds.
func TestReleasesAlwaysRelease(t *testing.T) {
	inner := mem.New()
	s := faulty.New(inner, faulty.FailNth(1, nil, "Unlocker.Unlock", "Writer.Close", "Reader.Close"))
	u, err := s.Lock(ctx, "l", false)
	must(t, err)
	wantFault(t, u.Unlock(), faulty.ErrInjected, "Unlocker.Unlock", "l")
	u, err = inner.Lock(ctx, "l", false)
	must(t, err)
	must(t, u.Unlock())

	s.Inject(faulty.FailNth(1, nil, "Writer.Close"))
	w, err := s.OpenWriter(ctx, "f", backend.WriterOptions{})
	must(t, err)
	wantFault(t, w.Close(), faulty.ErrInjected, "Writer.Close", "f")
	if _, err := w.Write([]byte("x")); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("inner writer still open: %v", err)
	}

	s.Inject(faulty.FailNth(1, nil, "Reader.Read"), faulty.FailNth(1, nil, "Close"))
	rc, err := s.Open(ctx, "f")
	must(t, err)
	_, err = rc.Read(make([]byte, 1))
	wantFault(t, err, faulty.ErrInjected, "Reader.Read", "f")
	must(t, rc.Close())
	wantFault(t, s.Close(), faulty.ErrInjected, "Close", ".")
	if _, err := inner.Stat(ctx, "."); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("inner not closed: %v", err)
	}
}

func TestListAndLockFaults(t *testing.T) {
	// A rule counts its ops together: for the first, Lock is the third call.
	s := faulty.New(mem.New(), faulty.FailNth(1, nil, "List", "Lock"), faulty.FailNth(1, nil, "Lock"))
	seq := s.List(ctx, ".") // not counted until iterated
	must(t, s.WriteFile(ctx, "f", nil))
	var errs []error
	for _, err := range seq {
		errs = append(errs, err)
	}
	if len(errs) != 1 {
		t.Fatalf("errs = %v", errs)
	}
	wantFault(t, errs[0], faulty.ErrInjected, "List", ".")
	for _, err := range s.List(ctx, ".") {
		must(t, err)
	}
	_, err := s.Lock(ctx, "l", true)
	wantFault(t, err, faulty.ErrInjected, "Lock", "l")
}

func TestConcurrentFaults(t *testing.T) {
	s := faulty.New(mem.New(), faulty.FailRandomly(42, 0.3, nil, "WriteFile"), faulty.FailNth(50, nil))
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				err := s.WriteFile(ctx, fmt.Sprintf("g%d/%d", g, i), []byte("x"))
				if errors.Is(err, faulty.ErrInjected) {
					mu.Lock()
					failed++
					mu.Unlock()
				} else if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if failed == 0 || failed != s.Faults() {
		t.Errorf("failed %d, faults %d", failed, s.Faults())
	}
}
