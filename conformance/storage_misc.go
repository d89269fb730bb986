package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/sub"
)

// ctxOps is every method called with ctx on a store holding "f" ("old")
// and the directory "d". None of them may change anything.
func ctxOps() []struct {
	name string
	call func(ctx context.Context, s backend.Storage) error
} {
	return []struct {
		name string
		call func(ctx context.Context, s backend.Storage) error
	}{
		{"EnsureDir", func(ctx context.Context, s backend.Storage) error { return s.EnsureDir(ctx, "newdir") }},
		{"Stat", func(ctx context.Context, s backend.Storage) error {
			_, err := s.Stat(ctx, "f")
			return err
		}},
		{"List", func(ctx context.Context, s backend.Storage) error {
			n, err := firstErr(s.List(ctx, "."))
			if n > 0 {
				return fmt.Errorf("%d entries from List before the error", n)
			}
			if err == nil {
				return errors.New("no error from List")
			}
			return err
		}},
		{"ReadFile", func(ctx context.Context, s backend.Storage) error {
			_, err := s.ReadFile(ctx, "f")
			return err
		}},
		{"Open", func(ctx context.Context, s backend.Storage) error {
			_, err := readAll(s.Open(ctx, "f"))
			return err
		}},
		{"OpenRange", func(ctx context.Context, s backend.Storage) error {
			_, err := readAll(s.OpenRange(ctx, "f", 1, 1))
			return err
		}},
		{"ReadPrefix", func(ctx context.Context, s backend.Storage) error {
			_, err := s.ReadPrefix(ctx, "f", 2)
			return err
		}},
		{"WriteFile-replace", func(ctx context.Context, s backend.Storage) error {
			return s.WriteFile(ctx, "f", []byte("new"))
		}},
		{"WriteFile-create", func(ctx context.Context, s backend.Storage) error {
			return s.WriteFile(ctx, "g", []byte("new"))
		}},
		{"WriteFrom-replace", func(ctx context.Context, s backend.Storage) error {
			_, err := s.WriteFrom(ctx, "f", strings.NewReader("new"))
			return err
		}},
		{"WriteFrom-create", func(ctx context.Context, s backend.Storage) error {
			_, err := s.WriteFrom(ctx, "d/g", strings.NewReader("new"))
			return err
		}},
		{"OpenWriter-append", func(ctx context.Context, s backend.Storage) error {
			return writeVia(ctx, s, "f", backend.WriterOptions{})
		}},
		{"OpenWriter-truncate", func(ctx context.Context, s backend.Storage) error {
			return writeVia(ctx, s, "f", backend.WriterOptions{Truncate: true})
		}},
		{"OpenWriter-create", func(ctx context.Context, s backend.Storage) error {
			return writeVia(ctx, s, "h", backend.WriterOptions{Exclusive: true})
		}},
		{"Rename", func(ctx context.Context, s backend.Storage) error { return s.Rename(ctx, "f", "moved") }},
		{"Unlink-file", func(ctx context.Context, s backend.Storage) error { return s.Unlink(ctx, "f") }},
		{"Unlink-dir", func(ctx context.Context, s backend.Storage) error { return s.Unlink(ctx, "d") }},
	}
}

