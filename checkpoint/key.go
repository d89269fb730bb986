package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/trovekit/trove/backend"
)

// maxIDBytes bounds a checkpoint id, which is used as a file name.
const maxIDBytes = 128

// ValidID reports why id cannot name a checkpoint, or nil. An id is 1 to 128
// bytes of ASCII letters, digits, '.', '_' and '-', not starting with '.'
// (UUIDs, "cp-001" and message ids fit).
func ValidID(id string) error {
	if id == "" || len(id) > maxIDBytes {
		return fmt.Errorf("%w: %q: length must be 1 to %d bytes", ErrInvalidID, id, maxIDBytes)
	}
	if id[0] == '.' {
		return fmt.Errorf("%w: %q starts with '.'", ErrInvalidID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: %q: byte %#x not allowed", ErrInvalidID, id, c)
		}
	}
	return nil
}

// WorkspaceKey turns an absolute workspace directory into one store path
// element, the way session directories encode their cwd: the leading
// separator dropped, '/', '\' and ':' turned into '-', wrapped in "--".
// A directory that does not fit in one element (too long, not UTF-8,
// control characters) gets a readable prefix plus a hash of the whole path.
func WorkspaceKey(absDir string) string {
	s := strings.TrimLeft(absDir, `/\`)
	s = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(s)
	key := "--" + s + "--"
	if utf8.ValidString(key) && len(key) <= 200 && backend.ValidPath(key) == nil {
		return key
	}
	sum := sha256.Sum256([]byte(absDir))
	prefix := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '_'
		}
		return r
	}, s)
	for len(prefix) > 100 {
		_, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
	}
	return "--" + prefix + "-" + hex.EncodeToString(sum[:8]) + "--"
}

// validRel reports why p cannot be a workspace path in a manifest, or nil:
// it must be relative and clean (no "", "." or ".." element, no leading or
// doubled '/'), valid UTF-8, without NUL or backslash.
func validRel(p string) error {
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

// plainRel is a fast yes for the common path: printable ASCII with no
// backslash, elements neither empty nor "." nor "..", no drive letter.
// Anything else takes validRel's full checks.
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
