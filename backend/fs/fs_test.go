package fs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/trovekit/trove/backend"
	trovefs "github.com/trovekit/trove/backend/fs"
)

func TestCapabilities(t *testing.T) {
	osS := openOS(t, t.TempDir())
	want := backend.Capabilities{
		AtomicRename: true, NativeAppend: true, Locks: true, LocalLocks: true,
		Durable: true, Directories: true, CrossProcess: true,
		MaxNameBytes: backend.MaxNameBytes, MaxElemBytes: backend.MaxElemBytes,
	}
	if got := osS.Capabilities(); got != want {
		t.Errorf("os: %+v, want %+v", got, want)
	}
	// An *afero.OsFs gets the OS treatment too.
	viaAfero, err := trovefs.New(afero.NewOsFs(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer viaAfero.Close()
	if got := viaAfero.Capabilities(); got != want {
		t.Errorf("afero OsFs: %+v, want %+v", got, want)
	}
	mem := openMem(t, afero.NewMemMapFs(), "/r")
	want.Locks, want.Durable, want.CrossProcess = false, false, false
	if got := mem.Capabilities(); got != want {
		t.Errorf("mem: %+v, want %+v", got, want)
	}
}

func TestNewRootIsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	fsys := afero.NewOsFs()
	if err := afero.WriteFile(fsys, file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := trovefs.NewOS(file); !errors.Is(err, backend.ErrNotDir) {
		t.Errorf("NewOS on a file: %v, want ErrNotDir", err)
	}
	mem := afero.NewMemMapFs()
	if err := afero.WriteFile(mem, "/f", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := trovefs.New(mem, "/f"); !errors.Is(err, backend.ErrNotDir) {
		t.Errorf("New on a mem file: %v, want ErrNotDir", err)
	}
	if _, err := trovefs.NewOS(""); !errors.Is(err, backend.ErrInvalidPath) {
		t.Errorf("NewOS(\"\"): %v, want ErrInvalidPath", err)
	}
}

func TestInvalidNamesBeforeIO(t *testing.T) {
	ctx := context.Background()
	bad := []string{"", ".", "..", "/abs", "a/../b", "a//b", "a\\b", "a\x00b", ".~tmp/x", "x/.~y", "a/"}
	each(t, func(t *testing.T, s *trovefs.Storage) {
		for _, name := range bad {
			_, err := s.ReadFile(ctx, name)
			wantErr(t, err, "read", name, backend.ErrInvalidPath)
			wantErr(t, s.WriteFile(ctx, name, nil), "write", name, backend.ErrInvalidPath)
			_, err = s.OpenWriter(ctx, name, backend.WriterOptions{})
			wantErr(t, err, "open", name, backend.ErrInvalidPath)
			wantErr(t, s.Unlink(ctx, name), "unlink", name, backend.ErrInvalidPath)
			wantErr(t, s.Rename(ctx, name, "ok"), "rename", name, backend.ErrInvalidPath)
			wantErr(t, s.Rename(ctx, "ok", name), "rename", name, backend.ErrInvalidPath)
			_, err = s.Lock(ctx, name, false)
			wantErr(t, err, "lock", name, backend.ErrInvalidPath)
			if name == "." {
				continue // a valid directory
			}
			_, err = s.Stat(ctx, name)
			wantErr(t, err, "stat", name, backend.ErrInvalidPath)
			wantErr(t, s.EnsureDir(ctx, name), "mkdir", name, backend.ErrInvalidPath)
			for _, err := range s.List(ctx, name) {
				wantErr(t, err, "list", name, backend.ErrInvalidPath)
			}
		}
		if got := list(t, s, "."); len(got) != 0 {
			t.Errorf("hostile names left %v", got)
		}
	})
}

func TestMissingAndKinds(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		_, err := s.ReadFile(ctx, "nope")
		wantErr(t, err, "read", "nope", iofs.ErrNotExist)
		_, err = s.Stat(ctx, "a/b")
		wantErr(t, err, "stat", "a/b", iofs.ErrNotExist)
		wantErr(t, s.Unlink(ctx, "nope"), "unlink", "nope", iofs.ErrNotExist)
		wantErr(t, s.Rename(ctx, "nope", "x"), "rename", "nope", iofs.ErrNotExist)
		n := 0
		for _, err := range s.List(ctx, "nodir") {
			wantErr(t, err, "list", "nodir", iofs.ErrNotExist)
			n++
		}
		if n != 1 {
			t.Errorf("List of a missing dir yielded %d items, want one error", n)
		}

		mustWrite(t, s, "d/f", "x")
		for _, err := range s.List(ctx, "d/f") {
			wantErr(t, err, "list", "d/f", backend.ErrNotDir)
		}
		_, err = s.Stat(ctx, "d/f/g") // under a file: missing
		wantErr(t, err, "stat", "d/f/g", iofs.ErrNotExist)
		wantErr(t, s.WriteFile(ctx, "d/f/g", nil), "write", "d/f/g", backend.ErrNotDir)
		wantErr(t, s.EnsureDir(ctx, "d/f"), "mkdir", "d/f", backend.ErrNotDir)
		_, err = s.ReadFile(ctx, "d")
		wantErr(t, err, "read", "d", backend.ErrIsDir)
		wantErr(t, s.WriteFile(ctx, "d", nil), "write", "d", backend.ErrIsDir)
		_, err = s.OpenWriter(ctx, "d", backend.WriterOptions{})
		wantErr(t, err, "open", "d", backend.ErrIsDir)
		wantErr(t, s.Rename(ctx, "d", "e"), "rename", "d", backend.ErrIsDir)
		wantErr(t, s.Rename(ctx, "d/f", "d"), "rename", "d", backend.ErrIsDir)
		wantErr(t, s.Unlink(ctx, "d"), "unlink", "d", backend.ErrNotEmpty)
		if got := mustRead(t, s, "d/f"); got != "x" {
			t.Errorf("d/f = %q after refused operations", got)
		}

		in, err := s.Stat(ctx, ".")
		if err != nil || !in.IsDir || in.Name != "." || in.Size != 0 {
			t.Errorf("Stat(.) = %+v, %v", in, err)
		}
		if err := s.Unlink(ctx, "d/f"); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlink(ctx, "d"); err != nil {
			t.Fatalf("Unlink of an empty dir: %v", err)
		}
	})
}

func TestListAndStat(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		mustWrite(t, s, "d/b", "bb")
		mustWrite(t, s, "d/a", "a")
		mustWrite(t, s, "d/c/x", "")
		mustWrite(t, s, "d/.hidden", "h")
		mustWrite(t, s, "d/ü %", "u")
		var got []backend.Info
		for in, err := range s.List(ctx, "d") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, in)
		}
		names := make([]string, len(got))
		for i, in := range got {
			names[i] = in.Name
			st, err := s.Stat(ctx, in.Name)
			if err != nil || st.Size != in.Size || st.IsDir != in.IsDir || !st.ModTime.Equal(in.ModTime) {
				t.Errorf("Stat(%q) = %+v, %v; List said %+v", in.Name, st, err, in)
			}
		}
		want := []string{"d/.hidden", "d/a", "d/b", "d/c", "d/ü %"}
		if !slices.Equal(names, want) {
			t.Errorf("List = %v, want %v", names, want)
		}
		if got[2].Size != 2 || got[3].Size != 0 || !got[3].IsDir {
			t.Errorf("infos %+v", got)
		}
		// Stopping early and a cancelled ctx.
		for range s.List(ctx, "d") {
			break
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		n := 0
		for _, err := range s.List(cctx, "d") {
			n++
			if err != nil {
				wantErr(t, err, "list", "d", context.Canceled)
				break
			}
			cancel()
		}
		if n != 2 {
			t.Errorf("cancelled List yielded %d items, want an item then the error", n)
		}
	})
}

