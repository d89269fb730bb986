package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode"
)

// normalize turns any value into the one naming scheme of trove's --json
// output: object keys in snake_case and times as RFC 3339 UTC with
// milliseconds, whatever the Go types behind it say (struct field names,
// camelCase tags, nanosecond times). Stored formats trove passes through
// (session messages, pi session v3 contexts) are not normalized: callers insert
// them as json.RawMessage after this.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return snake(tree), nil
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

func snake(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[snakeKey(k)] = snake(val)
		}
		return out
	case []any:
		for i := range x {
			x[i] = snake(x[i])
		}
		return x
	case string:
		if looksRFC3339(x) {
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
			}
		}
	}
	return v
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