// writeVia opens a writer and writes through it; an error at any step is
// returned, a writer that gets through is a failure of the caller's check.
func writeVia(ctx context.Context, s backend.Storage, name string, opt backend.WriterOptions) error {
	w, err := s.OpenWriter(ctx, name, opt)
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte("new")); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func testContext(t *testing.T, nb newStorage) {
	for _, mode := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(p, time.Unix(1, 0))
		}, context.DeadlineExceeded},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s := nb(t)
			mustWrite(t, s, "f", []byte("old"))
			mustEnsureDir(t, s, "d")
			for _, op := range ctxOps() {
				t.Run(op.name, func(t *testing.T) {
					ctx, cancel := mode.ctx(t.Context())
					defer cancel()
					err := op.call(ctx, s)
					if !errors.Is(err, mode.want) {
						t.Errorf("%s with a done ctx = %v, want %v", op.name, err, mode.want)
					} else {
						var pe *fs.PathError
						if !errors.As(err, &pe) {
							t.Errorf("%s: %q (%T) is not a *fs.PathError", op.name, err, err)
						}
					}
				})
			}
			t.Run("Lock", func(t *testing.T) {
				ctx, cancel := mode.ctx(t.Context())
				defer cancel()
				u, err := s.Lock(ctx, "lk", true)
				if u != nil {
					u.Unlock()
				}
				if !errors.Is(err, mode.want) && !(noLocks(s) && errors.Is(err, backend.ErrNotSupported)) {
					t.Errorf("Lock with a done ctx = %v, want %v", err, mode.want)
				}
			})
			t.Run("nothing-changed", func(t *testing.T) {
				wantContent(t, s, "f", []byte("old"))
				got := walkNames(t, s)
				// A lock may be kept in a file of its name; nothing else.
				got = slices.DeleteFunc(got, func(n string) bool { return n == "lk" })
				if !slices.Equal(got, []string{"d", "f"}) {
					t.Errorf("after calls with a done ctx the store holds %q, want [d f]", got)
				}
			})
		})
	}
	t.Run("writer-after-cancel", func(t *testing.T) {
		// Cancelling the ctx of OpenWriter later must not lose what was
		// synced before.
		s := nb(t)
		ctx, cancel := context.WithCancel(t.Context())
		w, err := s.OpenWriter(ctx, "f", backend.WriterOptions{})
		if err != nil {
			t.Fatalf("OpenWriter: %v", err)
		}
		mustWriteTo(t, w, []byte("synced"))
		mustSync(t, w)
		cancel()
		w.Write([]byte("after"))
		w.Close()
		got := mustRead(t, s, "f")
		if !bytes.HasPrefix(got, []byte("synced")) || !bytes.HasPrefix([]byte("syncedafter"), got) {
			t.Errorf("after cancel the file holds %q, want \"synced\" and maybe \"after\"", got)
		}
	})
}

func noLocks(s backend.Storage) bool {
	c := s.Capabilities()
	return !c.Locks && !c.LocalLocks
}

func testConcurrency(t *testing.T, nb newStorage) {
	testConcurrentWriters(t, nb)
	testConcurrentReaders(t, nb)
}

// testConcurrentWriters checks writers at once, on files of their own and
// on one shared file, with listers walking the tree beside them.
func testConcurrentWriters(t *testing.T, nb newStorage) {
	t.Run("distinct-writers", func(t *testing.T) {
		s := nb(t)
		const writers = 8
		done := make(chan struct{})
		var listers sync.WaitGroup
		for range 2 {
			listers.Go(func() {
				for {
					for info, err := range backend.Walk(t.Context(), s, ".") {
						// A directory may vanish under Walk; that is fine.
						if err != nil && !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("Walk during writes: %v", err)
							return
						}
						if strings.Contains(info.Name, backend.ReservedPrefix) {
							t.Errorf("Walk during writes shows %q", info.Name)
						}
					}
					select {
					case <-done:
						return
					default:
					}
				}
			})
		}
		var writersWG sync.WaitGroup
		for g := range writers {
			writersWG.Go(func() {
				dir := fmt.Sprintf("w%d", g)
				ctx := t.Context()
				if err := s.WriteFile(ctx, dir+"/a", pattern(2000, uint64(g))); err != nil {
					t.Errorf("writer %d: WriteFile: %v", g, err)
					return
				}
				if err := s.WriteFile(ctx, fmt.Sprintf("shared/%d", g), []byte(dir)); err != nil {
					t.Errorf("writer %d: WriteFile shared: %v", g, err)
					return
				}
				w, err := s.OpenWriter(ctx, dir+"/log", backend.WriterOptions{})
				if err != nil {
					t.Errorf("writer %d: OpenWriter: %v", g, err)
					return
				}
				for i := range 4 {
					if _, err := fmt.Fprintf(w, "%d:%d;", g, i); err != nil {
						t.Errorf("writer %d: Write: %v", g, err)
					}
					if err := w.Sync(); err != nil {
						t.Errorf("writer %d: Sync: %v", g, err)
					}
				}
				if err := w.Close(); err != nil {
					t.Errorf("writer %d: Close: %v", g, err)
				}
				if err := s.Rename(ctx, dir+"/a", dir+"/b"); err != nil {
					t.Errorf("writer %d: Rename: %v", g, err)
				}
				if err := s.WriteFile(ctx, dir+"/tmp", nil); err != nil {
					t.Errorf("writer %d: WriteFile tmp: %v", g, err)
				}
				if err := s.Unlink(ctx, dir+"/tmp"); err != nil {
					t.Errorf("writer %d: Unlink: %v", g, err)
				}
			})
		}
		writersWG.Wait()
		close(done)
		listers.Wait()
		var shared []string
		for g := range writers {
			dir := fmt.Sprintf("w%d", g)
			wantContent(t, s, dir+"/b", pattern(2000, uint64(g)))
			wantContent(t, s, dir+"/log", fmt.Appendf(nil, "%d:0;%d:1;%d:2;%d:3;", g, g, g, g))
			wantList(t, s, dir, dir+"/b", dir+"/log")
			wantContent(t, s, fmt.Sprintf("shared/%d", g), []byte(dir))
			shared = append(shared, fmt.Sprintf("shared/%d", g))
		}
		wantList(t, s, "shared", shared...)
	})
}