func TestReadRanges(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		mustWrite(t, s, "f", "0123456789")
		cases := []struct {
			off, n int64
			want   string
		}{{0, -1, "0123456789"}, {3, 4, "3456"}, {8, 10, "89"}, {10, 1, ""}, {20, -1, ""}, {5, 0, ""}}
		for _, c := range cases {
			rc, err := s.OpenRange(ctx, "f", c.off, c.n)
			if err != nil {
				t.Fatalf("OpenRange(%d, %d): %v", c.off, c.n, err)
			}
			b, err := io.ReadAll(rc)
			if err != nil || string(b) != c.want {
				t.Errorf("OpenRange(%d, %d) = %q, %v; want %q", c.off, c.n, b, err, c.want)
			}
			if err := rc.Close(); err != nil {
				t.Error(err)
			}
			if err := rc.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		}
		_, err := s.OpenRange(ctx, "f", -1, 2)
		wantErr(t, err, "open", "f", backend.ErrInvalidRange)
		_, err = s.ReadPrefix(ctx, "f", -1)
		wantErr(t, err, "read", "f", backend.ErrInvalidRange)
		for n, want := range map[int]string{0: "", 4: "0123", 10: "0123456789", 99: "0123456789"} {
			b, err := s.ReadPrefix(ctx, "f", n)
			if err != nil || string(b) != want {
				t.Errorf("ReadPrefix(%d) = %q, %v", n, b, err)
			}
		}
		_, err = s.ReadPrefix(ctx, "missing", 3)
		wantErr(t, err, "read", "missing", iofs.ErrNotExist)

		// A stream stops once its ctx is done.
		cctx, cancel := context.WithCancel(ctx)
		rc, err := s.Open(cctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		cancel()
		_, err = rc.Read(make([]byte, 4))
		wantErr(t, err, "read", "f", context.Canceled)
	})
}

