package runlog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

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