// testConcurrentReaders checks readers while a writer appends (they see a
// growing prefix) or truncates (they get only bytes that were written).
func testConcurrentReaders(t *testing.T, nb newStorage) {
	t.Run("readers-during-append", func(t *testing.T) {
		// Readers see a growing prefix of what the writer appends.
		s := nb(t)
		var all []byte
		for i := range 16 {
			all = append(all, fmt.Sprintf("record %02d %s\n", i, strings.Repeat("x", 100))...)
		}
		w := openWriter(t, s, "log", backend.WriterOptions{})
		mustClose(t, w) // the file exists before readers start
		done := make(chan struct{})
		var wg sync.WaitGroup
		// Stop the readers even when the test fails early (t.Fatal),
		// so none reports after the test has ended.
		stop := sync.OnceFunc(func() { close(done); wg.Wait() })
		defer stop()
		for r := range 3 {
			wg.Go(func() {
				last := 0
				for {
					finished := false
					select {
					case <-done:
						finished = true
					default:
					}
					got, err := readWay(t.Context(), s, r, "log", 1<<20)
					if err != nil {
						t.Errorf("reader %d: %v", r, err)
						return
					}
					if !bytes.HasPrefix(all, got) {
						t.Errorf("reader %d read %d bytes that are not a prefix of what was appended: %s", r, len(got), diff(got, all[:min(len(got), len(all))]))
						return
					}
					if len(got) < last {
						t.Errorf("reader %d: file shrank from %d to %d bytes", r, last, len(got))
						return
					}
					last = len(got)
					if finished {
						if len(got) != len(all) {
							t.Errorf("reader %d: after the last Sync read %d bytes, want %d", r, len(got), len(all))
						}
						return
					}
				}
			})
		}
		w = openWriter(t, s, "log", backend.WriterOptions{})
		rec := len(all) / 16
		for i := range 16 {
			mustWriteTo(t, w, all[i*rec:(i+1)*rec])
			mustSync(t, w)
		}
		stop()
		mustClose(t, w)
		wantContent(t, s, "log", all)
	})
	t.Run("readers-during-truncate", func(t *testing.T) {
		// A truncating writer is not atomic (on a disk a reader may see
		// the start of one version and the rest of another), but readers
		// get only bytes that were written, and the memory a reader got
		// must not change under it (-race watches that).
		s := nb(t)
		const versions = 12
		mustWrite(t, s, "f", version(0))
		done := make(chan struct{})
		var wg sync.WaitGroup
		// Stop the readers even when the test fails early (t.Fatal),
		// so none reports after the test has ended.
		stop := sync.OnceFunc(func() { close(done); wg.Wait() })
		defer stop()
		for r := range 3 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					got, err := readWay(t.Context(), s, r, "f", 64<<10)
					if err != nil {
						t.Errorf("reader %d: %v", r, err)
						return
					}
					if len(got) == 0 {
						continue
					}
					snapshot := bytes.Clone(got)
					for i, c := range got {
						if c < 'A' || c >= 'A'+versions {
							t.Errorf("reader %d: byte %d is %q, never written", r, i, c)
							return
						}
					}
					if !bytes.Equal(got, snapshot) {
						t.Errorf("reader %d: the bytes returned changed after the read", r)
						return
					}
				}
			})
		}
		for v := 1; v < versions; v++ {
			w := openWriter(t, s, "f", backend.WriterOptions{Truncate: true})
			data := version(v)
			mustWriteTo(t, w, data[:len(data)/2])
			mustWriteTo(t, w, data[len(data)/2:])
			mustClose(t, w)
		}
		stop()
		wantContent(t, s, "f", version(versions-1))
	})
}

