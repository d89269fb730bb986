package tree

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trovekit/trove/internal/jsonscan"
)

// PrepareMessage writes what the plain path (split, then EditObject)
// writes, byte for byte, and reads the totals of what it writes.
func TestPrepareMessageAsEditObject(t *testing.T) {
	for _, msg := range []string{
		`{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}}`,
		`{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}}`,
		`{"role":"assistant","content":"x"}`,
		`{"role":"assistant","model":null,"usage":{"input":5,"output":7}}`,
		`{"role":"assistant","usage":{"input":5,"output":7,"cost":{"input":1.5}}}`,
		`{"role":"assistant","api":"a","provider":"p","model":"m","usage":null}`,
		`{ "role" : "assistant", "content" : [ ] }`,
		`{"role":"assistant","usage":{"input":1e3,"output":-2,"totalTokens":0}}`,
		`{"role":"user","content":"hi","usage":{"input":1,"output":2,"total_tokens":9,"cost":{"total":0.5}}}`,
		`{"role":"toolResult","toolCallId":"t","content":[{"type":"text","text":"ok"}],"isError":false}`,
	} {
		p, err := PrepareMessage(json.RawMessage(msg))
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		var compact bytes.Buffer
		json.Compact(&compact, []byte(msg))
		ms, _ := jsonscan.SplitObject(compact.Bytes())
		want := compact.Bytes()
		if r, _ := ms.Str("role"); r == "assistant" {
			if fixed, err := normalizeAssistant(ms); err != nil {
				t.Fatal(err)
			} else if fixed != nil {
				want = fixed
			}
		}
		if !bytes.Equal(p.Message(), want) {
			t.Errorf("%s:\n got %s\nwant %s", msg, p.Message(), want)
		}
		wms, _ := jsonscan.SplitObject(want)
		if u, w := p.Usage(), usageOf(p.Role(), wms); u != w {
			t.Errorf("%s: usage %+v, read from what is written %+v", msg, u, w)
		}
		// And an entry loaded from the file reads the same totals.
		e := newEntry([]byte(`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":`+string(want)+`}`), 1)
		if u := e.Usage(); u != p.Usage() {
			t.Errorf("%s: loaded usage %+v, prepared %+v", msg, u, p.Usage())
		}
	}
}

func TestPrepareMessageRefuses(t *testing.T) {
	for _, msg := range []string{``, `[]`, `"x"`, `{"role":"user"`, `{"content":"no role"}`, `{"role":""}`, `{"role":5}`,
		`{"role":"assistant","model":5}`, `{"role":"assistant","usage":{"input":"5"}}`, `{"role":"assistant","usage":[]}`, `{"role":"user"} x`} {
		if _, err := PrepareMessage(json.RawMessage(msg)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", msg, err)
		}
	}
}

// A message prepared in a copy of its own is framed in that copy: the
// same line as framed apart, for short and long ids, added members or none.
func TestFrameInPlaceAsApart(t *testing.T) {
	long := strings.Repeat("p", 200)
	for _, msg := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":"x"}`,
		`{"role":"assistant","content":"x","api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}}`,
		`{ "role" : "user" }`,
		`{"role":"assistant","usage":{"input":5}}`,
	} {
		for _, parent := range []string{"", "abcd1234", long} {
			apart, err := PrepareMessage(json.RawMessage(msg))
			if err != nil {
				t.Fatal(err)
			}
			buf := []byte(msg)
			own, err := PrepareMessageCopy(buf)
			if err != nil {
				t.Fatal(err)
			}
			copy(buf, strings.Repeat("#", len(buf))) // the caller reuses its buffer
			wantLine, wantMsg := frameMessage(apart, "e1e2e3e4", parent, "2026-11-24T10:00:00.000Z")
			line, inLine := frameMessage(own, "e1e2e3e4", parent, "2026-11-24T10:00:00.000Z")
			if !bytes.Equal(line, wantLine) || !bytes.Equal(inLine, wantMsg) || !bytes.Equal(own.Message(), wantMsg) {
				t.Errorf("%s, parent %.10q:\n got %s\nwant %s", msg, parent, line, wantLine)
			}
			if !json.Valid(line) {
				t.Errorf("%s: not JSON: %s", msg, line)
			}
		}
	}
}

