package runlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestLineReader(t *testing.T) {
	type line struct {
		text     string
		complete bool
		tooLong  bool
	}
	cases := []struct {
		name string
		in   string
		max  int
		want []line
	}{
		{"empty", "", 10, nil},
		{"one", "abc\n", 10, []line{{"abc", true, false}}},
		{"no newline", "abc", 10, []line{{"abc", false, false}}},
		{"two", "a\nb\n", 10, []line{{"a", true, false}, {"b", true, false}}},
		{"exactly max", "0123456789\nx\n", 10, []line{{"0123456789", true, false}, {"x", true, false}}},
		{"over max", "0123456789A\nx\n", 10, []line{{"", true, true}, {"x", true, false}}},
		{"over max at end", "x\n0123456789AB", 10, []line{{"x", true, false}, {"", false, true}}},
		{"longer than the buffer", strings.Repeat("y", 100) + "\nz\n", 1000, []line{{strings.Repeat("y", 100), true, false}, {"z", true, false}}},
		{"over max and the buffer", strings.Repeat("y", 100) + "\nz\n", 50, []line{{"", true, true}, {"z", true, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A 16-byte buffer makes every long line cross ReadSlice's limit.
			lr := lineReader{r: bufio.NewReaderSize(strings.NewReader(c.in), 16), max: c.max}
			var got []line
			for {
				b, complete, err := lr.next()
				if err == io.EOF {
					break
				}
				tooLong := errors.Is(err, errLineTooLong)
				if err != nil && !tooLong {
					t.Fatal(err)
				}
				got = append(got, line{string(b), complete, tooLong})
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("line %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestPeekType(t *testing.T) {
	cases := map[string]string{
		`{"type":"run.end","x":1}`:         "run.end",
		`{"x":1,"type":"run.end"}`:         "run.end",
		`{"type":"a\"b"}`:                  `a"b`,
		`{"type":"x.acme.\u0066oo"}`:       "x.acme.foo",
		`{"type":7}`:                       "",
		`{"type":null}`:                    "",
		`[1]`:                              "",
		`{"type":"run.end"`:                "run.end", // fast path; the typed decode catches the rest
		`not json`:                         "",
		`{ "type" : "agent.event" }`:       "agent.event",
		`{"type":"header","type":"other"}`: "header",
	}
	for in, want := range cases {
		if got := peekType([]byte(in)); got != want {
			t.Errorf("peekType(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestParseLineTruncatedKnown(t *testing.T) {
	if _, err := parseLine([]byte(`{"type":"run.end"`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a cut known record: %v, want ErrCorrupt", err)
	}
	if _, err := parseLine([]byte(`{"type":"x.y","a":`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a cut unknown record: %v, want ErrCorrupt", err)
	}
}

func TestTime(t *testing.T) {
	in := time.Date(2026, 2, 3, 7, 34, 56, 789_654_321, time.FixedZone("EST", -5*3600))
	b, err := json.Marshal(TimeOf(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"2026-02-03T12:34:56.789Z"` {
		t.Errorf("marshal: %s", b)
	}
	for in, want := range map[string]time.Time{
		`"2026-02-03T12:34:56.789Z"`:    time.Date(2026, 2, 3, 12, 34, 56, 789e6, time.UTC),
		`"2026-02-03T12:34:56Z"`:        time.Date(2026, 2, 3, 12, 34, 56, 0, time.UTC),
		`"2026-02-03T13:34:56.5+01:00"`: time.Date(2026, 2, 3, 12, 34, 56, 500e6, time.UTC),
		`"yesterday"`:                   {},
		`12345`:                         {},
		`null`:                          {},
	} {
		var got Time
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Errorf("unmarshal %s: %v", in, err)
		}
		if !got.Equal(want) {
			t.Errorf("unmarshal %s = %v, want %v", in, got.Time, want)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || !validID(id) {
			t.Fatalf("NewID() = %q is not a UUIDv4", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %s", id)
		}
		seen[id] = true
	}
}

func TestScanHeader(t *testing.T) {
	full := `{"type":"header","schema_version":1,"run_id":"r","session_id":"s","started_at":"2026-02-03T12:00:00.000Z","model":{"name":"m"}}`
	h := scanHeader([]byte(full + "\n{\"type\":\"run.start\"}"))
	if !h.complete || h.typ != "header" || h.sessionID != "s" || h.schema != 1 || h.startedAt.IsZero() {
		t.Errorf("whole header: %+v", h)
	}
	// Every prefix: never a panic, and the session once its value is whole.
	for n := range len(full) {
		h := scanHeader([]byte(full[:n]))
		if h.complete {
			t.Fatalf("prefix %d read as complete", n)
		}
		if h.sawSession && h.sessionID != "s" {
			t.Fatalf("prefix %d: session %q", n, h.sessionID)
		}
	}
}

func TestCut(t *testing.T) {
	if got := cut("héllo", 10); got != "héllo" {
		t.Errorf("cut short string: %q", got)
	}
	if got := cut("héllo", 2); got != "hé…" {
		t.Errorf("cut: %q", got)
	}
}
