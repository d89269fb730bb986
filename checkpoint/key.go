package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
