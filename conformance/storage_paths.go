package conformance

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
)

// hostilePaths must be refused with ErrInvalidPath by every method, before
// any I/O. "." is the root: valid where a directory is expected.
var hostilePaths = []struct{ name, path string }{
	{"empty", ""},
	{"dot", "."},
	{"dotdot", ".."},
	{"dotdot-prefix", "../x"},
	{"dotdot-inner", "a/../b"},
	{"dotdot-suffix", "a/.."},
	{"dot-inner", "a/./b"},
	{"absolute", "/etc/passwd"},
	{"absolute-root", "/"},
	{"empty-element", "a//b"},
	{"trailing-slash", "a/"},
	{"nul", "a\x00b"},
	{"backslash", `a\b`},
	{"backslash-dotdot", `..\x`},
	{"control-newline", "a\nb"},
	{"control-tab", "a\tb"},
	{"control-escape", "\x1b[31m"},
	{"control-del", "a\x7fb"},
	{"non-utf8", "a\xffb"},
	{"non-utf8-overlong-slash", "a\xc0\xafb"},
	{"element-too-long", strings.Repeat("e", backend.MaxElemBytes+1)},
	{"name-too-long", longName(backend.MaxNameBytes + 1)},
	{"reserved", ".~x"},
	{"reserved-bare", ".~"},
	{"reserved-inner", "a/.~tmp/b"},
}

// pathOp calls one method with name p and returns its error.
type pathOp struct {
	name string
	dir  bool // the argument is a directory: "." is valid
	call func(ctx context.Context, s backend.Storage, p string) error
}

// pathOps is every method that takes a name; renameSrc is a file that
// exists, so a Rename to a hostile name has something it could move.
func pathOps(renameSrc string) []pathOp {
	return []pathOp{
		{"EnsureDir", true, func(ctx context.Context, s backend.Storage, p string) error {
			return s.EnsureDir(ctx, p)
		}},
		{"Stat", true, func(ctx context.Context, s backend.Storage, p string) error {
			_, err := s.Stat(ctx, p)
			return err
		}},
		{"List", true, func(ctx context.Context, s backend.Storage, p string) error {
			n, err := firstErr(s.List(ctx, p))
			if err == nil {
				return errors.New("no error from List")
			}
			if n > 0 {
				return errors.New("entries from List before the error")
			}
			return err
		}},
		{"ReadFile", false, func(ctx context.Context, s backend.Storage, p string) error {
			_, err := s.ReadFile(ctx, p)
			return err
		}},
		{"Open", false, func(ctx context.Context, s backend.Storage, p string) error {
			rc, err := s.Open(ctx, p)
			if rc != nil {
				rc.Close()
			}
			return err
		}},
		{"OpenRange", false, func(ctx context.Context, s backend.Storage, p string) error {
			rc, err := s.OpenRange(ctx, p, 0, 1)
			if rc != nil {
				rc.Close()
			}
			return err
		}},
		{"ReadPrefix", false, func(ctx context.Context, s backend.Storage, p string) error {
			_, err := s.ReadPrefix(ctx, p, 1)
			return err
		}},
		{"WriteFile", false, func(ctx context.Context, s backend.Storage, p string) error {
			return s.WriteFile(ctx, p, []byte("x"))
		}},
		{"WriteFrom", false, func(ctx context.Context, s backend.Storage, p string) error {
			_, err := s.WriteFrom(ctx, p, strings.NewReader("x"))
			return err
		}},
		{"OpenWriter", false, func(ctx context.Context, s backend.Storage, p string) error {
			w, err := s.OpenWriter(ctx, p, backend.WriterOptions{})
			if w != nil {
				w.Close()
			}
			return err
		}},
		{"RenameFrom", false, func(ctx context.Context, s backend.Storage, p string) error {
			return s.Rename(ctx, p, "renamed")
		}},
		{"RenameTo", false, func(ctx context.Context, s backend.Storage, p string) error {
			return s.Rename(ctx, renameSrc, p)
		}},
		{"Unlink", false, func(ctx context.Context, s backend.Storage, p string) error {
			return s.Unlink(ctx, p)
		}},
		{"Lock", false, func(ctx context.Context, s backend.Storage, p string) error {
			u, err := s.Lock(ctx, p, false)
			if u != nil {
				u.Unlock()
			}
			return err
		}},
	}
}

