package backend_test

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend"
)

// long is a valid-looking name of exactly n bytes in 99-byte elements.
func long(n int) string {
	s := []byte(strings.Repeat(strings.Repeat("n", 99)+"/", n/100+1)[:n])
	if s[n-1] == '/' {
		s[n-1] = 'n'
	}
	return string(s)
}

func TestValidPath(t *testing.T) {
	valid := []string{
		"a",
		"a/b/c",
		"with space",
		"ünïcödé/日本語",
		"emoji-😀",
		"100%",
		".hidden",
		"..leading-dots",
		"...",
		"a.~b", // reserved only as a prefix
		"x~",
		"~",
		"#?&=;:*[]{}<>|'\"`!@$",
		strings.Repeat("e", backend.MaxElemBytes),
		long(backend.MaxNameBytes),
	}
	invalid := []struct{ name, path string }{
		{"empty", ""},
		{"dot", "."},
		{"dotdot", ".."},
		{"dotdot-prefix", "../a"},
		{"dotdot-inner", "a/../b"},
		{"dotdot-suffix", "a/.."},
		{"dot-inner", "a/./b"},
		{"dot-suffix", "a/."},
		{"absolute", "/etc/passwd"},
		{"slash", "/"},
		{"empty-element", "a//b"},
		{"trailing-slash", "a/"},
		{"leading-dot-slash", "./a"},
		{"nul", "a\x00b"},
		{"backslash", `a\b`},
		{"backslash-dotdot", `..\a`},
		{"newline", "a\nb"},
		{"tab", "\t"},
		{"escape", "\x1b"},
		{"del", "a\x7f"},
		{"unit-separator", "a\x1fb"},
		{"non-utf8", "a\xffb"},
		{"overlong-slash", "\xc0\xaf"},
		{"surrogate", "\xed\xa0\x80"},
		{"element-too-long", strings.Repeat("e", backend.MaxElemBytes+1)},
		{"inner-element-too-long", "a/" + strings.Repeat("e", backend.MaxElemBytes+1) + "/b"},
		{"name-too-long", long(backend.MaxNameBytes + 1)},
		{"reserved", ".~x"},
		{"reserved-bare", ".~"},
		{"reserved-inner", "a/.~tmp/b"},
		{"reserved-last", "a/.~seg"},
	}
	for _, p := range valid {
		t.Run("valid/"+p[:min(len(p), 20)], func(t *testing.T) {
			if err := backend.ValidPath(p); err != nil {
				t.Errorf("ValidPath(%q) = %v, want nil", p, err)
			}
			if err := backend.ValidDir(p); err != nil {
				t.Errorf("ValidDir(%q) = %v, want nil", p, err)
			}
			if !fs.ValidPath(p) {
				t.Errorf("%q is valid for trove but not for fs.ValidPath", p)
			}
		})
	}
	for _, c := range invalid {
		t.Run("invalid/"+c.name, func(t *testing.T) {
			err := backend.ValidPath(c.path)
			if !errors.Is(err, backend.ErrInvalidPath) {
				t.Errorf("ValidPath(%q) = %v, want ErrInvalidPath", c.path, err)
			}
			derr := backend.ValidDir(c.path)
			if c.path == "." {
				if derr != nil {
					t.Errorf("ValidDir(.) = %v, want nil: it names the root", derr)
				}
			} else if !errors.Is(derr, backend.ErrInvalidPath) {
				t.Errorf("ValidDir(%q) = %v, want ErrInvalidPath", c.path, derr)
			}
		})
	}
}

func TestJoin(t *testing.T) {
	cases := []struct {
		elem []string
		want string
	}{
		{nil, "."},
		{[]string{""}, "."},
		{[]string{"."}, "."},
		{[]string{".", "."}, "."},
		{[]string{"a"}, "a"},
		{[]string{".", "a"}, "a"},
		{[]string{"a", "."}, "a"},
		{[]string{"a", "", "b"}, "a/b"},
		{[]string{"a/b", "c"}, "a/b/c"},
		{[]string{"sub/root", "x/y"}, "sub/root/x/y"},
		{[]string{"a", "b/"}, "a/b"},
	}
	for _, c := range cases {
		if got := backend.Join(c.elem...); got != c.want {
			t.Errorf("Join(%q) = %q, want %q", c.elem, got, c.want)
		}
	}
}

func TestParents(t *testing.T) {
	cases := []struct {
		name string
		want []string
	}{
		{"a", nil},
		{"a/b", []string{"a"}},
		{"a/b/c", []string{"a", "a/b"}},
		{"x y/ü/#", []string{"x y", "x y/ü"}},
	}
	for _, c := range cases {
		if got := backend.Parents(c.name); !slices.Equal(got, c.want) {
			t.Errorf("Parents(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDirBase(t *testing.T) {
	cases := []struct{ name, dir, base string }{
		{"a", ".", "a"},
		{"a/b", "a", "b"},
		{"a/b/c", "a/b", "c"},
	}
	for _, c := range cases {
		if got := backend.Dir(c.name); got != c.dir {
			t.Errorf("Dir(%q) = %q, want %q", c.name, got, c.dir)
		}
		if got := backend.Base(c.name); got != c.base {
			t.Errorf("Base(%q) = %q, want %q", c.name, got, c.base)
		}
		if got := (backend.Info{Name: c.name}).Base(); got != c.base {
			t.Errorf("Info{%q}.Base() = %q, want %q", c.name, got, c.base)
		}
		if c.dir != "." {
			if got := backend.Join(c.dir, c.base); got != c.name {
				t.Errorf("Join(Dir, Base) of %q = %q", c.name, got)
			}
		}
	}
}
