package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// TestSessionTree checks package session/tree (pi session v3 files, the write pipeline,
// blobs, discovery) on the backends newBackend makes. Subtest names are
// stable: TestSessionTree/<group>/<case>.
func TestSessionTree(t *testing.T, newBackend func(tb testing.TB) backend.Storage) {
	groups := []struct {
		name string
		run  func(x *sessionSuite, t *testing.T)
	}{
		{"RoundTrip", (*sessionSuite).roundTrip},
		{"AppendOrder", (*sessionSuite).appendOrder},
		{"Deferral", (*sessionSuite).deferral},
		{"Lenient", (*sessionSuite).lenient},
		{"Migration", (*sessionSuite).migration},
		{"Hostile", (*sessionSuite).hostile},
		{"Crash", (*sessionSuite).crash},
		{"TornAtEveryByte", (*sessionSuite).tornAtEveryByte},
		{"Faults", (*sessionSuite).faults},
		{"Blobs", (*sessionSuite).blobs},
		{"Discovery", (*sessionSuite).discovery},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			g.run(&sessionSuite{newBackend: newBackend}, t)
		})
	}
}

type sessionSuite struct {
	newBackend func(tb testing.TB) backend.Storage
}

var sessionCtx = context.Background()

func (x *sessionSuite) must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func (x *sessionSuite) read(tb testing.TB, st backend.Storage, name string) []byte {
	tb.Helper()
	data, err := st.ReadFile(sessionCtx, name)
	x.must(tb, err)
	return data
}

func (x *sessionSuite) write(tb testing.TB, st backend.Storage, name, data string) {
	tb.Helper()
	x.must(tb, st.WriteFile(sessionCtx, name, []byte(data)))
}

// clock is a fixed, increasing clock, so names and timestamps are stable.
func (x *sessionSuite) clock() tree.Option {
	t := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	return tree.WithClock(func() time.Time { t = t.Add(time.Second); return t })
}

// quiet collects load problems instead of logging them.
type sessionProblems struct{ list []tree.Problem }

func (p *sessionProblems) opt() tree.Option {
	return tree.WithReport(func(pr tree.Problem) { p.list = append(p.list, pr) })
}

func (p *sessionProblems) count(target error) int {
	n := 0
	for _, pr := range p.list {
		if errors.Is(pr, target) {
			n++
		}
	}
	return n
}

func (x *sessionSuite) jsonEqual(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	dec := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			tb.Fatalf("decode %.200q: %v", b, err)
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

func sessionUser(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1771237260000})
	return b
}

func sessionAssistant(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "text", "text": text}},
		"usage":   map[string]any{"input": 1, "output": 1}, "stopReason": "stop", "timestamp": 1771237265000,
	})
	return b
}

const sessionHeaderLine = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"

func sessionMsgLine(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":%q,"provider":"p","model":"m","content":%q}}`+"\n", id, p, role, text)
}