func testPaths(t *testing.T, nb newStorage) {
	t.Run("hostile", func(t *testing.T) {
		// One backend for the whole table: every call must be refused,
		// so the store must still hold only the rename source at the end.
		s := nb(t)
		mustWrite(t, s, "ok", []byte("ok"))
		for _, hp := range hostilePaths {
			t.Run(hp.name, func(t *testing.T) {
				for _, op := range pathOps("ok") {
					if op.dir && hp.path == "." {
						continue
					}
					t.Run(op.name, func(t *testing.T) {
						err := op.call(t.Context(), s, hp.path)
						wantErr(t, op.name+"("+quote(hp.path)+")", err, backend.ErrInvalidPath, hp.path)
					})
				}
			})
		}
		t.Run("nothing-written", func(t *testing.T) {
			wantTree(t, s, "ok")
			wantContent(t, s, "ok", []byte("ok"))
		})
	})
	t.Run("limits", func(t *testing.T) {
		s := nb(t)
		maxName, maxElem := nameLimits(s)
		t.Run("element-at-limit", func(t *testing.T) {
			name := "e/" + strings.Repeat("e", maxElem)
			mustWrite(t, s, name, []byte(name))
			wantContent(t, s, name, []byte(name))
			wantList(t, s, "e", name)
		})
		t.Run("name-at-limit", func(t *testing.T) {
			name := longName(maxName)
			mustWrite(t, s, name, []byte("long"))
			wantContent(t, s, name, []byte("long"))
			wantList(t, s, backend.Dir(name), name)
			info, err := s.Stat(t.Context(), name)
			if err != nil || info.Name != name {
				t.Errorf("Stat(name of %d bytes) = %q, %v", len(name), info.Name, err)
			}
		})
	})
	t.Run("root", func(t *testing.T) {
		s := nb(t)
		if err := s.EnsureDir(t.Context(), "."); err != nil {
			t.Errorf("EnsureDir(.): %v", err)
		}
		wantList(t, s, ".")
		// Stat of the root may be refused, but if it answers it is a dir.
		if info, err := s.Stat(t.Context(), "."); err == nil && !info.IsDir {
			t.Errorf("Stat(.) = %+v, want a directory", info)
		}
	})
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return "\"" + strings.ToValidUTF8(s, "?") + "\""
}

// weirdNames are valid and must round-trip exactly.
var weirdNames = []string{
	"with space",
	" leading-space",
	"trailing-space ",
	"ünïcödé",
	"日本語.txt",
	"emoji-😀",
	"100%",
	"%41%2F%00",
	".hidden",
	"..leading-dots",
	"...",
	"#hash",
	"q?uery=1&x",
	"semi;colon",
	"quote'\"",
	"star*",
	"colon:x",
	"[brackets]{braces}",
	"tilde~",
	"~home",
	"a+b=c",
	"dot.",
	"$dollar",
	"back`tick",
	"!bang@at,comma",
	"<lt>|pipe",
	"a.~b",
	"x~",
}

