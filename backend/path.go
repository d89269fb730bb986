package backend

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Limits on names, the tightest of the supported stores (S3 keys are 1024
// bytes, most file systems allow 255 bytes per element).
const (
	MaxNameBytes = 1024
	MaxElemBytes = 255
)

// ReservedPrefix starts path elements that backends keep for themselves
// (temp files, segments, markers). Such names are invalid for callers and
// never listed.
const ReservedPrefix = ".~"

// ValidPath reports why name is not a valid file name, or nil. A valid name is
// fs.ValidPath, not ".", valid UTF-8, without NUL, control characters or
// backslashes, within the length limits, and with no reserved element.
func ValidPath(name string) error {
	if name == "." {
		return fmt.Errorf("%w: the root is not a file", ErrInvalidPath)
	}
	return validPath(name)
}

// ValidDir is ValidPath that also accepts "." for the root.
func ValidDir(name string) error {
	if name == "." {
		return nil
	}
	return validPath(name)
}

func validPath(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidPath)
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%w: name longer than %d bytes", ErrInvalidPath, MaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidPath)
	case name[0] == '/':
		return fmt.Errorf("%w: absolute", ErrInvalidPath)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: control character %#x", ErrInvalidPath, c)
		}
		if c == '\\' {
			return fmt.Errorf("%w: backslash", ErrInvalidPath)
		}
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch {
		case elem == "":
			return fmt.Errorf("%w: empty element", ErrInvalidPath)
		case elem == "." || elem == "..":
			return fmt.Errorf("%w: %q element", ErrInvalidPath, elem)
		case len(elem) > MaxElemBytes:
			return fmt.Errorf("%w: element longer than %d bytes", ErrInvalidPath, MaxElemBytes)
		case strings.HasPrefix(elem, ReservedPrefix):
			return fmt.Errorf("%w: element %q uses the reserved prefix %q", ErrInvalidPath, elem, ReservedPrefix)
		}
	}
	return nil
}

// Join joins slash path elements, treating "." as the root.
func Join(elem ...string) string {
	parts := elem[:0:0]
	for _, e := range elem {
		if e != "" && e != "." {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return "."
	}
	return path.Join(parts...)
}

// Dir returns the parent of name, "." for a top-level name.
func Dir(name string) string { return path.Dir(name) }

// Base returns the last element of name.
func Base(name string) string { return path.Base(name) }

// Parents returns the ancestors of name from the top down, not including "."
// or name itself: "a/b/c" gives ["a", "a/b"].
func Parents(name string) []string {
	var out []string
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			out = append(out, name[:i])
		}
	}
	return out
}
