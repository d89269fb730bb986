package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
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

// rfc3339 is compiled at first use, not at every start of trove.
var rfc3339 = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
})

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
		if rfc3339().MatchString(x) {
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
