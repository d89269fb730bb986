package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestOpenFile(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("in"), 0o644))
	must(os.WriteFile(filepath.Join(out, "secret"), []byte("out"), 0o644))
	must(os.Symlink("b", filepath.Join(root, "a", "inlink")))
	must(os.Symlink(out, filepath.Join(root, "abslink")))
	must(os.Symlink("../../"+filepath.Base(out), filepath.Join(root, "a", "rellink")))

	r := Open(root)
	defer r.Close()
	read := func(name string, noSymlinks bool) (string, error) {
		fd, err := r.OpenFile(name, os.O_RDONLY, 0, noSymlinks)
		if err != nil {
			return "", err
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		buf := make([]byte, 16)
		n, err := f.Read(buf)
		return string(buf[:n]), err
	}
	if runtime.GOOS != "linux" {
		if _, err := read("a/b/f", false); !errors.Is(err, ErrUnsupported) || !Undecided(err) {
			t.Fatalf("no fast path here, got %v", err)
		}
		return
	}
	if got, err := read("a/b/f", true); err != nil || got != "in" {
		t.Fatalf("a/b/f = %q, %v", got, err)
	}
	// A symlink that stays inside is followed unless noSymlinks.
	if got, err := read("a/inlink/f", false); err != nil || got != "in" {
		t.Fatalf("a/inlink/f = %q, %v", got, err)
	}
	if _, err := read("a/inlink/f", true); err == nil || !Undecided(err) {
		t.Fatalf("a/inlink/f with noSymlinks: %v, want undecided", err)
	}
	// Out of the root: never opened, and left to os.Root to refuse.
	for _, name := range []string{"abslink/secret", "a/rellink/secret", "../" + filepath.Base(out) + "/secret"} {
		for _, ns := range []bool{false, true} {
			if got, err := read(name, ns); err == nil || !Undecided(err) {
				t.Errorf("%s (noSymlinks %v) = %q, %v: want refused, undecided", name, ns, got, err)
			}
		}
	}
	// A missing file is an answer, not a question for os.Root.
	_, err := read("a/nope", false)
	if !errors.Is(err, fs.ErrNotExist) || Undecided(err) {
		t.Errorf("a/nope: %v, want fs.ErrNotExist, decided", err)
	}
	// Creates: the mode is the one given, an existing name with O_EXCL
	// is an answer, and nothing is created out of the root.
	fd, err := r.OpenFile("a/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600, true)
	if err != nil {
		t.Fatalf("create a/new: %v", err)
	}
	os.NewFile(uintptr(fd), "a/new").Close()
	if fi, err := os.Stat(filepath.Join(root, "a", "new")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a/new: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if _, err := r.OpenFile("a/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600, true); !errors.Is(err, fs.ErrExist) || Undecided(err) {
		t.Errorf("create a/new again: %v, want fs.ErrExist, decided", err)
	}
	if _, err := r.OpenFile("abslink/new", os.O_WRONLY|os.O_CREATE, 0o600, false); err == nil || !Undecided(err) {
		t.Errorf("create abslink/new: %v, want refused, undecided", err)
	}
	if _, err := os.Stat(filepath.Join(out, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was created out of the root: %v", err)
	}
	r.Close()
	if _, err := read("a/b/f", false); !errors.Is(err, ErrUnsupported) {
		t.Errorf("after Close: %v, want ErrUnsupported", err)
	}
}