// allBytes holds every byte value, twice, in two orders.
func allBytes() []byte {
	b := make([]byte, 512)
	for i := range 256 {
		b[i] = byte(i)
		b[511-i] = byte(i)
	}
	return b
}

func testBinary(t *testing.T, nb newStorage) {
	data := allBytes()
	writers := []struct {
		name  string
		write func(tb testing.TB, s backend.Storage, name string, data []byte)
	}{
		{"WriteFile", mustWrite},
		{"WriteFrom", func(tb testing.TB, s backend.Storage, name string, data []byte) {
			n, err := s.WriteFrom(tb.Context(), name, bytes.NewReader(data))
			if err != nil || n != int64(len(data)) {
				tb.Fatalf("WriteFrom = %d, %v", n, err)
			}
		}},
		{"OpenWriter", func(tb testing.TB, s backend.Storage, name string, data []byte) {
			w := openWriter(tb, s, name, backend.WriterOptions{})
			half := len(data) / 2
			mustWriteTo(tb, w, data[:half])
			mustSync(tb, w)
			mustWriteTo(tb, w, data[half:])
			mustClose(tb, w)
		}},
	}
	for _, content := range []struct {
		name string
		data []byte
	}{{"all-bytes", data}, {"empty", nil}} {
		for _, wr := range writers {
			t.Run(content.name+"/"+wr.name, func(t *testing.T) {
				s := nb(t)
				wr.write(t, s, "bin", content.data)
				checkAllReads(t, s, "bin", content.data)
			})
		}
	}
}

// checkAllReads reads name every way there is and compares with want.
func checkAllReads(t *testing.T, s backend.Storage, name string, want []byte) {
	t.Helper()
	ctx := t.Context()
	check := func(how string, got []byte, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", how, err)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s: %s", how, diff(got, want))
		}
	}
	got, err := s.ReadFile(ctx, name)
	check("ReadFile", got, err)
	got, err = readAll(s.Open(ctx, name))
	check("Open", got, err)
	got, err = s.ReadPrefix(ctx, name, len(want)+10)
	check("ReadPrefix", got, err)
	got, err = readAll(s.OpenRange(ctx, name, 0, -1))
	check("OpenRange", got, err)
	if len(want) > 100 {
		got, err = readAll(s.OpenRange(ctx, name, 100, -1))
		if err != nil || !bytes.Equal(got, want[100:]) {
			t.Errorf("OpenRange(100, -1): %v %s", err, diff(got, want[100:]))
		}
	}
	info, err := s.Stat(ctx, name)
	if err != nil || info.Size != int64(len(want)) {
		t.Errorf("Stat = %+v, %v; want size %d", info, err, len(want))
	}
}

const bigSize = 64 << 20

