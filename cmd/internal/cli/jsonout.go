package cli

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
)

// normalize turns any value into the one naming scheme of trove's --json
// output: object keys in snake_case (and sorted) and times as RFC 3339 UTC
// with milliseconds, whatever the Go types behind it say (struct field
// names, camelCase tags, nanosecond times). Stored formats trove passes
// through (session messages, pi session v3 contexts) are not normalized:
// callers insert them as json.RawMessage after this. It returns compact
// JSON.
func normalize(v any) (json.RawMessage, error) {
	return marshalNormal(v, "")
}

// marshalNormal is normalize with each level of the output indented by
// indent ("": compact), as json.Encoder's SetIndent("", indent) writes it.
func marshalNormal(v any, indent string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Room for the indentation, untouched (and so free) when not used.
	return normalJSON(make([]byte, 0, 2*len(b)+64), b, indent)
}

// normalTime is s in UTC with milliseconds when s is an RFC 3339 time.
func normalTime(s string) (string, bool) {
	if !looksRFC3339(s) {
		return "", false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "", false
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00"), true
}

// looksRFC3339 says whether s has the shape of an RFC 3339 time, what the
// regexp `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`
// matches. Checked by hand: compiling that regexp cost each --json
// process about 35 µs of CPU, more than all the checks it made.
func looksRFC3339(s string) bool {
	const head = "dddd-dd-ddTdd:dd:dd"
	if len(s) <= len(head) || !fits(head, s[:len(head)]) {
		return false
	}
	rest := s[len(head):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-'):
		return fits("dd:dd", rest[1:])
	}
	return false
}

// fits says whether s has the shape of pattern, where 'd' stands for an
// ASCII digit and every other byte for itself.
func fits(pattern, s string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := range len(pattern) {
		if pattern[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// snakeKey maps ModTime, modTime and mod_time to mod_time, and IsDir to
// is_dir; runs of capitals stay one word (URLPath: url_path).
func snakeKey(k string) string {
	var b strings.Builder
	rs := []rune(k)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
