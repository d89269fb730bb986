package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/session/tree"
)

var ctx = context.Background()

func fixedClock() func() time.Time {
	t := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

// TestContextGolden rebuilds the context of a file hand-written after the
// examples of pi session v3 (standing in for another v3 implementation) and
// compares it with what that implementation's buildSessionContext emits.
func TestContextGolden(t *testing.T) {
	for _, tc := range []struct{ leaf, golden string }{
		{"", "v3-reference.context.json"},
		{"a1b2c3d8", "v3-reference.context.a1b2c3d8.json"},
		{"a1b2c3d4", "v3-reference.context.a1b2c3d4.json"},
	} {
		t.Run("leaf="+tc.leaf, func(t *testing.T) {
			st := newMem(t)
			putFixture(t, st, "v3-reference.jsonl", "s.jsonl")
			c, err := storeOn(t, st).ContextFor(ctx, "s.jsonl", tc.leaf)
			must(t, err)
			got, err := json.Marshal(c)
			must(t, err)
			want, err := os.ReadFile("testdata/" + tc.golden)
			must(t, err)
			if !jsonEqual(t, got, want) {
				t.Errorf("context differs\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestContextUnknownLeaf(t *testing.T) {
	st := newMem(t)
	putFixture(t, st, "v3-reference.jsonl", "s.jsonl")
	if _, err := storeOn(t, st).ContextFor(ctx, "s.jsonl", "nope"); !errors.Is(err, tree.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestReferenceFileLoads(t *testing.T) {
	st := newMem(t)
	var p problems
	putFixture(t, st, "v3-reference.jsonl", "s.jsonl")
	s, err := tree.Open(ctx, st, "s.jsonl", p.opt())
	must(t, err)
	if len(p.list) != 0 {
		t.Errorf("problems on a clean file: %v", p.list)
	}
	h := s.Header()
	if h.ID != "1f9d2a6b9c0d1234" || h.Cwd != "/work/pi" || h.Title != "Fix the parser" || h.Version != 3 {
		t.Errorf("header %+v", h)
	}
	if s.Len() != 23 {
		t.Errorf("Len = %d, want 23", s.Len())
	}
	if l := s.Leaf(); l == nil || l.ID() != "b2c3d4e6" {
		t.Errorf("leaf = %v, want the last entry", l)
	}
	// The label set on a1b2c3d4 was cleared by a later label entry.
	if got := s.Labels(); len(got) != 0 {
		t.Errorf("labels = %v, want none", got)
	}
	kids := s.Children("a1b2c3d7")
	if len(kids) != 2 || kids[0].ID() != "c1d2e3f5" || kids[1].ID() != "e1f2a3b4" {
		t.Errorf("children of a1b2c3d7: %v", ids(kids))
	}
	d, err := s.Entry("d1e2f3a4").Data()
	must(t, err)
	comp := d.(*tree.Compaction)
	if comp.FirstKeptEntryID != "a1b2c3d5" || comp.TokensBefore != 42000 || comp.ShortSummary != "Parser fixed" {
		t.Errorf("compaction %+v", comp)
	}
	u, err := s.Entry("9f9f9f9f").Data()
	must(t, err)
	if u.EntryType() != "x_future_entry" {
		t.Errorf("unknown type = %q", u.EntryType())
	}
}

func ids(es []*tree.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID())
	}
	return out
}

// TestUnknownKeptByteForByte appends to and rewrites a file written by
// another implementation: every line it wrote comes back unchanged.
func TestUnknownKeptByteForByte(t *testing.T) {
	st := newMem(t)
	orig := putFixture(t, st, "v3-reference.jsonl", "s.jsonl")
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	_, err = s.AppendMessage(ctx, userMsg("more"))
	must(t, err)
	must(t, s.Rewrite(ctx))
	must(t, s.Close(ctx))
	got := read(t, st, "s.jsonl")
	if !bytes.HasPrefix(got, orig) {
		t.Fatalf("rewritten file does not start with the original bytes:\n%s", got)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 25 {
		t.Fatalf("%d lines, want 25", len(lines))
	}
}

func TestMigration(t *testing.T) {
	for _, tc := range []struct {
		file, golden string
		check        func(t *testing.T, s *tree.Session)
	}{
		{"v1.jsonl", "v1.context.json", checkV1},
		{"v2.jsonl", "v2.context.json", checkV2},
	} {
		t.Run(tc.file, func(t *testing.T) {
			mst := newMem(t)
			putFixture(t, mst, tc.file, "s.jsonl")
			cs, writes := countWrites(mst)
			var p problems
			s, err := tree.Open(ctx, cs, "s.jsonl", p.opt())
			must(t, err)
			if writes.Load() != 1 {
				t.Fatalf("%d rewrites after migration, want 1", writes.Load())
			}
			tc.check(t, s)
			c := s.Context()
			got, _ := json.Marshal(c)
			want, err := os.ReadFile("testdata/" + tc.golden)
			must(t, err)
			var w map[string]any
			must(t, json.Unmarshal(want, &w))
			if _, ok := w["leafId"]; !ok {
				// Migration mints ids: the golden file cannot name the leaf.
				w["leafId"] = c.LeafID
				want, _ = json.Marshal(w)
			}
			if !jsonEqual(t, got, want) {
				t.Errorf("context\n got: %s\nwant: %s", got, want)
			}
			first := read(t, cs, "s.jsonl")

			// The rewritten file is pure v3: loading again changes nothing.
			var p2 problems
			s2, err := tree.Open(ctx, cs, "s.jsonl", p2.opt())
			must(t, err)
			if writes.Load() != 1 {
				t.Errorf("second load wrote the file again")
			}
			if len(p2.list) != 0 {
				t.Errorf("second load reported %v", p2.list)
			}
			if !bytes.Equal(read(t, cs, "s.jsonl"), first) {
				t.Errorf("file changed on the second load")
			}
			got2, _ := json.Marshal(s2.Context())
			if !bytes.Equal(got, got2) {
				t.Errorf("context changed across loads:\n%s\n%s", got, got2)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(first)), "\n") {
				var v map[string]any
				must(t, json.Unmarshal([]byte(line), &v))
				if v["type"] == "session" {
					if v["version"] != 3.0 {
						t.Errorf("header version %v", v["version"])
					}
					continue
				}
				if _, ok := v["id"].(string); !ok {
					t.Errorf("entry without id: %s", line)
				}
				if _, ok := v["parentId"]; !ok {
					t.Errorf("entry without parentId: %s", line)
				}
				if _, ok := v["firstKeptEntryIndex"]; ok {
					t.Errorf("firstKeptEntryIndex left: %s", line)
				}
				if strings.Contains(line, "hookMessage") {
					t.Errorf("hookMessage left: %s", line)
				}
			}
		})
	}
}

func checkV1(t *testing.T, s *tree.Session) {
	es := s.Entries()
	if len(es) != 8 {
		t.Fatalf("%d entries, want 8 (the garbage line is dropped)", len(es))
	}
	prev := ""
	seen := map[string]bool{}
	for _, e := range es {
		if len(e.ID()) != 8 || seen[e.ID()] {
			t.Errorf("id %q: want a fresh 8-char id", e.ID())
		}
		seen[e.ID()] = true
		if e.ParentID() != prev {
			t.Errorf("entry %s parent %q, want %q (a linear chain)", e.ID(), e.ParentID(), prev)
		}
		prev = e.ID()
	}
	if seen["old-id-1"] {
		t.Error("v1 ids must be replaced")
	}
	d, err := es[6].Data()
	must(t, err)
	if got := d.(*tree.Compaction).FirstKeptEntryID; got != es[5].ID() {
		t.Errorf("firstKeptEntryId = %q, want %q (index 6 counts the header as 0)", got, es[5].ID())
	}
	if es[2].Role() != "custom" {
		t.Errorf("hookMessage role = %q, want custom", es[2].Role())
	}
	if h := s.Header(); h.Version != 3 || h.ID != "0a1b2c3d4e5f6071" {
		t.Errorf("header %+v", h)
	}
}

func checkV2(t *testing.T, s *tree.Session) {
	e := s.Entry("33333333")
	if e == nil || e.Role() != "custom" {
		t.Fatalf("hookMessage not migrated: %v", e)
	}
	if s.Entry("11111111").ParentID() != "" {
		t.Error("existing v2 ids and links must stay")
	}
	if s.Header().ParentSession != "0a1b2c3d4e5f6071" {
		t.Errorf("parentSession lost: %+v", s.Header())
	}
}

func TestMigrationReadOnlyDoesNotWrite(t *testing.T) {
	mst := newMem(t)
	orig := putFixture(t, mst, "v1.jsonl", "s.jsonl")
	cs, writes := countWrites(mst)
	s, err := tree.Open(ctx, cs, "s.jsonl", tree.ReadOnly())
	must(t, err)
	if writes.Load() != 0 || !bytes.Equal(read(t, cs, "s.jsonl"), orig) {
		t.Fatal("read-only open wrote the file")
	}
	if _, err := s.AppendMessage(ctx, userMsg("x")); !errors.Is(err, tree.ErrReadOnly) {
		t.Errorf("append: %v, want ErrReadOnly", err)
	}
}

// TestHookMessageInV3Kept: in a v3 file a hookMessage role is not migrated.
func TestHookMessageInV3Kept(t *testing.T) {
	st := newMem(t)
	data := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"hookMessage","content":"x"}}
`
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	if s.Entry("a").Role() != "hookMessage" {
		t.Error("hookMessage changed in a v3 file")
	}
	if string(read(t, st, "s.jsonl")) != data {
		t.Error("v3 file rewritten")
	}
}

func TestFutureVersionLoadsUnchanged(t *testing.T) {
	st := newMem(t)
	data := `{"type":"session","version":4,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/","newThing":[1,2]}
{"type":"message","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}
`
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	if s.Header().Version != 4 || s.Len() != 1 || s.Entries()[0].ID() != "" {
		t.Errorf("v4 file migrated: %+v", s.Header())
	}
	if string(read(t, st, "s.jsonl")) != data {
		t.Error("v4 file rewritten")
	}
}

func TestHeaderOnlyV1Migrated(t *testing.T) {
	mst := newMem(t)
	must(t, mst.WriteFile(ctx, "s.jsonl", []byte(`{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`+"\n")))
	cs, writes := countWrites(mst)
	_, err := tree.Open(ctx, cs, "s.jsonl")
	must(t, err)
	if writes.Load() != 1 || !strings.Contains(string(read(t, cs, "s.jsonl")), `"version":3`) {
		t.Errorf("header-only v1 file not migrated: %s", read(t, cs, "s.jsonl"))
	}
}

func TestCreateDefersUntilAssistant(t *testing.T) {
	st := newMem(t)
	s, err := tree.Create(st, "d/s.jsonl", tree.Header{Cwd: "/w"}, tree.WithClock(fixedClock()))
	must(t, err)
	_, err = s.AppendMessage(ctx, userMsg("hi"))
	must(t, err)
	_, err = s.Append(ctx, &tree.ModelChange{Model: "a/b"})
	must(t, err)
	if _, err := st.Stat(ctx, "d/s.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file written before the first assistant message: %v", err)
	}
	if s.Persisted() {
		t.Fatal("Persisted before the first assistant message")
	}
	// Flush writes what the deferral held back: the prompt is durable.
	must(t, s.Flush(ctx))
	if lines := strings.Split(strings.TrimSpace(string(read(t, st, "d/s.jsonl"))), "\n"); len(lines) != 3 || !s.Persisted() {
		t.Fatalf("%d lines after Flush of a prompt, want header + 2", len(lines))
	}
	_, err = s.AppendMessage(ctx, assistantMsg("hello"))
	must(t, err)
	must(t, s.Flush(ctx))
	lines := strings.Split(strings.TrimSpace(string(read(t, st, "d/s.jsonl"))), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines after the first assistant, want header + 3", len(lines))
	}
	_, err = s.AppendMessage(ctx, userMsg("again"))
	must(t, err)
	must(t, s.Flush(ctx))
	lines = strings.Split(strings.TrimSpace(string(read(t, st, "d/s.jsonl"))), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines after an append, want 5", len(lines))
	}
	must(t, s.Close(ctx))
	if _, err := s.AppendMessage(ctx, userMsg("late")); !errors.Is(err, tree.ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
}

func TestCreateNeverReplacesAFile(t *testing.T) {
	st := newMem(t)
	must(t, st.WriteFile(ctx, "s.jsonl", []byte("precious\n")))
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w"})
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("x"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("err = %v, want fs.ErrExist", err)
	}
	if string(read(t, st, "s.jsonl")) != "precious\n" {
		t.Fatal("existing file replaced")
	}
}

// TestRoundTripEveryEntryType appends one entry of every type, reloads, and
// compares every entry with what was appended.
func TestRoundTripEveryEntryType(t *testing.T) {
	st := newMem(t)
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w", Title: "t", ParentSession: "p"}, tree.WithClock(fixedClock()))
	must(t, err)
	all := []tree.EntryData{
		&tree.SessionInit{SystemPrompt: "sys", Task: "task", Tools: []string{"read"}, OutputSchema: json.RawMessage(`{"type":"object"}`)},
		&tree.Message{Message: json.RawMessage(`{"role":"user","content":"hi <there> & you"}`)},
		&tree.Message{Message: assistantMsg("hello")},
		&tree.ThinkingLevelChange{ThinkingLevel: "high"},
		&tree.ModelChange{Model: "openai/gpt-4o", Role: "smol"},
		&tree.Compaction{Summary: "s", ShortSummary: "ss", FirstKeptEntryID: "x", TokensBefore: 1 << 40, Details: json.RawMessage(`{"a":[1,2]}`), PreserveData: json.RawMessage(`{"k":true}`), FromExtension: true},
		&tree.BranchSummary{FromID: "root", Summary: "b", Details: json.RawMessage(`{"n":1}`)},
		&tree.Custom{CustomType: "ext", Data: json.RawMessage(`{"state":{"deep":[null,1.5e300]}}`)},
		&tree.CustomMessage{CustomType: "ext", Content: json.RawMessage(`[{"type":"text","text":"c"}]`), Display: true, Details: json.RawMessage(`1`)},
		&tree.Label{TargetID: "t", Label: "l"},
		&tree.TtsrInjection{InjectedRules: []string{"r1", "r2"}},
		&tree.ModeChange{Mode: "plan", Data: json.RawMessage(`{"planFile":"/p"}`)},
		&tree.Unknown{Type: "future_thing", Fields: json.RawMessage(`{"n":123456789012345678901234567890,"s":"\u00e9","type":"ignored"}`)},
	}
	var appended []*tree.Entry
	for _, d := range all {
		// References name an entry of the file (the writing contract).
		switch v := d.(type) {
		case *tree.Compaction:
			v.FirstKeptEntryID = appended[0].ID()
		case *tree.Label:
			v.TargetID = appended[0].ID()
		}
		e, err := s.Append(ctx, d)
		must(t, err)
		appended = append(appended, e)
	}
	must(t, s.Close(ctx))
	s2, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	got := s2.Entries()
	if len(got) != len(all) {
		t.Fatalf("%d entries back, want %d", len(got), len(all))
	}
	for i, e := range got {
		if !jsonEqual(t, e.JSON(), appended[i].JSON()) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, e.JSON(), appended[i].JSON())
		}
		if e.Type() != all[i].EntryType() {
			t.Errorf("entry %d type %q", i, e.Type())
		}
		d, err := e.Data()
		must(t, err)
		if _, unknown := all[i].(*tree.Unknown); !unknown {
			want, _ := json.Marshal(all[i])
			have, _ := json.Marshal(d)
			if !jsonEqual(t, have, want) {
				t.Errorf("entry %d data:\n got %s\nwant %s", i, have, want)
			}
		}
		if i > 0 && e.ParentID() != got[i-1].ID() {
			t.Errorf("entry %d parent %q, want %q", i, e.ParentID(), got[i-1].ID())
		}
	}
	if got[0].ParentID() != "" || !strings.Contains(string(got[0].JSON()), `"parentId":null`) {
		t.Errorf("root entry: %s", got[0].JSON())
	}
	if !strings.Contains(string(got[12].JSON()), "123456789012345678901234567890") {
		t.Error("big number lost precision")
	}
	if h := s2.Header(); h.Title != "t" || h.ParentSession != "p" || h.Cwd != "/w" || h.Version != 3 || len(h.ID) != 16 {
		t.Errorf("header %+v", h)
	}
	if !strings.Contains(string(read(t, st, "s.jsonl")), "hi <there> & you") {
		t.Error("< > & escaped: JSON.stringify writes them as they are")
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	s, err := tree.Create(newMem(t), "s.jsonl", tree.Header{})
	must(t, err)
	for _, d := range []tree.EntryData{
		&tree.Message{Message: json.RawMessage(`"not an object"`)},
		&tree.Message{Message: json.RawMessage(`{"content":"no role"}`)},
		&tree.Message{Message: json.RawMessage(`{bad json`)},
		&tree.Unknown{Type: "x", Fields: json.RawMessage(`[1]`)},
		&tree.Unknown{Type: "session"},
		&tree.Unknown{Type: ""},
	} {
		if _, err := s.Append(ctx, d); !errors.Is(err, tree.ErrInvalid) {
			t.Errorf("%#v: err = %v, want ErrInvalid", d, err)
		}
	}
	if s.Len() != 0 {
		t.Errorf("rejected entries were kept: %d", s.Len())
	}
}

func TestLenientLoad(t *testing.T) {
	st := newMem(t)
	data := "garbage before the header\n" +
		"\n" +
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\r\n" +
		"   \n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"one"}}` + "\r\n" +
		"{not json\n" +
		`{"type":"session","id":"later-header-is-no-entry"}` + "\n" +
		`42` + "\n" +
		`{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","provider":"p","model":"m","content":[]}}` + "\n" +
		`{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","mess`
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	var p problems
	s, err := tree.Open(ctx, st, "s.jsonl", p.opt())
	must(t, err)
	if got := p.lines(tree.ErrCorrupt); fmt.Sprint(got) != "[1 6 10]" {
		t.Errorf("skipped lines %v, want [1 6 10]", got)
	}
	if s.Header().ID != "s1" {
		t.Errorf("header %+v", s.Header())
	}
	es := s.Entries()
	if len(es) != 3 || es[0].ID() != "a" || string(es[1].JSON()) != "42" || es[2].ID() != "b" {
		t.Fatalf("entries: %d", len(es))
	}
	if es[0].Line() != 5 || es[2].Line() != 9 {
		t.Errorf("lines %d %d", es[0].Line(), es[2].Line())
	}
	if got := p.lines(tree.ErrExtraHeader); fmt.Sprint(got) != "[7]" {
		t.Errorf("later header reported on lines %v, want [7]", got)
	}
	if s.Leaf().ID() != "b" {
		t.Errorf("leaf %q", s.Leaf().ID())
	}
	if n := len(s.Context().Messages); n != 2 {
		t.Errorf("%d messages", n)
	}
}

// TestTornTailEndedBeforeAppend: appending after a torn last line must not
// glue the new entry to it: the torn bytes, never acknowledged, are dropped
// first, and nothing before them changes.
func TestTornTailEndedBeforeAppend(t *testing.T) {
	st := newMem(t)
	data := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","provider":"p","model":"m","content":[]}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"us`
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	e, err := s.AppendMessage(ctx, userMsg("after the tear"))
	must(t, err)
	must(t, s.Close(ctx))
	got := string(read(t, st, "s.jsonl"))
	whole := data[:strings.LastIndexByte(data, '\n')+1]
	if !strings.HasPrefix(got, whole+"{") || strings.Contains(got, `"role":"us`+"\n") {
		t.Fatalf("torn line not dropped first:\n%s", got)
	}
	var p problems
	s2, err := tree.Open(ctx, st, "s.jsonl", p.opt())
	must(t, err)
	if s2.Entry(e.ID()) == nil || s2.Entry(e.ID()).ParentID() != "a" {
		t.Fatal("appended entry lost")
	}
	if p.count(tree.ErrCorrupt) != 0 {
		t.Errorf("the file holds a damaged line after the append: %v", p.list)
	}
}

func TestNoHeaderNeverOverwritten(t *testing.T) {
	for name, data := range map[string]string{
		"entry first":  `{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}` + "\n",
		"id not str":   `{"type":"session","id":5}` + "\n" + `{"type":"message","id":"a"}` + "\n",
		"number first": "garbage\n7\n" + `{"type":"session","id":"s"}` + "\n",
		"all garbage":  "not json\nnor this\n",
		"empty":        "",
	} {
		t.Run(name, func(t *testing.T) {
			st := newMem(t)
			must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
			s, err := tree.Open(ctx, st, "s.jsonl")
			must(t, err)
			if s.Len() != 0 || s.Leaf() != nil || len(s.Context().Messages) != 0 {
				t.Error("not empty")
			}
			if !errors.Is(s.Err(), tree.ErrNoHeader) {
				t.Errorf("Err = %v", s.Err())
			}
			if _, err := s.AppendMessage(ctx, assistantMsg("x")); !errors.Is(err, tree.ErrNoHeader) {
				t.Errorf("append: %v", err)
			}
			if err := s.SetTitle(ctx, "t"); !errors.Is(err, tree.ErrNoHeader) {
				t.Errorf("set title: %v", err)
			}
			if err := s.Rewrite(ctx); !errors.Is(err, tree.ErrNoHeader) {
				t.Errorf("rewrite: %v", err)
			}
			must(t, s.Close(ctx))
			if string(read(t, st, "s.jsonl")) != data {
				t.Error("file changed")
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := tree.Open(ctx, newMem(t), "nope.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestTreeAnomalies(t *testing.T) {
	st := newMem(t)
	h := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	msg := func(id, parent, text string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q}}`+"\n", id, p, text)
	}
	t.Run("duplicate id: the later wins", func(t *testing.T) {
		must(t, st.WriteFile(ctx, "d.jsonl", []byte(h+msg("a", "", "first a")+msg("a", "", "second a")+msg("b", "a", "b"))))
		var p problems
		s, err := tree.Open(ctx, st, "d.jsonl", p.opt())
		must(t, err)
		if p.count(tree.ErrDuplicateID) != 1 {
			t.Errorf("problems %v", p.list)
		}
		c := s.Context()
		if len(c.Messages) != 2 || !strings.Contains(string(c.Messages[0]), "second a") {
			t.Errorf("messages %s", c.Messages)
		}
	})
	t.Run("dangling parent ends the walk", func(t *testing.T) {
		must(t, st.WriteFile(ctx, "g.jsonl", []byte(h+msg("a", "", "a")+msg("b", "gone", "b")+msg("c", "b", "c"))))
		var p problems
		s, err := tree.Open(ctx, st, "g.jsonl", p.opt())
		must(t, err)
		if p.count(tree.ErrDanglingParent) != 1 {
			t.Errorf("problems %v", p.list)
		}
		if c := s.Context(); len(c.Messages) != 2 {
			t.Errorf("messages %s", c.Messages)
		}
	})
	t.Run("cycle ends the walk", func(t *testing.T) {
		must(t, st.WriteFile(ctx, "c.jsonl", []byte(h+msg("a", "c", "a")+msg("b", "a", "b")+msg("c", "b", "c")+msg("self", "self", "s"))))
		var p problems
		s, err := tree.Open(ctx, st, "c.jsonl", p.opt())
		must(t, err)
		if p.count(tree.ErrCycle) != 2 {
			t.Errorf("problems %v", p.list)
		}
		c, err := s.ContextAt("c")
		must(t, err)
		if len(c.Messages) != 3 {
			t.Errorf("messages %s", c.Messages)
		}
		if c := s.Context(); len(c.Messages) != 1 {
			t.Errorf("self loop: %s", c.Messages)
		}
		// Appending below a cycle works and persists.
		_, err = s.Branch("c"), nil
		must(t, err)
		_, err = s.AppendMessage(ctx, assistantMsg("x"))
		must(t, err)
	})
}

func TestBranchOperations(t *testing.T) {
	st := newMem(t)
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w"}, tree.WithClock(fixedClock()))
	must(t, err)
	u1, _ := s.AppendMessage(ctx, userMsg("u1"))
	a1, _ := s.AppendMessage(ctx, assistantMsg("a1"))
	u2, _ := s.AppendMessage(ctx, userMsg("u2"))
	a2, err := s.AppendMessage(ctx, assistantMsg("a2"))
	must(t, err)

	must(t, s.Branch(a1.ID()))
	u3, err := s.AppendMessage(ctx, userMsg("u3"))
	must(t, err)
	if u3.ParentID() != a1.ID() {
		t.Errorf("branch: parent %q, want %q", u3.ParentID(), a1.ID())
	}
	if err := s.Branch("nope"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("branch to unknown: %v", err)
	}

	s.ResetLeaf()
	if c := s.Context(); c.LeafID != "" || len(c.Messages) != 0 {
		t.Errorf("context after ResetLeaf: %+v", c)
	}
	root, err := s.AppendMessage(ctx, userMsg("new root"))
	must(t, err)
	if root.ParentID() != "" || !strings.Contains(string(root.JSON()), `"parentId":null`) {
		t.Errorf("after ResetLeaf: %s", root.JSON())
	}

	bs, err := s.BranchWithSummary(ctx, u2.ID(), tree.BranchSummary{Summary: "tried a2"})
	must(t, err)
	if bs.ParentID() != u2.ID() || !strings.Contains(string(bs.JSON()), `"fromId":"`+u2.ID()+`"`) {
		t.Errorf("branch summary %s", bs.JSON())
	}
	c := s.Context()
	last := c.Messages[len(c.Messages)-1]
	if !strings.Contains(string(last), `"role":"branchSummary"`) || !strings.Contains(string(last), "tried a2") {
		t.Errorf("last message %s", last)
	}
	bs2, err := s.BranchWithSummary(ctx, "", tree.BranchSummary{Summary: "from the start"})
	must(t, err)
	if bs2.ParentID() != "" || !strings.Contains(string(bs2.JSON()), `"fromId":"root"`) {
		t.Errorf("root branch summary %s", bs2.JSON())
	}

	_, err = s.SetLabel(ctx, a2.ID(), "keep")
	must(t, err)
	_, err = s.SetLabel(ctx, u1.ID(), "start")
	must(t, err)
	_, err = s.SetLabel(ctx, a2.ID(), "")
	must(t, err)
	if _, err := s.SetLabel(ctx, "nope", "x"); !errors.Is(err, tree.ErrNotFound) {
		t.Errorf("label unknown: %v", err)
	}
	must(t, s.SetTitle(ctx, "My title"))
	must(t, s.Close(ctx))

	s2, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	if got := s2.Labels(); len(got) != 1 || got[u1.ID()] != "start" {
		t.Errorf("labels after reload %v", got)
	}
	if s2.Header().Title != "My title" {
		t.Errorf("title %q", s2.Header().Title)
	}
	if s2.Len() != s.Len() {
		t.Errorf("%d entries after reload, want %d", s2.Len(), s.Len())
	}
	must(t, s2.SetTitle(ctx, ""))
	if strings.Contains(strings.SplitN(string(read(t, st, "s.jsonl")), "\n", 2)[0], "title") {
		t.Error("empty title still in the header")
	}
}

func TestLatchedError(t *testing.T) {
	fst := faulty.New(newMem(t))
	s, err := tree.Create(fst, "s.jsonl", tree.Header{Cwd: "/w"})
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("a"))
	must(t, err)
	boom := errors.New("disk on fire")
	fst.Inject(faulty.FailFrom(1, boom, "Writer.Write", "WriteFile"))
	e, err := s.AppendMessage(ctx, userMsg("lost"))
	if !errors.Is(err, boom) || e == nil {
		t.Fatalf("append: %v, %v", e, err)
	}
	fst.Clear()
	// The disk is fine again; the session still reports the first error.
	for _, step := range []struct {
		name string
		f    func() error
	}{
		{"append", func() error { _, err := s.AppendMessage(ctx, userMsg("x")); return err }},
		{"flush", func() error { return s.Flush(ctx) }},
		{"title", func() error { return s.SetTitle(ctx, "t") }},
		{"rewrite", func() error { return s.Rewrite(ctx) }},
		{"err", s.Err},
		{"close", func() error { return s.Close(ctx) }},
	} {
		if err := step.f(); !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the latched error", step.name, err)
		}
	}
	if s.Len() != 3 {
		t.Errorf("in-memory entries: %d", s.Len())
	}
}

func TestHostileFiles(t *testing.T) {
	h := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	ok := `{"type":"message","id":"ok","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"fine"}}` + "\n"
	big := `{"type":"message","id":"big","parentId":"ok","timestamp":"t","message":{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}}` + "\n"
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	deepObj := `{"type":"custom","id":"deep","parentId":"ok","data":` + strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000) + "}\n"
	for name, body := range map[string]string{
		"10MB line":     big,
		"deep array":    deep,
		"deep object":   deepObj,
		"invalid utf8":  `{"type":"message","id":"u","parentId":"ok","timestamp":"t","message":{"role":"user","content":"bad ` + "\xff\xfe" + ` bytes"}}` + "\n",
		"nul bytes":     "\x00\x00{\"type\":\"message\"}\x00\n" + `{"type":"message","id":"n","parentId":"ok","timestamp":"t","message":{"role":"user","content":"a\u0000b"}}` + "\n",
		"cycle":         `{"type":"message","id":"x","parentId":"y","message":{"role":"user","content":"x"}}` + "\n" + `{"type":"message","id":"y","parentId":"x","message":{"role":"user","content":"y"}}` + "\n",
		"only newlines": strings.Repeat("\n", 100000),
	} {
		t.Run(name, func(t *testing.T) {
			st := newMem(t)
			data := h + ok + body
			must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
			s, err := tree.Open(ctx, st, "s.jsonl", tree.WithReport(func(tree.Problem) {}))
			must(t, err)
			if s.Entry("ok") == nil {
				t.Fatal("good entry lost")
			}
			c := s.Context()
			out, err := json.Marshal(c)
			must(t, err)
			if !json.Valid(out) {
				t.Fatal("context is not valid JSON")
			}
			_, err = s.AppendMessage(ctx, assistantMsg("still works"))
			must(t, err)
			must(t, s.Close(ctx))
			if !strings.HasPrefix(string(read(t, st, "s.jsonl")), data) {
				t.Error("existing bytes changed by an append")
			}
		})
	}
}

func TestByteOrderMark(t *testing.T) {
	st := newMem(t)
	data := "\xef\xbb\xbf" + `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}` + "\n"
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	if s.Header().ID != "s1" || s.Len() != 1 {
		t.Errorf("a BOM hid the header: %+v, %d entries", s.Header(), s.Len())
	}
}

func TestChildrenOfRootIncludeOrphans(t *testing.T) {
	st := newMem(t)
	data := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		`{"type":"custom","id":"a","parentId":null}` + "\n" +
		`{"type":"custom","id":"b","parentId":"gone"}` + "\n" +
		`{"type":"custom","id":"c","parentId":"a"}` + "\n"
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	var p problems
	s, err := tree.Open(ctx, st, "s.jsonl", p.opt())
	must(t, err)
	if got := ids(s.Children("")); fmt.Sprint(got) != "[a b]" {
		t.Errorf("roots %v", got)
	}
	if got := ids(s.Children("a")); fmt.Sprint(got) != "[c]" {
		t.Errorf("children of a: %v", got)
	}
}

func TestMigrationReported(t *testing.T) {
	st := newMem(t)
	putFixture(t, st, "v2.jsonl", "s.jsonl")
	var p problems
	_, err := tree.Open(ctx, st, "s.jsonl", p.opt())
	must(t, err)
	if p.count(tree.ErrMigrated) != 1 || len(p.list) != 1 {
		t.Errorf("problems %v, want one ErrMigrated", p.list)
	}
}

func TestIDsUniqueWithoutRandomness(t *testing.T) {
	s, err := tree.Create(newMem(t), "s.jsonl", tree.Header{}, tree.WithRandom(strings.NewReader("")),
		tree.WithClock(func() time.Time { return time.Unix(0, 0) }))
	must(t, err)
	seen := map[string]bool{}
	for range 200 {
		e, err := s.AppendMessage(ctx, userMsg("x"))
		must(t, err)
		if seen[e.ID()] || len(e.ID()) != 8 {
			t.Fatalf("id %q repeated or malformed", e.ID())
		}
		seen[e.ID()] = true
	}
}
