//go:build unix

package fs_test

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trovekit/trove/backend"
)

// TestPermissions runs with umask 0 so the modes checked are the ones the
// backend asks for, not what a umask left of them.
func TestPermissions(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "new", "root")
	s := openOS(t, root)
	if err := s.EnsureDir(ctx, "e/f"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "a/b/file", "x")
	w, err := s.OpenWriter(ctx, "c/log", backend.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	l, err := s.Lock(ctx, "d/lock", false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	// An existing world-readable file becomes private when replaced.
	if err := os.WriteFile(filepath.Join(root, "shared"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "shared", "now private")

	want := map[string]os.FileMode{
		"..":       0o700 | os.ModeDir,
		".":        0o700 | os.ModeDir,
		"e":        0o700 | os.ModeDir,
		"e/f":      0o700 | os.ModeDir,
		"a":        0o700 | os.ModeDir,
		"a/b":      0o700 | os.ModeDir,
		"a/b/file": 0o600,
		"c":        0o700 | os.ModeDir,
		"c/log":    0o600,
		"d/lock":   0o600,
		"shared":   0o600,
		".~tmp":    0o700 | os.ModeDir,
	}
	for name, mode := range want {
		fi, err := os.Lstat(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), mode)
		}
	}
}

// escapeFixture is a root holding symlinks that lead out of it, next to an
// outside directory that must never change.
type escapeFixture struct {
	root, outside string
	before        map[string]string
}

func newEscapeFixture(t *testing.T) *escapeFixture {
	t.Helper()
	base := t.TempDir()
	f := &escapeFixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside, filepath.Join(f.root, "in")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.root, "in", "mine"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"dirlink":     "../outside",               // relative, to a dir outside
		"filelink":    "../outside/secret",        // relative, to a file outside
		"abslink":     filepath.Join(f.outside),   // absolute
		"in/deep":     "../../outside",            // from a subdirectory
		"inlink":      "in",                       // stays inside: allowed
		"in/minelink": "mine",                     // stays inside: allowed
		"dangling":    "../outside/not-yet-there", // out, to nothing yet
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(f.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.before = snapshot(t, f.outside)
	return f
}

// snapshot maps every path below dir to its mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += ":" + string(b)
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *escapeFixture) check(t *testing.T) {
	t.Helper()
	after := snapshot(t, f.outside)
	if len(after) != len(f.before) {
		t.Errorf("outside changed: %v, was %v", after, f.before)
	}
	for p, v := range f.before {
		if after[p] != v {
			t.Errorf("outside %s: %q, was %q", p, after[p], v)
		}
	}
	for _, l := range []string{"dirlink", "filelink", "abslink", "in/deep", "dangling"} {
		if fi, err := os.Lstat(filepath.Join(f.root, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("link %s gone or replaced: %v", l, err)
		}
	}
}

func TestSymlinkEscapeRefused(t *testing.T) {
	ctx := context.Background()
	f := newEscapeFixture(t)
	s := openOS(t, f.root)
	mustWrite(t, s, "plain", "plain")

	names := []string{
		"dirlink", "dirlink/secret", "dirlink/new", "dirlink/sub/new",
		"filelink", "abslink/secret", "in/deep/secret", "in/deep/new", "dangling",
	}
	for _, name := range names {
		refused := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, backend.ErrInvalidPath) {
				t.Errorf("%s %q: %v, want ErrInvalidPath", op, name, err)
			}
		}
		_, err := s.ReadFile(ctx, name)
		refused("read", err)
		_, err = s.Open(ctx, name)
		refused("open", err)
		_, err = s.OpenRange(ctx, name, 1, 2)
		refused("openrange", err)
		_, err = s.ReadPrefix(ctx, name, 3)
		refused("readprefix", err)
		_, err = s.Stat(ctx, name)
		refused("stat", err)
		for _, err := range s.List(ctx, name) {
			refused("list", err)
		}
		refused("write", s.WriteFile(ctx, name, []byte("pwned")))
		_, err = s.WriteFrom(ctx, name, strings.NewReader("pwned"))
		refused("writefrom", err)
		w, err := s.OpenWriter(ctx, name, backend.WriterOptions{})
		if err == nil {
			w.Write([]byte("pwned"))
			w.Close()
		}
		refused("openwriter", err)
		_, err = s.OpenWriter(ctx, name, backend.WriterOptions{Truncate: true})
		refused("openwriter truncate", err)
		refused("mkdir", s.EnsureDir(ctx, name))
		refused("unlink", s.Unlink(ctx, name))
		refused("rename from", s.Rename(ctx, name, "got"))
		refused("rename to", s.Rename(ctx, "plain", name))
		u, err := s.Lock(ctx, name, false)
		if err == nil {
			u.Unlock()
		}
		refused("lock", err)
	}
	f.check(t)
	if got := mustRead(t, s, "plain"); got != "plain" {
		t.Errorf("plain = %q", got)
	}
	// Listing the root leaves the escaping links out and follows the inner one.
	got := list(t, s, ".")
	want := []string{"in", "inlink", "plain"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("List(.) = %v, want %v", got, want)
	}
	if err := backend.RemoveAll(ctx, s, "in/deep"); !errors.Is(err, backend.ErrInvalidPath) {
		t.Errorf("RemoveAll through an escaping link: %v", err)
	}
	f.check(t)
}

// TestSymlinkInsideAllowed documents the policy: links that stay in the root
// are followed.
func TestSymlinkInsideAllowed(t *testing.T) {
	ctx := context.Background()
	f := newEscapeFixture(t)
	s := openOS(t, f.root)
	if got := mustRead(t, s, "inlink/mine"); got != "mine" {
		t.Errorf("inlink/mine = %q", got)
	}
	if got := mustRead(t, s, "in/minelink"); got != "mine" {
		t.Errorf("in/minelink = %q", got)
	}
	in, err := s.Stat(ctx, "inlink")
	if err != nil || !in.IsDir {
		t.Errorf("Stat(inlink) = %+v, %v", in, err)
	}
	mustWrite(t, s, "inlink/new", "new")
	if b, err := os.ReadFile(filepath.Join(f.root, "in", "new")); err != nil || string(b) != "new" {
		t.Errorf("in/new = %q, %v", b, err)
	}
	// Replacing an in-root link replaces the link, as rename(2) does.
	mustWrite(t, s, "in/minelink", "replaced")
	if got := mustRead(t, s, "in/mine"); got != "mine" {
		t.Errorf("in/mine = %q after replacing the link to it", got)
	}
	f.check(t)
}