func (x *sessionSuite) roundTrip(t *testing.T) {
	cases := []struct {
		name string
		data tree.EntryData
	}{
		{"message", &tree.Message{Message: json.RawMessage(`{"role":"user","content":[{"type":"text","text":"hi <b> & \u00e9"}],"timestamp":1}`)}},
		{"thinking_level_change", &tree.ThinkingLevelChange{ThinkingLevel: "high"}},
		{"model_change", &tree.ModelChange{Model: "openai/gpt-4o", Role: "smol"}},
		{"compaction", &tree.Compaction{Summary: "s", ShortSummary: "ss", FirstKeptEntryID: "x", TokensBefore: 42000, Details: json.RawMessage(`{"readFiles":["a"]}`), PreserveData: json.RawMessage(`{"k":true}`), FromExtension: true}},
		{"branch_summary", &tree.BranchSummary{FromID: "root", Summary: "b", Details: json.RawMessage(`{"note":1}`), FromExtension: true}},
		{"custom", &tree.Custom{CustomType: "ext", Data: json.RawMessage(`{"state":[1,{"n":12345678901234567890}]}`)}},
		{"custom_message", &tree.CustomMessage{CustomType: "ext", Content: json.RawMessage(`"Injected"`), Display: true, Details: json.RawMessage(`{"debug":false}`)}},
		{"label", &tree.Label{TargetID: "t", Label: "checkpoint"}},
		{"ttsr_injection", &tree.TtsrInjection{InjectedRules: []string{"a", "b"}}},
		{"session_init", &tree.SessionInit{SystemPrompt: "sys", Task: "t", Tools: []string{"read", "edit"}, OutputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"mode_change", &tree.ModeChange{Mode: "plan", Data: json.RawMessage(`{"planFile":"/tmp/p.md"}`)}},
		{"unknown", &tree.Unknown{Type: "x_future", Fields: json.RawMessage(`{"big":1e400,"nested":{"z":1,"a":[true,null]}}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := x.newBackend(t)
			s, err := tree.Create(st, "s/t.jsonl", tree.Header{Cwd: "/w"}, x.clock())
			x.must(t, err)
			first, err := s.AppendMessage(sessionCtx, sessionAssistant("first"))
			x.must(t, err)
			// References name an entry of the file (the writing contract).
			switch d := tc.data.(type) {
			case *tree.Compaction:
				d.FirstKeptEntryID = first.ID()
			case *tree.Label:
				d.TargetID = first.ID()
			}
			e, err := s.Append(sessionCtx, tc.data)
			x.must(t, err)
			x.must(t, s.Close(sessionCtx))
			s2, err := tree.Open(sessionCtx, st, "s/t.jsonl")
			x.must(t, err)
			back := s2.Entry(e.ID())
			if back == nil {
				t.Fatal("entry lost")
			}
			if !x.jsonEqual(t, back.JSON(), e.JSON()) {
				t.Errorf("got  %s\nwant %s", back.JSON(), e.JSON())
			}
			if back.Type() != tc.data.EntryType() || back.ParentID() == "" {
				t.Errorf("type %q parent %q", back.Type(), back.ParentID())
			}
			// Written back unchanged by a rewrite.
			x.must(t, s2.Rewrite(sessionCtx))
			s3, err := tree.Open(sessionCtx, st, "s/t.jsonl")
			x.must(t, err)
			if !bytes.Equal(s3.Entry(e.ID()).JSON(), back.JSON()) {
				t.Error("rewrite changed the entry's bytes")
			}
		})
	}
}

func (x *sessionSuite) appendOrder(t *testing.T) {
	st := x.newBackend(t)
	s, err := tree.Create(st, "o.jsonl", tree.Header{Cwd: "/w"}, x.clock())
	x.must(t, err)
	var want []string
	for i := range 50 {
		msg := sessionUser(fmt.Sprint("u", i))
		if i%2 == 1 {
			msg = sessionAssistant(fmt.Sprint("a", i))
		}
		e, err := s.AppendMessage(sessionCtx, msg)
		x.must(t, err)
		want = append(want, e.ID())
		if i%7 == 0 {
			x.must(t, s.Flush(sessionCtx))
		}
	}
	x.must(t, s.Close(sessionCtx))
	s2, err := tree.Open(sessionCtx, st, "o.jsonl")
	x.must(t, err)
	es := s2.Entries()
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		if e.ID() != want[i] {
			t.Fatalf("entry %d is %s, want %s", i, e.ID(), want[i])
		}
		if i > 0 && e.ParentID() != want[i-1] {
			t.Errorf("entry %d parent %s, want %s", i, e.ParentID(), want[i-1])
		}
	}
	if s2.Leaf().ID() != want[len(want)-1] || len(s2.Context().Messages) != 50 {
		t.Error("leaf or context wrong after reload")
	}
}

func (x *sessionSuite) deferral(t *testing.T) {
	st := x.newBackend(t)
	s, err := tree.Create(st, "d.jsonl", tree.Header{Cwd: "/w"}, x.clock())
	x.must(t, err)
	_, err = s.AppendMessage(sessionCtx, sessionUser("hello"))
	x.must(t, err)
	// Appends wait for the first assistant message (pi session v3)...
	if _, err := st.Stat(sessionCtx, "d.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("written before an assistant message: %v", err)
	}
	// ...but Flush asks for durability: the prompt is written.
	x.must(t, s.Flush(sessionCtx))
	if s2, err := tree.Open(sessionCtx, st, "d.jsonl"); err != nil || s2.Len() != 1 {
		t.Fatalf("a flushed prompt is not on the store: %v", err)
	}
	_, err = s.AppendMessage(sessionCtx, sessionAssistant("hi"))
	x.must(t, err)
	x.must(t, s.Flush(sessionCtx))
	s2, err := tree.Open(sessionCtx, st, "d.jsonl")
	x.must(t, err)
	if s2.Len() != 2 {
		t.Errorf("%d entries after the first assistant message, want 2", s2.Len())
	}
	x.must(t, s.Close(sessionCtx))
}

func (x *sessionSuite) lenient(t *testing.T) {
	t.Run("TornTail", func(t *testing.T) {
		st := x.newBackend(t)
		data := sessionHeaderLine + sessionMsgLine("a", "", "assistant", "ok") + `{"type":"message","id":"b","par`
		x.write(t, st, "t.jsonl", data)
		var p sessionProblems
		s, err := tree.Open(sessionCtx, st, "t.jsonl", p.opt())
		x.must(t, err)
		if s.Len() != 1 || p.count(tree.ErrCorrupt) != 1 {
			t.Fatalf("len %d, problems %v", s.Len(), p.list)
		}
		e, err := s.AppendMessage(sessionCtx, sessionUser("after"))
		x.must(t, err)
		x.must(t, s.Close(sessionCtx))
		s2, err := tree.Open(sessionCtx, st, "t.jsonl", tree.WithReport(func(tree.Problem) {}))
		x.must(t, err)
		if s2.Entry(e.ID()) == nil || s2.Entry(e.ID()).ParentID() != "a" {
			t.Error("entry appended after a torn tail is lost")
		}
	})
	t.Run("MalformedLine", func(t *testing.T) {
		st := x.newBackend(t)
		data := sessionHeaderLine + sessionMsgLine("a", "", "user", "1") + "{oops\n\n  \r\n" + sessionMsgLine("b", "a", "assistant", "2")
		x.write(t, st, "m.jsonl", data)
		var p sessionProblems
		s, err := tree.Open(sessionCtx, st, "m.jsonl", p.opt())
		x.must(t, err)
		if s.Len() != 2 || len(p.list) != 1 || p.list[0].Line != 3 || !errors.Is(p.list[0], tree.ErrCorrupt) {
			t.Errorf("len %d, problems %v", s.Len(), p.list)
		}
	})
	t.Run("MissingHeader", func(t *testing.T) {
		st := x.newBackend(t)
		data := sessionMsgLine("a", "", "user", "no header")
		x.write(t, st, "h.jsonl", data)
		s, err := tree.Open(sessionCtx, st, "h.jsonl", tree.WithReport(func(tree.Problem) {}))
		x.must(t, err)
		if s.Len() != 0 || !errors.Is(s.Err(), tree.ErrNoHeader) {
			t.Errorf("len %d err %v", s.Len(), s.Err())
		}
		if _, err := s.AppendMessage(sessionCtx, sessionAssistant("x")); !errors.Is(err, tree.ErrNoHeader) {
			t.Errorf("append: %v", err)
		}
		if got := string(x.read(t, st, "h.jsonl")); got != data {
			t.Error("file without a header was overwritten")
		}
	})
	t.Run("ParentLinks", func(t *testing.T) {
		st := x.newBackend(t)
		data := sessionHeaderLine + sessionMsgLine("a", "", "user", "1") + sessionMsgLine("b", "a", "assistant", "2") +
			sessionMsgLine("c", "a", "assistant", "2'") + sessionMsgLine("d", "gone", "user", "orphan") + sessionMsgLine("e", "c", "user", "3")
		x.write(t, st, "p.jsonl", data)
		var p sessionProblems
		s, err := tree.Open(sessionCtx, st, "p.jsonl", p.opt())
		x.must(t, err)
		if p.count(tree.ErrDanglingParent) != 1 {
			t.Errorf("problems %v", p.list)
		}
		path, err := s.Path("e")
		x.must(t, err)
		var ids []string
		for _, e := range path {
			ids = append(ids, e.ID())
		}
		if strings.Join(ids, ",") != "a,c,e" {
			t.Errorf("path %v", ids)
		}
		if c, _ := s.ContextAt("d"); len(c.Messages) != 1 {
			t.Error("orphan must act as a root")
		}
	})
}

const (
	sessionV1 = `{"type":"session","id":"v1","timestamp":"2025-06-01T09:00:00.000Z","cwd":"/old"}
{"type":"message","timestamp":"2025-06-01T09:00:01.000Z","message":{"role":"user","content":"hello"}}
{"type":"message","timestamp":"2025-06-01T09:00:02.000Z","message":{"role":"assistant","provider":"a","model":"m","content":[]}}
{"type":"message","timestamp":"2025-06-01T09:00:03.000Z","message":{"role":"hookMessage","customType":"h","content":"x","display":true}}
{"type":"compaction","timestamp":"2025-06-01T09:00:04.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}
{"type":"message","timestamp":"2025-06-01T09:00:05.000Z","message":{"role":"user","content":"after"}}
`
	sessionV2 = `{"type":"session","version":2,"id":"v2","timestamp":"2025-09-01T09:00:00.000Z","cwd":"/mid"}
{"type":"message","id":"aa","parentId":null,"timestamp":"2025-09-01T09:00:01.000Z","message":{"role":"user","content":"start"}}
{"type":"message","id":"bb","parentId":"aa","timestamp":"2025-09-01T09:00:02.000Z","message":{"role":"hookMessage","content":"hook"}}
`
)

func (x *sessionSuite) migration(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		entries    int
	}{{"v1", sessionV1, 5}, {"v2", sessionV2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			st := x.newBackend(t)
			x.write(t, st, "m.jsonl", tc.data)
			var writes int
			fst := faulty.New(st, faulty.WithHook(func(op, _ string) error {
				if op == "WriteFile" || op == "OpenWriter" {
					writes++
				}
				return nil
			}))
			s, err := tree.Open(sessionCtx, fst, "m.jsonl", tree.WithReport(func(tree.Problem) {}))
			x.must(t, err)
			if writes != 1 {
				t.Fatalf("%d writes by the migration, want 1 atomic rewrite", writes)
			}
			if s.Len() != tc.entries || s.Header().Version != 3 {
				t.Fatalf("len %d version %v", s.Len(), s.Header().Version)
			}
			for _, e := range s.Entries() {
				if e.ID() == "" || e.Role() == "hookMessage" || e.Field("firstKeptEntryIndex") != nil {
					t.Errorf("not migrated: %s", e.JSON())
				}
			}
			after := x.read(t, st, "m.jsonl")
			var p sessionProblems
			_, err = tree.Open(sessionCtx, fst, "m.jsonl", p.opt())
			x.must(t, err)
			if writes != 1 || len(p.list) != 0 || !bytes.Equal(x.read(t, st, "m.jsonl"), after) {
				t.Errorf("second load changed something: writes %d problems %v", writes, p.list)
			}
			if tc.name == "v1" {
				es := s.Entries()
				d, err := es[3].Data()
				x.must(t, err)
				if d.(*tree.Compaction).FirstKeptEntryID != es[1].ID() {
					t.Error("firstKeptEntryIndex 2 must name the second entry (the header is 0)")
				}
				c := s.Context()
				if len(c.Messages) != 4 || !strings.Contains(string(c.Messages[0]), "compactionSummary") || !strings.Contains(string(c.Messages[1]), `"assistant"`) {
					t.Errorf("context %s", c.Messages)
				}
			}
		})
	}
}

func (x *sessionSuite) hostile(t *testing.T) {
	ok := sessionMsgLine("ok", "", "user", "fine")
	for _, tc := range []struct{ name, body string }{
		{"HugeLine", `{"type":"message","id":"big","parentId":"ok","message":{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}}` + "\n"},
		{"DeepNesting", strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n" + `{"type":"custom","id":"deep","parentId":"ok","data":` + strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000) + "}\n"},
		{"InvalidUTF8", `{"type":"message","id":"u","parentId":"ok","message":{"role":"user","content":"` + "\xff\xc3\x28" + `"}}` + "\n"},
		{"NULBytes", "\x00\x00\n{\"type\":\"message\",\x00\"id\":\"n\"}\n" + `{"type":"message","id":"n2","parentId":"ok","message":{"role":"user","content":"\u0000"}}` + "\n"},
		{"ParentCycle", sessionMsgLine("x", "z", "user", "x") + sessionMsgLine("y", "x", "user", "y") + sessionMsgLine("z", "y", "user", "z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := x.newBackend(t)
			data := sessionHeaderLine + ok + tc.body
			x.write(t, st, "h.jsonl", data)
			s, err := tree.Open(sessionCtx, st, "h.jsonl", tree.WithReport(func(tree.Problem) {}))
			x.must(t, err)
			if s.Entry("ok") == nil {
				t.Fatal("good entry lost")
			}
			out, err := json.Marshal(s.Context())
			x.must(t, err)
			if !json.Valid(out) {
				t.Fatal("context is not valid JSON")
			}
			for _, e := range s.Entries() {
				if e.ID() != "" {
					if _, err := s.ContextAt(e.ID()); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, err = s.AppendMessage(sessionCtx, sessionAssistant("still works"))
			x.must(t, err)
			x.must(t, s.Close(sessionCtx))
			if !bytes.HasPrefix(x.read(t, st, "h.jsonl"), []byte(data)) {
				t.Error("existing bytes changed by an append")
			}
		})
	}
}

// crash runs a write sequence, crashes after every prefix of it and checks
// that the file loads and holds every entry flushed before the crash.
func (x *sessionSuite) crash(t *testing.T) {
	if _, ok := x.newBackend(t).(backend.Crasher); !ok {
		t.Skip("backend cannot simulate a crash")
	}
	type step struct {
		name string
		run  func(s *tree.Session) (*tree.Entry, error)
		sync bool // on success, everything appended so far is durable
	}
	app := func(msg json.RawMessage) func(s *tree.Session) (*tree.Entry, error) {
		return func(s *tree.Session) (*tree.Entry, error) { return s.AppendMessage(sessionCtx, msg) }
	}
	steps := []step{
		{"user", app(sessionUser("u1")), false},
		{"model", func(s *tree.Session) (*tree.Entry, error) {
			return s.Append(sessionCtx, &tree.ModelChange{Model: "a/b"})
		}, false},
		{"assistant", app(sessionAssistant("a1")), false},
		{"flush", func(s *tree.Session) (*tree.Entry, error) { return nil, s.Flush(sessionCtx) }, true},
		{"user2", app(sessionUser("u2")), false},
		{"assistant2", app(sessionAssistant("a2")), false},
		{"flush2", func(s *tree.Session) (*tree.Entry, error) { return nil, s.Flush(sessionCtx) }, true},
		{"title", func(s *tree.Session) (*tree.Entry, error) { return nil, s.SetTitle(sessionCtx, "T") }, true},
		{"user3", app(sessionUser("u3")), false},
		{"label", func(s *tree.Session) (*tree.Entry, error) {
			return s.SetLabel(sessionCtx, s.Entries()[0].ID(), "first")
		}, false},
		{"flush3", func(s *tree.Session) (*tree.Entry, error) { return nil, s.Flush(sessionCtx) }, true},
		{"user4", app(sessionUser("u4 unsynced")), false},
	}
	for k := 0; k <= len(steps); k++ {
		t.Run(fmt.Sprintf("after%d", k), func(t *testing.T) {
			st := x.newBackend(t)
			s, err := tree.Create(st, "c/s.jsonl", tree.Header{Cwd: "/w"}, x.clock())
			x.must(t, err)
			var appended []*tree.Entry
			durable := 0
			for _, stp := range steps[:k] {
				e, err := stp.run(s)
				x.must(t, err)
				if e != nil {
					appended = append(appended, e)
				}
				if stp.sync {
					durable = len(appended)
				}
			}
			st.(backend.Crasher).Crash()
			s2, err := tree.Open(sessionCtx, st, "c/s.jsonl", tree.WithReport(func(tree.Problem) {}))
			if errors.Is(err, fs.ErrNotExist) {
				if durable > 0 {
					t.Fatalf("file gone after %d durable entries", durable)
				}
				return
			}
			x.must(t, err)
			byID := map[string]*tree.Entry{}
			for _, e := range appended {
				byID[e.ID()] = e
			}
			for _, e := range appended[:durable] {
				got := s2.Entry(e.ID())
				if got == nil || !bytes.Equal(got.JSON(), e.JSON()) {
					t.Errorf("durable entry %s lost or changed", e.ID())
				}
			}
			for _, e := range s2.Entries() {
				if w := byID[e.ID()]; w == nil || !bytes.Equal(w.JSON(), e.JSON()) {
					t.Errorf("entry after the crash that was never appended: %s", e.JSON())
				}
			}
			// The session takes appends again.
			if s2.Err() == nil {
				_, err = s2.AppendMessage(sessionCtx, sessionAssistant("again"))
				x.must(t, err)
				x.must(t, s2.Close(sessionCtx))
			}
		})
	}
}

// tornAtEveryByte stores every byte prefix of a session file: each loads,
// with every entry whose line is complete.
func (x *sessionSuite) tornAtEveryByte(t *testing.T) {
	data := sessionHeaderLine + sessionMsgLine("a", "", "user", "1") + sessionMsgLine("b", "a", "assistant", "two") + sessionMsgLine("c", "b", "user", "3")
	st := x.newBackend(t)
	for _, n := range tornCuts(st, data) {
		prefix := data[:n]
		x.write(t, st, "p.jsonl", prefix)
		s, err := tree.Open(sessionCtx, st, "p.jsonl", tree.WithReport(func(tree.Problem) {}))
		x.must(t, err)
		want := 0
		if strings.HasPrefix(prefix, strings.TrimSuffix(sessionHeaderLine, "\n")) {
			want = strings.Count(prefix, "\n") - 1
			// A complete last line without its newline parses too.
			if !strings.HasSuffix(prefix, "\n") && strings.HasSuffix(prefix, "}}") && strings.Count(prefix, "\n") > 0 {
				want++
			}
			want = max(want, 0)
		}
		if s.Len() != want {
			t.Fatalf("prefix of %d bytes: %d entries, want %d", n, s.Len(), want)
		}
	}
}

func (x *sessionSuite) faults(t *testing.T) {
	boom := errors.New("injected")
	t.Run("FirstErrorLatched", func(t *testing.T) {
		fst := faulty.New(x.newBackend(t))
		s, err := tree.Create(fst, "f.jsonl", tree.Header{Cwd: "/w"})
		x.must(t, err)
		_, err = s.AppendMessage(sessionCtx, sessionAssistant("a"))
		x.must(t, err)
		fst.Inject(faulty.FailNth(1, boom, "Writer.Write"))
		if _, err := s.AppendMessage(sessionCtx, sessionUser("lost")); !errors.Is(err, boom) {
			t.Fatalf("append: %v", err)
		}
		fst.Clear()
		if _, err := s.AppendMessage(sessionCtx, sessionUser("later")); !errors.Is(err, boom) {
			t.Errorf("later append: %v, want the first error", err)
		}
		if err := s.Flush(sessionCtx); !errors.Is(err, boom) {
			t.Errorf("flush: %v", err)
		}
		if err := s.Close(sessionCtx); !errors.Is(err, boom) {
			t.Errorf("close: %v", err)
		}
	})
	t.Run("SyncFails", func(t *testing.T) {
		fst := faulty.New(x.newBackend(t), faulty.FailSync(1))
		s, err := tree.Create(fst, "f.jsonl", tree.Header{Cwd: "/w"})
		x.must(t, err)
		_, err = s.AppendMessage(sessionCtx, sessionAssistant("a"))
		x.must(t, err)
		if err := s.Flush(sessionCtx); err == nil {
			t.Fatal("flush hid a failed sync")
		}
		if err := s.Flush(sessionCtx); err == nil {
			t.Error("second flush forgot the failed sync")
		}
	})
	t.Run("RewriteFailsKeepsFile", func(t *testing.T) {
		st := x.newBackend(t)
		x.write(t, st, "r.jsonl", sessionHeaderLine+sessionMsgLine("a", "", "assistant", "x"))
		fst := faulty.New(st)
		s, err := tree.Open(sessionCtx, fst, "r.jsonl")
		x.must(t, err)
		fst.Inject(faulty.FailNth(1, boom, "WriteFile"))
		if err := s.SetTitle(sessionCtx, "t"); !errors.Is(err, boom) {
			t.Fatalf("set title: %v", err)
		}
		if got := string(x.read(t, st, "r.jsonl")); got != sessionHeaderLine+sessionMsgLine("a", "", "assistant", "x") {
			t.Errorf("failed rewrite changed the file: %q", got)
		}
	})
}

func (x *sessionSuite) blobs(t *testing.T) {
	st := x.newBackend(t)
	store, err := cas.Open(sessionCtx, st)
	x.must(t, err)
	blobs := store
	img := make([]byte, 4096)
	for i := range img {
		img[i] = byte(i * 7)
	}
	b64 := base64.StdEncoding.EncodeToString(img)
	msg, _ := json.Marshal(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image", "data": b64, "mimeType": "image/png"},
	}})
	out := strings.Repeat("tool output line\n", 8000)
	tool, _ := json.Marshal(map[string]any{"role": "toolResult", "toolCallId": "1", "toolName": "bash",
		"content": []any{map[string]any{"type": "text", "text": out}}})
	s, err := tree.Create(st, "b.jsonl", tree.Header{Cwd: "/w"}, tree.WithBlobStore(blobs))
	x.must(t, err)
	_, err = s.AppendMessage(sessionCtx, sessionAssistant("a"))
	x.must(t, err)
	ei, err := s.AppendMessage(sessionCtx, msg)
	x.must(t, err)
	et, err := s.AppendMessage(sessionCtx, tool)
	x.must(t, err)
	x.must(t, s.Close(sessionCtx))

	file := string(x.read(t, st, "b.jsonl"))
	sum := sha256.Sum256(img)
	ref := "blob:sha256:" + hex.EncodeToString(sum[:])
	if !strings.Contains(file, ref) || strings.Contains(file, b64) || strings.Contains(file, out) || len(file) > 4000 {
		t.Fatalf("blobs not externalized (%d bytes)", len(file))
	}
	s2, err := tree.Open(sessionCtx, st, "b.jsonl", tree.WithBlobStore(blobs))
	x.must(t, err)
	if !x.jsonEqual(t, s2.Entry(ei.ID()).Field("message"), msg) || !x.jsonEqual(t, s2.Entry(et.ID()).Field("message"), tool) {
		t.Fatal("blobs not resolved back")
	}

	r, _ := cas.ParseRef(ref)
	x.must(t, store.Delete(sessionCtx, r))
	var p sessionProblems
	s3, err := tree.Open(sessionCtx, st, "b.jsonl", tree.WithBlobStore(blobs), p.opt())
	x.must(t, err)
	if p.count(tree.ErrBlob) != 1 || p.count(fs.ErrNotExist) != 1 {
		t.Errorf("problems %v", p.list)
	}
	if m := string(s3.Entry(ei.ID()).Field("message")); !strings.Contains(m, "unavailable") {
		t.Errorf("no placeholder for a missing blob: %s", m)
	}
}

func (x *sessionSuite) discovery(t *testing.T) {
	st := x.newBackend(t)
	mk := func(id, cwd, first, title string, at time.Time) session.Info {
		t.Helper()
		name := session.SessionPath(cwd, at, id)
		h := tree.Header{ID: id, Cwd: cwd, Title: title, Timestamp: at.UTC().Format("2006-01-02T15:04:05.000Z")}
		s, err := tree.Create(st, name, h)
		x.must(t, err)
		_, err = s.AppendMessage(sessionCtx, sessionUser(first))
		x.must(t, err)
		_, err = s.AppendMessage(sessionCtx, sessionAssistant("ok"))
		x.must(t, err)
		x.must(t, s.Close(sessionCtx))
		return session.Info{Path: name, ID: id, Cwd: cwd, Title: title, FirstMessage: first}
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a1 := mk("1111aaaa00000001", "/work/a", "first in a", "A1", base)
	b1 := mk("1111bbbb00000002", "/work/b", "first in b", "", base.Add(time.Minute))
	a2 := mk("2222aaaa00000003", "/work/a", "second in a", "A2", base.Add(2*time.Minute))
	// Another cwd that encodes to the same directory as /work/a.
	x1 := mk("3333cccc00000004", "/work-a", "collides", "", base.Add(3*time.Minute))
	x.write(t, st, session.CwdDir("/work/a")+"/junk.jsonl", "not a session\n")

	collect := func(seq func(func(session.Info, error) bool)) []session.Info {
		var out []session.Info
		for info, err := range seq {
			x.must(t, err)
			out = append(out, info)
		}
		return out
	}
	check := func(what string, got []session.Info, want ...session.Info) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d sessions, want %d: %+v", what, len(got), len(want), got)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Path != w.Path || g.ID != w.ID || g.Cwd != w.Cwd || g.Title != w.Title || g.FirstMessage != w.FirstMessage || g.Created.IsZero() || g.Size == 0 {
				t.Errorf("%s[%d] = %+v, want %+v", what, i, g, w)
			}
		}
	}
	store, err := session.OpenStore(sessionCtx, st, session.WithInlineBlobs())
	x.must(t, err)
	var skipped []string
	check("Discover /work/a", collect(store.Discover(sessionCtx, session.Discovery{Cwd: "/work/a", Skipped: func(p string, err error) {
		skipped = append(skipped, p)
	}})), a2, a1)
	if len(skipped) != 1 {
		t.Errorf("skipped %v, want the junk file", skipped)
	}
	check("Discover all", collect(store.Discover(sessionCtx, session.Discovery{All: true})), x1, a2, b1, a1)
	check("Discover none", collect(store.Discover(sessionCtx, session.Discovery{Cwd: "/nowhere"})))

	mr, err := store.Recent(sessionCtx, "/work/b", "")
	x.must(t, err)
	check("Recent", []session.Info{mr}, b1)
	if _, err := store.Recent(sessionCtx, "/nowhere", ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Recent of an empty cwd: %v", err)
	}

	// Breadcrumbs: continue finds what the terminal used last.
	x.must(t, session.WriteBreadcrumb(sessionCtx, st, "tty-1", "/work/a", a1.Path))
	c, err := store.Recent(sessionCtx, "/work/a", "tty-1")
	x.must(t, err)
	check("Recent tty-1", []session.Info{c}, a1)
	c, err = store.Recent(sessionCtx, "/work/a", "tty-2")
	x.must(t, err)
	check("Recent tty-2", []session.Info{c}, a2)
	c, err = store.Recent(sessionCtx, "/work/b", "tty-1")
	x.must(t, err)
	check("Recent other cwd", []session.Info{c}, b1)

	// Find and ContextFor by id and id prefix.
	for _, ref := range []string{a1.ID, a1.ID[:10], a1.Path} {
		name, err := store.Find(sessionCtx, ref)
		x.must(t, err)
		if name != a1.Path {
			t.Errorf("Find(%q) = %q", ref, name)
		}
	}
	if _, err := store.Find(sessionCtx, "1111"); !errors.Is(err, session.ErrAmbiguous) {
		t.Errorf("Find ambiguous prefix: %v", err)
	}
	if _, err := store.Find(sessionCtx, "zzzz"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find unknown: %v", err)
	}
	if _, err := store.Find(sessionCtx, ""); err == nil {
		t.Error("Find empty")
	}
	ctxt, err := store.ContextFor(sessionCtx, a2.ID[:12], "")
	x.must(t, err)
	if len(ctxt.Messages) != 2 || !strings.Contains(string(ctxt.Messages[0]), "second in a") {
		t.Errorf("ContextFor: %s", ctxt.Messages)
	}
}