func testBig(t *testing.T, nb newStorage) {
	t.Run("64MiB-stream", func(t *testing.T) {
		if testing.Short() {
			t.Skip("64 MiB streaming case skipped in -short mode")
		}
		s := nb(t)
		wantHash := sha256.New()
		n, err := s.WriteFrom(t.Context(), "big", &genReader{size: bigSize, h: wantHash})
		if err != nil || n != bigSize {
			t.Fatalf("WriteFrom(64 MiB) = %d, %v", n, err)
		}
		info, err := s.Stat(t.Context(), "big")
		if err != nil || info.Size != bigSize {
			t.Errorf("Stat(big) = %+v, %v", info, err)
		}
		rc, err := s.Open(t.Context(), "big")
		if err != nil {
			t.Fatalf("Open(big): %v", err)
		}
		gotHash := sha256.New()
		m, err := io.Copy(gotHash, rc)
		rc.Close()
		if err != nil || m != bigSize {
			t.Fatalf("reading back 64 MiB = %d, %v", m, err)
		}
		if !bytes.Equal(gotHash.Sum(nil), wantHash.Sum(nil)) {
			t.Errorf("64 MiB read back differs from what was written (sha256)")
		}
		// Bounded reads of the big file.
		want := make([]byte, 4096)
		fillGen(want, 0)
		if got, err := s.ReadPrefix(t.Context(), "big", 4096); err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadPrefix(big, 4096): %v %s", err, diff(got, want))
		}
		const off = bigSize/2 + 12345
		fillGen(want, off)
		if got, err := readAll(s.OpenRange(t.Context(), "big", off, 4096)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("OpenRange(big, %d, 4096): %v %s", off, err, diff(got, want))
		}
	})
}

func testLock(t *testing.T, nb newStorage) {
	probe := nb(t)
	if noLocks(probe) {
		u, err := probe.Lock(t.Context(), "lk", false)
		if u != nil {
			u.Unlock()
		}
		if !errors.Is(err, backend.ErrNotSupported) {
			t.Errorf("Lock on a backend without locks = %v, want ErrNotSupported", err)
		}
		t.Skip("backend has no locks")
	}
	lock := func(t *testing.T, s backend.Storage, ctx context.Context, name string, wait bool) backend.Unlocker {
		t.Helper()
		u, err := s.Lock(ctx, name, wait)
		if err != nil {
			t.Fatalf("Lock(%q, wait=%v): %v", name, wait, err)
		}
		return u
	}
	t.Run("exclusive", func(t *testing.T) {
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		defer u.Unlock()
		u2, err := s.Lock(t.Context(), "locks/a", false)
		if u2 != nil {
			u2.Unlock()
		}
		wantErr(t, "second Lock(locks/a)", err, backend.ErrLocked, "locks/a")
	})
	t.Run("names-independent", func(t *testing.T) {
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		defer u.Unlock()
		lock(t, s, t.Context(), "locks/b", false).Unlock()
	})
	t.Run("unlock-releases", func(t *testing.T) {
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		if err := u.Unlock(); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		u2 := lock(t, s, t.Context(), "locks/a", false)
		if err := u.Unlock(); err != nil {
			t.Errorf("second Unlock: %v", err)
		}
		// The stale Unlocker must not have released the new holder.
		u3, err := s.Lock(t.Context(), "locks/a", false)
		if u3 != nil {
			u3.Unlock()
		}
		wantErr(t, "Lock after a stale second Unlock", err, backend.ErrLocked, "locks/a")
		u2.Unlock()
		lock(t, s, t.Context(), "locks/a", true).Unlock()
	})
	t.Run("wait-honours-ctx", func(t *testing.T) {
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		defer u.Unlock()
		parent, cancel := context.WithCancel(t.Context())
		ctx := newWatchCtx(parent)
		res := make(chan error, 1)
		go func() {
			u2, err := s.Lock(ctx, "locks/a", true)
			if u2 != nil {
				u2.Unlock()
			}
			res <- err
		}()
		select {
		case <-ctx.waiting:
		case err := <-res:
			t.Fatalf("Lock(wait) of a held lock returned %v without waiting", err)
		}
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting Lock after cancel = %v, want context.Canceled", err)
		}
	})
	t.Run("waiter-acquires", func(t *testing.T) {
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		ctx := newWatchCtx(t.Context())
		type result struct {
			u   backend.Unlocker
			err error
		}
		res := make(chan result, 1)
		go func() {
			u2, err := s.Lock(ctx, "locks/a", true)
			res <- result{u2, err}
		}()
		select {
		case <-ctx.waiting:
		case r := <-res:
			if r.u != nil {
				r.u.Unlock()
			}
			t.Fatalf("Lock(wait) of a held lock returned %v without waiting", r.err)
		}
		if err := u.Unlock(); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("waiting Lock after Unlock: %v", r.err)
		}
		// Now the waiter holds it.
		u3, err := s.Lock(t.Context(), "locks/a", false)
		if u3 != nil {
			u3.Unlock()
		}
		wantErr(t, "Lock held by the waiter", err, backend.ErrLocked, "locks/a")
		if err := r.u.Unlock(); err != nil {
			t.Errorf("Unlock by the waiter: %v", err)
		}
		lock(t, s, t.Context(), "locks/a", false).Unlock()
	})
	t.Run("file-ops-unaffected", func(t *testing.T) {
		// A lock does not stop the holder or others using other files.
		s := nb(t)
		u := lock(t, s, t.Context(), "locks/a", false)
		defer u.Unlock()
		mustWrite(t, s, "locks/data", []byte("x"))
		wantContent(t, s, "locks/data", []byte("x"))
	})
}

