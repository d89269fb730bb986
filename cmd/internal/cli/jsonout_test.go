package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestLooksRFC3339 checks the hand-written shape test against the regexp
// it stands for.
func TestLooksRFC3339(t *testing.T) {
	re := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
	for _, s := range []string{
		"2026-11-29T05:02:03Z", "2026-11-29T05:02:03.123Z", "2026-11-29T05:02:03.123456789+01:00",
		"2026-11-29T05:02:03-07:30", "2026-11-29T05:02:03.Z", "2026-11-29T05:02:03", "2026-11-29T05:02:03z",
		"2026-11-29 05:02:03Z", "2026-11-29T05:02:03+0100", "2026-11-29T05:02:03+01:00x", "x2026-11-29T05:02:03Z",
		"2026-1-29T05:02:03Z", "2026-11-29T05:02:0aZ", "2026-11-29T05:02:03.1+01:0", "2026-11-29T05:02:03.1+01:001",
		"", "Z", "2026-11-29T05:02:03.", "2026-11-29T05:02:03+", "2026-11-29T05:02:03.12a", "２026-11-29T05:02:03Z",
		"2026-11-29T05:02:03\nZ", "2026-11-29T05:02:03Z\n", "0000-00-00T00:00:00Z", "9999-99-99T99:99:99.0-99:99",
	} {
		if got, want := looksRFC3339(s), re.MatchString(s); got != want {
			t.Errorf("looksRFC3339(%q) = %v, the regexp says %v", s, got, want)
		}
	}
}

// oldNormal is what printJSON wrote before normalJSON: the value decoded
// into maps, its keys snake_cased and times in UTC milliseconds, encoded
// again. It is the oracle of normalJSON.
func oldNormal(t *testing.T, v any, indent string) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", indent)
	if err := enc.Encode(oldSnake(tree)); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func oldSnake(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[snakeKey(k)] = oldSnake(val)
		}
		return out
	case []any:
		for i := range x {
			x[i] = oldSnake(x[i])
		}
		return x
	case string:
		if s, ok := normalTime(x); ok {
			return s
		}
	}
	return v
}

// collides says whether two keys of one object of v snake_case alike:
// the oracle keeps either.
func collides(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for k, val := range x {
			if seen[snakeKey(k)] || collides(val) {
				return true
			}
			seen[snakeKey(k)] = true
		}
	case []any:
		for _, val := range x {
			if collides(val) {
				return true
			}
		}
	}
	return false
}

// checkNormal compares printJSON's and printLine's bytes for v with the
// oracle's.
func checkNormal(t *testing.T, v any) {
	t.Helper()
	for _, indent := range []string{"  ", ""} {
		got, err := marshalNormal(v, indent)
		if err != nil {
			t.Fatalf("marshalNormal(%#v): %v", v, err)
		}
		if want := oldNormal(t, v, indent); string(got)+"\n" != want {
			t.Fatalf("indent %q, %#v:\ngot  %s\nwant %s", indent, v, got, want)
		}
	}
}

type normInner struct {
	ModTime time.Time         `json:"modTime"`
	IsDir   bool              `json:"IsDir"`
	URLPath string            `json:",omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Tags    map[string]string `json:"tags"`
}

type normOuter struct {
	Name     string
	Count    int64
	Ratio    float64
	Inner    normInner
	List     []normInner
	Empty    []int
	Nil      []int
	NoMap    map[string]int
	AnyValue any
	Ptr      *normInner
}

func TestNormalJSONAsMaps(t *testing.T) {
	at := time.Date(2026, 11, 29, 5, 2, 3, 123456789, time.FixedZone("x", 3600))
	inner := normInner{ModTime: at, IsDir: true, URLPath: "/a b", Raw: json.RawMessage(`{"zB": [1, 2], "aA": "2026-11-29T05:02:03+01:00"}`),
		Tags: map[string]string{"b": "<x&y>", "a b": "\u2028 \x01 \"q\" \\ é \xff", "a": "", "A!": "bang", "a\u00e9": "2026-11-29T05:02:03.1Z"}}
	for _, v := range []any{
		normOuter{Name: "n", Count: -1 << 60, Ratio: 1e-9, Inner: inner, List: []normInner{inner, {}}, Empty: []int{},
			NoMap: map[string]int{}, AnyValue: []any{"2026-11-29T05:02:03Z", 1.5, nil, true, map[string]any{"fooBar": at}}, Ptr: &inner},
		normOuter{},
		"2026-11-29T05:02:03-07:30", "2026-11-29T05:02:03.Z", "plain", 12, nil, []any{}, map[string]any{},
		map[string]any{"HTTPServer": 1, "httpServer2": 2, "x_y": map[string]any{"ID": []any{map[string]any{}}}},
		json.RawMessage(`[{"b":1,"a":{"d":[],"c":{}}}]`),
		json.RawMessage(` { "k" : "a\/b\u00e9" , "n" : 1.0E+2, "t": "2026-11-29T05:02:03\u002b01:00", "u": "\ud800" } `),
	} {
		checkNormal(t, v)
	}
}

// FuzzNormalJSON compares normalJSON with the oracle on any JSON.
func FuzzNormalJSON(f *testing.F) {
	for _, s := range []string{`{"aB":1,"a b":[true,null,"2026-11-29T05:02:03.5+01:00"]}`, `[1e400,-0,"\u00e9\ud800"]`,
		`{"":{"\u0041":"<\u2029>"}}`, `"x"`, `{"Z":{},"y":[],"X":[{"k":0.10}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&v) != nil || collides(v) {
			return
		}
		if _, err := json.Marshal(v); err != nil {
			return
		}
		checkNormal(t, v)
	})
}
