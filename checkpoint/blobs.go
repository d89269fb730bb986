package checkpoint

import "strings"

// validRef reports whether s is blob:<sha256|blake3>:<64 lowercase hex>.
func validRef(s string) bool {
	rest, ok := strings.CutPrefix(s, "blob:")
	if !ok {
		return false
	}
	algo, h, ok := strings.Cut(rest, ":")
	if !ok || (algo != "sha256" && algo != "blake3") || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