func testClose(t *testing.T, nb newStorage) {
	t.Run("twice", func(t *testing.T) {
		s := nb(t)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	t.Run("then-calls", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "f", []byte("old"))
		mustEnsureDir(t, s, "d")
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for _, op := range ctxOps() {
			t.Run(op.name, func(t *testing.T) {
				err := op.call(t.Context(), s)
				if !errors.Is(err, backend.ErrClosed) {
					t.Errorf("%s after Close = %v, want ErrClosed", op.name, err)
				}
			})
		}
		t.Run("Lock", func(t *testing.T) {
			u, err := s.Lock(t.Context(), "lk", false)
			if u != nil {
				u.Unlock()
			}
			if !errors.Is(err, backend.ErrClosed) && !(noLocks(s) && errors.Is(err, backend.ErrNotSupported)) {
				t.Errorf("Lock after Close = %v, want ErrClosed", err)
			}
		})
	})
}

func testLifecycle(t *testing.T, nb newStorage) {
	t.Run("remove-all", func(t *testing.T) {
		s := nb(t)
		mustWrite(t, s, "a/b/c", []byte("x"))
		mustWrite(t, s, "a/d", nil)
		mustEnsureDir(t, s, "e/f")
		w := openWriter(t, s, "log", backend.WriterOptions{})
		mustWriteTo(t, w, []byte("x"))
		mustSync(t, w)
		mustWriteTo(t, w, []byte("y"))
		mustClose(t, w)
		if err := backend.RemoveAll(t.Context(), s, "."); err != nil {
			t.Fatalf("RemoveAll: %v", err)
		}
		wantTree(t, s)
		// And the store works as new.
		mustWrite(t, s, "a", []byte("again"))
		wantTree(t, s, "a")
	})
	t.Run("fresh-is-empty", func(t *testing.T) {
		s := nb(t)
		wantTree(t, s)
	})
	t.Run("capabilities-stable", func(t *testing.T) {
		s := nb(t)
		c := s.Capabilities()
		mustWrite(t, s, "f", nil)
		if c2 := s.Capabilities(); c2 != c {
			t.Errorf("Capabilities changed: %+v then %+v", c, c2)
		}
		if c.Crash {
			if _, ok := s.(backend.Crasher); !ok {
				t.Errorf("Capabilities.Crash is set but the backend is no backend.Crasher")
			}
		}
		if c.MaxNameBytes < 0 || c.MaxElemBytes < 0 {
			t.Errorf("negative name limits: %+v", c)
		}
	})
}