func testNames(t *testing.T, nb newStorage) {
	t.Run("weird-files", func(t *testing.T) {
		s := nb(t)
		var want []string
		for _, n := range weirdNames {
			name := "w/" + n
			mustWrite(t, s, name, []byte(n))
			want = append(want, name)
		}
		slices.Sort(want)
		wantList(t, s, "w", want...)
		for _, n := range weirdNames {
			name := "w/" + n
			wantContent(t, s, name, []byte(n))
			info, err := s.Stat(t.Context(), name)
			if err != nil || info.Name != name || info.Size != int64(len(n)) {
				t.Errorf("Stat(%q) = %+v, %v", name, info, err)
			}
		}
	})
	t.Run("weird-dirs", func(t *testing.T) {
		s := nb(t)
		var want []string
		for _, n := range weirdNames {
			mustWrite(t, s, "d/"+n+"/f", []byte(n))
			want = append(want, "d/"+n)
		}
		slices.Sort(want)
		infos := mustList(t, s, "d")
		if got := infoNames(infos); !slices.Equal(got, want) {
			t.Errorf("List(d) = %q, want %q", got, want)
		}
		for _, info := range infos {
			if !info.IsDir {
				t.Errorf("List(d): %q not flagged IsDir", info.Name)
			}
		}
		for _, n := range weirdNames {
			wantList(t, s, "d/"+n, "d/"+n+"/f")
		}
	})
	t.Run("nested-weird", func(t *testing.T) {
		s := nb(t)
		name := "dir with space/ünï/#x/100%/.hidden"
		mustWrite(t, s, name, []byte("deep"))
		wantContent(t, s, name, []byte("deep"))
		wantTree(t, s, "dir with space", "dir with space/ünï", "dir with space/ünï/#x",
			"dir with space/ünï/#x/100%", name)
	})
	// Names next to what a backend might keep for itself (segments, temp
	// files) stay separate from a file that has such parts.
	t.Run("reserved-lookalikes", func(t *testing.T) {
		s := nb(t)
		w, err := s.OpenWriter(t.Context(), "x", backend.WriterOptions{})
		if err != nil {
			t.Fatalf("OpenWriter(x): %v", err)
		}
		var all []byte
		for i := range 3 {
			chunk := pattern(1000+i, uint64(i))
			all = append(all, chunk...)
			if _, err := w.Write(chunk); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if err := w.Sync(); err != nil {
				t.Fatalf("Sync: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		lookalikes := []string{"x.~seg/1", "x~", "x.~tmp", "x.seg/0", "x.tmp"}
		for _, n := range lookalikes {
			mustWrite(t, s, n, []byte(n))
		}
		wantContent(t, s, "x", all)
		for _, n := range lookalikes {
			wantContent(t, s, n, []byte(n))
		}
		wantTree(t, s, "x", "x.seg", "x.seg/0", "x.tmp", "x.~seg", "x.~seg/1", "x.~tmp", "x~")
		info, err := s.Stat(t.Context(), "x")
		if err != nil || info.Size != int64(len(all)) {
			t.Errorf("Stat(x) = %+v, %v; want size %d", info, err, len(all))
		}
	})
}

func testMissing(t *testing.T, nb newStorage) {
	s := nb(t)
	mustWrite(t, s, "present", []byte("here"))
	mustEnsureDir(t, s, "dir")
	names := map[string]string{
		"top":            "missing",
		"in-dir":         "dir/missing",
		"missing-parent": "nodir/missing",
	}
	ops := []struct {
		name string
		call func(ctx context.Context, p string) error
	}{
		{"Stat", func(ctx context.Context, p string) error {
			_, err := s.Stat(ctx, p)
			return err
		}},
		{"ReadFile", func(ctx context.Context, p string) error {
			_, err := s.ReadFile(ctx, p)
			return err
		}},
		{"Open", func(ctx context.Context, p string) error {
			rc, err := s.Open(ctx, p)
			if rc != nil {
				rc.Close()
			}
			return err
		}},
		{"OpenRange", func(ctx context.Context, p string) error {
			rc, err := s.OpenRange(ctx, p, 1, 2)
			if rc != nil {
				rc.Close()
			}
			return err
		}},
		{"ReadPrefix", func(ctx context.Context, p string) error {
			_, err := s.ReadPrefix(ctx, p, 10)
			return err
		}},
		{"List", func(ctx context.Context, p string) error {
			infos, err := list(t, ctx, s, p)
			if len(infos) > 0 {
				return errors.New("entries from List of a missing dir")
			}
			return err
		}},
		{"Unlink", func(ctx context.Context, p string) error {
			return s.Unlink(ctx, p)
		}},
		{"RenameFrom", func(ctx context.Context, p string) error {
			return s.Rename(ctx, p, "dest")
		}},
	}
	for _, op := range ops {
		for _, kind := range []string{"top", "in-dir", "missing-parent"} {
			p := names[kind]
			t.Run(op.name+"/"+kind, func(t *testing.T) {
				err := op.call(t.Context(), p)
				wantErr(t, op.name+"("+p+")", err, fs.ErrNotExist, p)
			})
		}
	}
	// A name below a file is missing (it may also say ErrNotDir).
	for _, op := range ops {
		t.Run(op.name+"/under-a-file", func(t *testing.T) {
			err := op.call(t.Context(), "present/x")
			wantErr(t, op.name+"(present/x)", err, fs.ErrNotExist, "present/x")
		})
	}
	t.Run("nothing-created", func(t *testing.T) {
		wantTree(t, s, "dir", "present")
		wantContent(t, s, "present", []byte("here"))
	})
}

// HostileUnreached calls every method of s with every hostile path and
// fails t if requests, which counts what reached the store under s (a file
// system call, an HTTP request), moved: refusal happens before any I/O.
func HostileUnreached(t *testing.T, s backend.Storage, requests func() int64) {
	t.Helper()
	before := requests()
	for _, hp := range hostilePaths {
		for _, op := range pathOps("ok") {
			if op.dir && hp.path == "." {
				continue
			}
			err := op.call(t.Context(), s, hp.path)
			if !errors.Is(err, backend.ErrInvalidPath) {
				t.Errorf("%s(%s) = %v, want ErrInvalidPath", op.name, quote(hp.path), err)
			}
			if n := requests() - before; n != 0 {
				t.Fatalf("%s(%s) reached the store under it: %d requests", op.name, quote(hp.path), n)
			}
		}
	}
}
