package manifest

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/internal/wire"
)

// ValidPath reports why p cannot be a workspace path in a manifest, or nil:
// it must be relative and clean (no "", "." or ".." element, no leading or
// doubled '/'), valid UTF-8, without NUL or backslash.
func ValidPath(p string) error {
	if plainRel(p) {
		return nil
	}
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrUnsafePath)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: %q is not UTF-8", ErrUnsafePath, p)
	case p[0] == '/':
		return fmt.Errorf("%w: %q is absolute", ErrUnsafePath, p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: %q holds a NUL byte", ErrUnsafePath, p)
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("%w: %q holds a backslash", ErrUnsafePath, p)
	case len(p) >= 2 && p[1] == ':':
		return fmt.Errorf("%w: %q looks like a drive letter", ErrUnsafePath, p)
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return fmt.Errorf("%w: %q has a %q element", ErrUnsafePath, p, elem)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%w: %q is not clean", ErrUnsafePath, p)
	}
	return nil
}

// ValidName reports why name cannot be one element of a workspace path,
// or nil: below a directory whose path ValidPath accepts, dir+"/"+name is
// valid exactly when name is. A walk checks each name so, not each path
// again from its root.
func ValidName(name string) error {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '/' {
			return validNameSlow(name)
		}
	}
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not a name", ErrUnsafePath, name)
	}
	return nil
}

func validNameSlow(name string) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not UTF-8", ErrUnsafePath, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%w: %q holds a NUL byte", ErrUnsafePath, name)
	case strings.ContainsRune(name, '\\'):
		return fmt.Errorf("%w: %q holds a backslash", ErrUnsafePath, name)
	case strings.ContainsRune(name, '/'):
		return fmt.Errorf("%w: %q holds a slash", ErrUnsafePath, name)
	}
	return nil
}

// plainRel is a fast yes for the common path: printable ASCII with no
// backslash, elements neither empty nor "." nor "..", no drive letter.
// Anything else takes ValidPath's full checks.
func plainRel(p string) bool {
	if p == "" || len(p) >= 2 && p[1] == ':' {
		return false
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) {
			c := p[i]
			if c < 0x20 || c >= 0x7f || c == '\\' {
				return false
			}
			if c != '/' {
				continue
			}
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// ValidRef reports whether s is a well-formed blob ref.
func ValidRef(s string) bool {
	if _, _, ok := wire.FastRef(s); ok {
		return true
	}
	_, err := cas.ParseRef(s)
	return err == nil
}