// testCrossCheck builds a tree and checks, in the manner of fstest.TestFS,
// that Walk, List, Stat, ReadFile, Open, OpenRange and ReadPrefix agree.
func testCrossCheck(t *testing.T, nb newStorage) {
	s := nb(t)
	files := map[string][]byte{
		"a.txt":          []byte("alpha"),
		"dir/b":          pattern(3000, 1),
		"dir/empty":      nil,
		"dir/sub/c":      pattern(70000, 2),
		"dir/sub/deep/d": []byte("d"),
		"z/.hidden":      []byte("h"),
	}
	for name, data := range files {
		mustWrite(t, s, name, data)
	}
	w := openWriter(t, s, "dir/log", backend.WriterOptions{})
	mustWriteTo(t, w, []byte("one;"))
	mustSync(t, w)
	mustWriteTo(t, w, []byte("two;"))
	mustClose(t, w)
	files["dir/log"] = []byte("one;two;")
	mustEnsureDir(t, s, "emptydir")

	seen := map[string]bool{}
	for info, err := range backend.Walk(t.Context(), s, ".") {
		if err != nil {
			t.Fatalf("Walk: %v", err)
		}
		if seen[info.Name] {
			t.Errorf("Walk yields %q twice", info.Name)
		}
		seen[info.Name] = true
		st, err := s.Stat(t.Context(), info.Name)
		if err != nil {
			t.Errorf("Stat(%q) of a walked name: %v", info.Name, err)
			continue
		}
		if st.Name != info.Name || st.IsDir != info.IsDir || st.Size != info.Size ||
			(!st.IsDir && !sameSecond(st.ModTime, info.ModTime)) {
			t.Errorf("List says %+v, Stat says %+v", info, st)
		}
		if info.IsDir {
			infos := mustList(t, s, info.Name)
			names := infoNames(infos)
			if !slices.IsSorted(names) {
				t.Errorf("List(%q) not sorted: %q", info.Name, names)
			}
			for _, c := range infos {
				if backend.Dir(c.Name) != info.Name {
					t.Errorf("List(%q) yields %q, not a child", info.Name, c.Name)
				}
			}
			if _, err := s.ReadFile(t.Context(), info.Name); err == nil {
				t.Errorf("ReadFile(%q) of a directory succeeded", info.Name)
			}
			continue
		}
		want, ok := files[info.Name]
		if !ok {
			t.Errorf("Walk yields %q, which was never written", info.Name)
			continue
		}
		if info.Size != int64(len(want)) {
			t.Errorf("%q listed with size %d, want %d", info.Name, info.Size, len(want))
		}
		checkAllReads(t, s, info.Name, want)
	}
	for name := range files {
		if !seen[name] {
			t.Errorf("Walk misses %q", name)
		}
		for _, p := range backend.Parents(name) {
			if !seen[p] {
				t.Errorf("Walk misses the directory %q", p)
			}
		}
	}
	if !seen["emptydir"] {
		t.Errorf("Walk misses the empty directory made by EnsureDir")
	}
}

// testSubIsolation checks sub.New against the store it is cut from:
// names map under the prefix, nothing leaks either way, errors name the
// sub-relative path.
func testSubIsolation(t *testing.T, nb newStorage) {
	s := nb(t)
	mustWrite(t, s, "top", []byte("top"))
	mustWrite(t, s, "p/q-sibling", []byte("sibling"))
	sb, err := sub.New(s, "p/q")
	if err != nil {
		t.Fatalf("Sub: %v", err)
	}
	mustWrite(t, sb, "f", []byte("in sub"))
	mustWrite(t, sb, "d/g", []byte("deep"))
	wantContent(t, s, "p/q/f", []byte("in sub"))
	wantContent(t, s, "p/q/d/g", []byte("deep"))
	wantTree(t, sb, "d", "d/g", "f")
	info, err := sb.Stat(t.Context(), "d/g")
	if err != nil || info.Name != "d/g" {
		t.Errorf("Sub Stat(d/g) = %+v, %v", info, err)
	}
	_, err = sb.ReadFile(t.Context(), "nope")
	wantErr(t, "Sub ReadFile(nope)", err, fs.ErrNotExist, "nope")
	_, err = sb.ReadFile(t.Context(), "../top")
	wantErr(t, "Sub ReadFile(../top)", err, backend.ErrInvalidPath, "../top")
	if _, err := sub.New(s, "../x"); !errors.Is(err, backend.ErrInvalidPath) {
		t.Errorf("Sub(../x) = %v, want ErrInvalidPath", err)
	}
	if err := sb.Close(); err != nil {
		t.Errorf("Sub Close: %v", err)
	}
	wantContent(t, s, "top", []byte("top"))
}

// readWay reads name whole in one of three ways: ReadFile (0), Open (1),
// or ReadPrefix of prefix bytes (any other way).
func readWay(ctx context.Context, s backend.Storage, way int, name string, prefix int) ([]byte, error) {
	switch way {
	case 0:
		return s.ReadFile(ctx, name)
	case 1:
		return readAll(s.Open(ctx, name))
	}
	return s.ReadPrefix(ctx, name, prefix)
}