// Whatever the bytes, PrepareMessage refuses them with ErrInvalid or
// returns a message whose entry line is valid JSON holding it, framed the
// same in place and apart, and the same the other way (no panic).
func FuzzPrepareMessage(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":"x","usage":{"input":1}}`,
		`{"role":"assistant","api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.3}}}`,
		`{ "r\u006fle" : "assistant" , "usage" : null }`,
		`{"role":"user","content":[{"type":"image","data":"AAAA"}],"partialJson":"{"}`,
		`{"role":"assistant","model":5}`, `[]`, `{"role":"user"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		apart, err := PrepareMessage(bytes.Clone(msg))
		own, err2 := PrepareMessageCopy(msg)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("PrepareMessage %v, PrepareMessageCopy %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refused without ErrInvalid: %v", err)
			}
			return
		}
		line, inLine := frameMessage(apart, "e1e2e3e4", "abcd1234", "2026-11-24T10:00:00.000Z")
		line2, _ := frameMessage(own, "e1e2e3e4", "abcd1234", "2026-11-24T10:00:00.000Z")
		if !bytes.Equal(line, line2) {
			t.Fatalf("framed in place:\n%s\napart:\n%s", line2, line)
		}
		if !json.Valid(line) || !json.Valid(inLine) {
			t.Fatalf("not JSON: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal(inLine, &m); err != nil || m["role"] == nil {
			t.Fatalf("the message in its line has no role: %s", inLine)
		}
	})
}

// completeUsage, where it answers, says what numbers and usageFrom say:
// nothing to complete, and the same totals.
func TestCompleteUsageAsNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{`"input"`, `"output"`, `"cacheRead"`, `"cacheWrite"`, `"totalTokens"`, `"total_tokens"`, `"inp\u0075t"`, `"other"`}
	costKeys := []string{`"input"`, `"output"`, `"cacheRead"`, `"cacheWrite"`, `"total"`, `"tot\u0061l"`, `"x"`}
	vals := []string{`0`, `12`, `1200`, `-3`, `2.5`, `1e3`, `null`, `"7"`, `{}`, `9007199254740993`}
	object := func(keys []string, inner string) string {
		var b strings.Builder
		b.WriteByte('{')
		n := 0
		for _, k := range keys {
			for range rng.IntN(3) { // absent, once, or twice
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				b.WriteString(k + ":" + vals[rng.IntN(len(vals))])
			}
		}
		if inner != "" {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"cost":` + inner)
		}
		b.WriteByte('}')
		return b.String()
	}
	answered := 0
	for range 20000 {
		// Mostly complete objects, so that both sides are tried.
		full := func(ks []string) []string {
			if rng.IntN(4) == 0 {
				return ks
			}
			return ks[:5]
		}
		cost := object(full(costKeys), "")
		if rng.IntN(8) == 0 {
			cost = vals[rng.IntN(len(vals))]
		}
		usage := []byte(object(full(keys), cost))
		if rng.IntN(2) == 0 {
			// Every key once, as a complete usage has it; a value now and
			// then not a number.
			v := func() string {
				if rng.IntN(10) == 0 {
					return vals[rng.IntN(len(vals))]
				}
				return vals[rng.IntN(6)]
			}
			cost = `{"input":` + v() + `,"output":` + v() + `,"cacheRead":` + v() + `,"cacheWrite":` + v() + `,"total":` + v() + `}`
			usage = []byte(`{"input":` + v() + `,"output":` + v() + `,"cacheRead":` + v() + `,"cacheWrite":` + v() + `,"totalTokens":` + v() + `,"cost":` + cost + `}`)
		}
		u, ok := completeUsage(usage)
		if !ok {
			continue
		}
		answered++
		fixed, err := numbers(usage, "usage", usageKeys, "totalTokens", true)
		if err != nil || fixed != nil {
			t.Fatalf("%s: completeUsage answered, numbers says %s, %v", usage, fixed, err)
		}
		if want := usageFrom("assistant", nil, usage); u != want {
			t.Fatalf("%s: completeUsage = %+v, usageFrom = %+v", usage, u, want)
		}
	}
	if answered < 1000 {
		t.Fatalf("completeUsage answered %d of 20,000: the test tries too little", answered)
	}
}