// TestReadsReadOnlyWhatIsAsked counts the bytes read from the Fs.
func TestReadsReadOnlyWhatIsAsked(t *testing.T) {
	ctx := context.Background()
	cfs := newCountingFs()
	s := openMem(t, cfs, "/r")
	big := bytes.Repeat([]byte("x"), 1<<20)
	if err := s.WriteFile(ctx, "big", big); err != nil {
		t.Fatal(err)
	}
	cfs.reset()
	if b, err := s.ReadPrefix(ctx, "big", 100); err != nil || len(b) != 100 {
		t.Fatalf("ReadPrefix: %d bytes, %v", len(b), err)
	}
	if read, _ := cfs.snapshot(); read != 100 {
		t.Errorf("ReadPrefix(100) read %d bytes", read)
	}
	cfs.reset()
	rc, err := s.OpenRange(ctx, "big", 1<<19, 10)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rc); err != nil || len(b) != 10 {
		t.Fatalf("OpenRange: %d bytes, %v", len(b), err)
	}
	rc.Close()
	if read, _ := cfs.snapshot(); read != 10 {
		t.Errorf("OpenRange(.., 10) read %d bytes", read)
	}
}

// TestSyncCount checks there is no fsync beyond what durability needs: a
// WriteFile syncs its temp and the target directory; a new writer syncs the
// directory on its first Sync only; Stage and Commit split WriteFile's two.
func TestSyncCount(t *testing.T) {
	ctx := context.Background()
	cfs := newCountingFs()
	s := openMem(t, cfs, "/r")
	if err := s.EnsureDir(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	cfs.reset()
	mustWrite(t, s, "d/f", "data")
	_, syncs := cfs.snapshot()
	tempSyncs, dirSyncs, other := countSyncs(syncs, "/r/d")
	if tempSyncs != 1 || dirSyncs != 1 || other != 0 {
		t.Errorf("WriteFile synced %v, want the temp and /r/d once each", syncs)
	}

	cfs.reset()
	w, err := s.OpenWriter(ctx, "d/log", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, syncs = cfs.snapshot()
	if syncs["/r/d/log"] != 3 || syncs["/r/d"] != 1 || len(syncs) != 2 {
		t.Errorf("three Syncs of a new file synced %v", syncs)
	}

	// Stage syncs the temp, Commit the directory: files staged together
	// are synced together.
	cfs.reset()
	st, err := s.Stage(ctx, "d/s", []byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	_, syncs = cfs.snapshot()
	if temps, dir, other := countSyncs(syncs, "/r/d"); temps != 1 || dir != 0 || other != 0 {
		t.Errorf("Stage synced %v, want its temp once", syncs)
	}
	cfs.reset()
	if err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, syncs = cfs.snapshot()
	if temps, dir, other := countSyncs(syncs, "/r/d"); temps != 0 || dir != 1 || other != 0 {
		t.Errorf("Commit synced %v, want /r/d once", syncs)
	}
}

func TestWriter(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		open := func(name string, opt backend.WriterOptions) backend.Writer {
			t.Helper()
			w, err := s.OpenWriter(ctx, name, opt)
			if err != nil {
				t.Fatalf("OpenWriter(%q, %+v): %v", name, opt, err)
			}
			return w
		}
		w := open("a/log", backend.WriterOptions{})
		w.Write([]byte("one\n"))
		if got := mustRead(t, s, "a/log"); got != "one\n" {
			t.Errorf("before Sync a reader sees %q", got)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		_, err := w.Write([]byte("x"))
		wantErr(t, err, "write", "a/log", iofs.ErrClosed)
		wantErr(t, w.Sync(), "sync", "a/log", iofs.ErrClosed)

		// Append to what is there, from two writers in turn.
		w1 := open("a/log", backend.WriterOptions{})
		w2 := open("a/log", backend.WriterOptions{})
		w1.Write([]byte("two\n"))
		w2.Write([]byte("three\n"))
		w1.Write([]byte("four\n"))
		w1.Close()
		w2.Close()
		if got := mustRead(t, s, "a/log"); got != "one\ntwo\nthree\nfour\n" {
			t.Errorf("appended: %q", got)
		}

		_, err = s.OpenWriter(ctx, "a/log", backend.WriterOptions{Exclusive: true})
		wantErr(t, err, "open", "a/log", iofs.ErrExist)
		w = open("a/new", backend.WriterOptions{Exclusive: true})
		w.Write([]byte("fresh"))
		w.Close()
		if got := mustRead(t, s, "a/new"); got != "fresh" {
			t.Errorf("exclusive: %q", got)
		}

		w = open("a/log", backend.WriterOptions{Truncate: true})
		w.Write([]byte("over"))
		w.Close()
		if got := mustRead(t, s, "a/log"); got != "over" {
			t.Errorf("truncated: %q", got)
		}
		w = open("a/empty", backend.WriterOptions{Truncate: true})
		w.Close()
		if in, err := s.Stat(ctx, "a/empty"); err != nil || in.Size != 0 {
			t.Errorf("open and close: %+v, %v", in, err)
		}

		// Overwrite writes over the old bytes and cuts the file at what
		// was written, shorter or longer than before, and makes a new one.
		over := backend.WriterOptions{Truncate: true, Overwrite: true}
		mustWrite(t, s, "a/cache", "0123456789")
		for _, c := range []struct{ parts []string }{{[]string{"ab", "c"}}, {[]string{"0123456789", "abcdef"}}, {nil}} {
			w = open("a/cache", over)
			for _, p := range c.parts {
				if _, err := w.Write([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if got, want := mustRead(t, s, "a/cache"), strings.Join(c.parts, ""); got != want {
				t.Errorf("overwritten with %q, synced: %q", want, got)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, want := mustRead(t, s, "a/cache"), strings.Join(c.parts, ""); got != want {
				t.Errorf("overwritten with %q: %q", want, got)
			}
		}
		w = open("a/newcache", over)
		w.Write([]byte("new"))
		w.Close()
		if got := mustRead(t, s, "a/newcache"); got != "new" {
			t.Errorf("overwrite of a missing file: %q", got)
		}
	})
}

func TestAtomicWriteFailures(t *testing.T) {
	ctx := context.Background()
	eachRaw(t, func(t *testing.T, s *trovefs.Storage, fsys afero.Fs) {
		mustWrite(t, s, "f", "old")
		boom := errors.New("boom")
		n, err := s.WriteFrom(ctx, "f", &errReader{data: []byte("partial"), err: boom})
		wantErr(t, err, "write", "f", boom)
		if n != int64(len("partial")) {
			t.Errorf("WriteFrom reported %d bytes", n)
		}
		cctx, cancel := context.WithCancel(ctx)
		calls := 0
		_, err = s.WriteFrom(cctx, "f", &errReader{data: bytes.Repeat([]byte("y"), 1<<20), err: io.EOF, before: func() {
			if calls++; calls == 2 {
				cancel()
			}
		}})
		wantErr(t, err, "write", "f", context.Canceled)
		cancel()
		if err := s.WriteFile(cctx, "f", []byte("new")); !errors.Is(err, context.Canceled) {
			t.Errorf("WriteFile with a done ctx: %v", err)
		}
		if got := mustRead(t, s, "f"); got != "old" {
			t.Errorf("after failed writes f = %q", got)
		}
		assertNoTemps(t, s, fsys)

		// And a good one, from a stream of unknown size.
		n, err = s.WriteFrom(ctx, "g/h", io.MultiReader(strings.NewReader("a"), strings.NewReader("b")))
		if err != nil || n != 2 || mustRead(t, s, "g/h") != "ab" {
			t.Errorf("WriteFrom = %d, %v", n, err)
		}
		assertNoTemps(t, s, fsys)
	})
}

// assertNoTemps looks into the reserved temp dir behind the Storage's back.
func assertNoTemps(t *testing.T, s *trovefs.Storage, fsys afero.Fs) {
	t.Helper()
	infos, err := afero.ReadDir(fsys, filepath.Join(s.Root(), ".~tmp"))
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Errorf("%d temp files left", len(infos))
	}
}

func TestTempCleanup(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys afero.Fs
		root string
		open func(t *testing.T, fsys afero.Fs, root string) *trovefs.Storage
	}{
		{"os", afero.NewOsFs(), t.TempDir(), func(t *testing.T, fsys afero.Fs, root string) *trovefs.Storage {
			return openOS(t, root)
		}},
		{"mem", afero.NewMemMapFs(), "/root", func(t *testing.T, fsys afero.Fs, root string) *trovefs.Storage {
			return openMem(t, fsys, root)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := filepath.Join(tc.root, ".~tmp")
			if err := tc.fsys.MkdirAll(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"stale", "fresh"} {
				if err := afero.WriteFile(tc.fsys, filepath.Join(tmp, name), []byte(name), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			old := time.Now().Add(-2 * time.Hour)
			if err := tc.fsys.Chtimes(filepath.Join(tmp, "stale"), old, old); err != nil {
				t.Fatal(err)
			}
			s := tc.open(t, tc.fsys, tc.root)
			if ok, _ := afero.Exists(tc.fsys, filepath.Join(tmp, "stale")); ok {
				t.Error("stale temp file survived opening")
			}
			if ok, _ := afero.Exists(tc.fsys, filepath.Join(tmp, "fresh")); !ok {
				t.Error("fresh temp file (maybe a live writer's) was removed")
			}
			mustWrite(t, s, "f", "x")
			if got := list(t, s, "."); !slices.Equal(got, []string{"f"}) {
				t.Errorf("List(.) = %v, want only f", got)
			}
			_, err := s.WriteFrom(context.Background(), "f", &errReader{err: errors.New("boom")})
			if err == nil {
				t.Fatal("failed WriteFrom succeeded")
			}
			infos, err := afero.ReadDir(tc.fsys, tmp)
			if err != nil || len(infos) != 1 || infos[0].Name() != "fresh" {
				t.Errorf("temp dir holds %v, %v; want only fresh", infos, err)
			}
		})
	}
}

func TestRename(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		mustWrite(t, s, "a", "A")
		mustWrite(t, s, "b", "B")
		if err := s.Rename(ctx, "a", "b"); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "b"); got != "A" {
			t.Errorf("b = %q", got)
		}
		if err := s.Rename(ctx, "b", "x/y/z"); err != nil {
			t.Fatal(err)
		}
		if got := list(t, s, "."); !slices.Equal(got, []string{"x"}) {
			t.Errorf("List = %v", got)
		}
		if err := s.Rename(ctx, "x/y/z", "x/y/z"); err != nil {
			t.Errorf("rename to itself: %v", err)
		}
		if got := mustRead(t, s, "x/y/z"); got != "A" {
			t.Errorf("x/y/z = %q", got)
		}
	})
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		mustWrite(t, s, "f", "x")
		l, err := s.Lock(ctx, "l", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		_, err = s.ReadFile(ctx, "f")
		wantErr(t, err, "read", "f", backend.ErrClosed)
		wantErr(t, s.WriteFile(ctx, "f", nil), "write", "f", backend.ErrClosed)
		_, err = s.Lock(ctx, "l", false)
		wantErr(t, err, "lock", "l", backend.ErrClosed)
		for _, err := range s.List(ctx, ".") {
			wantErr(t, err, "list", ".", backend.ErrClosed)
		}
		if err := l.Unlock(); err != nil {
			t.Errorf("Unlock after Close: %v", err)
		}
	})
}

func TestConcurrentWriteFile(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		const n = 8
		errs := make(chan error, n)
		for i := range n {
			go func() {
				errs <- s.WriteFile(ctx, "same", bytes.Repeat([]byte{byte('a' + i)}, 4096))
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		got := mustRead(t, s, "same")
		if len(got) != 4096 || strings.Count(got, got[:1]) != 4096 {
			t.Errorf("torn content: %d bytes starting %q", len(got), got[:8])
		}
	})
}

// countSyncs sorts the syncs a countingFs saw: of temp files, of dir (a
// slash path), of anything else.
func countSyncs(syncs map[string]int, dir string) (temps, inDir, other int) {
	for name, n := range syncs {
		switch {
		case strings.Contains(name, ".~tmp"):
			temps += n
		case name == filepath.FromSlash(dir):
			inDir += n
		default:
			other += n
		}
	}
	return temps, inDir, other
}
