package backend

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidPath checks that every name ValidPath accepts is one a backend
// can map under its root without leaving it: relative, clean, no "..", no
// backslash, NUL or control character, no reserved element, within the
// limits. Rejections wrap ErrInvalidPath.
func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"a", "a/b.jsonl", "../x", "a/../b", "/abs", "a//b", "a\\b", "a\x00b", ".~seg/x", "a/.~1", "",
		".", "..", "a/.", "ü/ñ", "\xff", strings.Repeat("a", 256), "a/" + strings.Repeat("b/", 600), "C:/x", "a\tb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidPath(name)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("ValidPath(%q) = %v, not ErrInvalidPath", name, err)
			}
			return
		}
		if !fs.ValidPath(name) || name == "." || !utf8.ValidString(name) || len(name) > MaxNameBytes {
			t.Fatalf("ValidPath accepted %q", name)
		}
		for _, el := range strings.Split(name, "/") {
			if el == "" || el == "." || el == ".." || strings.HasPrefix(el, ReservedPrefix) || len(el) > MaxElemBytes {
				t.Fatalf("ValidPath accepted %q (element %q)", name, el)
			}
		}
		if strings.ContainsAny(name, "\\\x00") {
			t.Fatalf("ValidPath accepted %q", name)
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("ValidPath accepted a control character in %q", name)
			}
		}
		root := "/store/root"
		full := filepath.Join(root, filepath.FromSlash(name))
		if rel, err := filepath.Rel(root, full); err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("%q leaves the root: %s", name, full)
		}
		if err := ValidDir(name); err != nil {
			t.Fatalf("ValidDir rejects %q that ValidPath accepts: %v", name, err)
		}
		if Join(Dir(name), Base(name)) != name && Dir(name) != "." {
			t.Fatalf("Join(Dir, Base) of %q = %q", name, Join(Dir(name), Base(name)))
		}
	})
}
