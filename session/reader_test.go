package session_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trovekit/trove/session/tree"
)

const h1 = `{"type":"session","version":3,"id":"s1","timestamp":"2026-02-16T10:00:00.000Z","cwd":"/w"}`

// A later header is never an entry: not the leaf, not a parent, never
// replacing an entry; it stays in the file through a rewrite.
func TestLaterHeaderIsNoEntry(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	for name, tc := range map[string]struct {
		data, leaf, context string
	}{
		"smallest": {h1 + "\n" +
			`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-02-16T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n" +
			`{"type":"session","version":3,"id":"s2","timestamp":"2026-02-16T10:00:02.000Z","cwd":"/x"}` + "\n", "a1", "hi"},
		"parent through a later header": {h1 + "\n" +
			`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-02-16T10:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}}` + "\n" +
			`{"type":"session","version":3,"id":"s2","parentId":"a1","timestamp":"2026-02-16T10:00:02.000Z","cwd":"/x"}` + "\n" +
			`{"type":"message","id":"b1","parentId":"s2","timestamp":"2026-02-16T10:00:03.000Z","message":{"role":"user","content":"second","timestamp":2}}` + "\n", "b1", "second"},
		"a header reusing an entry's id": {h1 + "\n" +
			`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-02-16T10:00:01.000Z","message":{"role":"user","content":"kept","timestamp":1}}` + "\n" +
			`{"type":"session","version":3,"id":"a1","timestamp":"2026-02-16T10:00:02.000Z","cwd":"/x"}` + "\n" +
			`{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-02-16T10:00:03.000Z","message":{"role":"user","content":"next","timestamp":2}}` + "\n", "b1", "kept next"},
	} {
		t.Run(name, func(t *testing.T) {
			must(t, st.WriteFile(ctx, "s.jsonl", []byte(tc.data)))
			var p problems
			s, err := tree.Open(ctx, st, "s.jsonl", p.opt())
			must(t, err)
			if s.Leaf() == nil || s.Leaf().ID() != tc.leaf {
				t.Fatalf("leaf %v, want %s", s.Leaf(), tc.leaf)
			}
			var texts []string
			for _, m := range s.Context().Messages {
				texts = append(texts, tree.MessageText(m))
			}
			if strings.Join(texts, " ") != tc.context {
				t.Errorf("context %q, want %q", strings.Join(texts, " "), tc.context)
			}
			if p.count(tree.ErrExtraHeader) != 1 {
				t.Errorf("later header not reported: %v", p.list)
			}
			// Preserved on rewrite, and still no entry after it.
			must(t, s.SetTitle(ctx, "titled"))
			must(t, s.Close(ctx))
			got := string(read(t, st, "s.jsonl"))
			if strings.Count(got, `"type":"session"`) != 2 {
				t.Errorf("the later header did not survive a rewrite:\n%s", got)
			}
			s2, err := tree.Open(ctx, st, "s.jsonl")
			must(t, err)
			if s2.Leaf().ID() != tc.leaf {
				t.Errorf("after the rewrite the leaf is %s", s2.Leaf().ID())
			}
		})
	}
}

// Values stay as written where trove passes them through.
func TestValuesAsWritten(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	data := h1 + "\n" +
		`{"type":"model_change","model":5,"role":"plan","id":"m1","parentId":null,"timestamp":"2026-02-16T10:00:01.000Z"}` + "\n" +
		`{"type":"model_change","model":"p/m","id":"m2","parentId":"m1","timestamp":"2026-02-16T10:00:02.000Z","extra":{"n":1.50}}` + "\n" +
		`{"type":"mode_change","mode":7,"id":"m3","parentId":"m2","timestamp":"2026-02-16T10:00:03.000Z"}` + "\n"
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	s, err := tree.Open(ctx, st, "s.jsonl")
	must(t, err)
	b, err := json.Marshal(s.Context())
	must(t, err)
	if !strings.Contains(string(b), `"models":{"plan":5,"default":"p/m"}`) || !strings.Contains(string(b), `"mode":7`) {
		t.Errorf("models not as written: %s", b)
	}
	if got := string(s.Entry("m2").JSON()); !strings.Contains(got, `"extra":{"n":1.50}`) {
		t.Errorf("unknown field not kept as written: %s", got)
	}
}

// Invalid UTF-8 reads as the reference reads it: the WHATWG decoder's one
// U+FFFD per maximal ill-formed subpart, in message text and in ids (so
// "a\xe2\x82" names the same entry as "a\uFFFD"), and the file keeps its
// bytes.
func TestInvalidUTF8AsReference(t *testing.T) {
	ctx := context.Background()
	st := newMem(t)
	data := h1 + "\n" +
		`{"type":"message","id":"a` + "\xe2\x82" + `","parentId":null,"timestamp":"2026-02-16T10:00:01.000Z","message":{"role":"user","content":"x` + "\xe2\x82" + ` y` + "\xed\xa0\x80" + ` z` + "\xf0\x9f\x98" + ` w` + "\xc0\x80\xf5" + `","timestamp":1}}` + "\n" +
		`{"type":"message","id":"b1","parentId":"a` + "\uFFFD" + `","timestamp":"2026-02-16T10:00:02.000Z","message":{"role":"user","content":"next","timestamp":2}}` + "\n"
	must(t, st.WriteFile(ctx, "s.jsonl", []byte(data)))
	var p problems
	s, err := tree.Open(ctx, st, "s.jsonl", tree.ReadOnly(), p.opt())
	must(t, err)
	if n := p.count(tree.ErrDanglingParent); n != 0 {
		t.Errorf("b1's parent a\\uFFFD not found: %v", p.list)
	}
	if s.Entry("a\uFFFD") == nil {
		t.Fatalf("no entry a\\uFFFD: %v", s.Entries())
	}
	msgs := s.Context().Messages
	if len(msgs) != 2 {
		t.Fatalf("context of %d messages, want 2", len(msgs))
	}
	want := "x\uFFFD y\uFFFD\uFFFD\uFFFD z\uFFFD w\uFFFD\uFFFD\uFFFD"
	if got := tree.MessageText(msgs[0]); got != want {
		t.Errorf("message text %q, want %q", got, want)
	}
	out, err := json.Marshal(s.Context())
	must(t, err)
	var back struct {
		Messages []struct{ Content string }
	}
	must(t, json.Unmarshal(out, &back))
	if len(back.Messages) != 2 || back.Messages[0].Content != want {
		t.Errorf("context JSON %s, want content %q", out, want)
	}
	if got := string(read(t, st, "s.jsonl")); got != data {
		t.Error("reading changed the file")
	}
}
