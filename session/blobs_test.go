package session_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session/tree"
)

func newCAS(t testing.TB, st backend.Storage) *cas.Store {
	t.Helper()
	c, err := cas.Open(context.Background(), st)
	must(t, err)
	return c
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	must(t, err)
	return b
}

// fileLine returns the stored line of the entry id.
func fileLine(t *testing.T, st backend.Storage, name, id string) string {
	t.Helper()
	for _, line := range strings.Split(string(read(t, st, name)), "\n") {
		if strings.Contains(line, `"id":"`+id+`"`) {
			return line
		}
	}
	t.Fatalf("entry %s not in the file", id)
	return ""
}

func imageMessage(big, small, odd string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"role": "user",
		"content": []any{
			map[string]any{"type": "text", "text": "look"},
			map[string]any{"type": "image", "data": big, "mimeType": "image/png"},
			map[string]any{"type": "image", "data": small, "mimeType": "image/png"},
			map[string]any{"type": "image", "data": odd, "mimeType": "image/png"},
		},
	})
	return b
}

func TestImagesExternalized(t *testing.T) {
	st := newMem(t)
	blobs := newCAS(t, st)
	raw := randomBytes(t, 3000)
	big := base64.StdEncoding.EncodeToString(raw)
	small := base64.StdEncoding.EncodeToString(raw[:600]) // 800 chars: stays inline
	odd := base64.RawStdEncoding.EncodeToString(raw[:2000]) + "\n"
	msg := imageMessage(big, small, odd)
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w"}, tree.WithBlobStore(blobs))
	must(t, err)
	e, err := s.AppendMessage(ctx, msg)
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("nice"))
	must(t, err)
	must(t, s.Close(ctx))

	line := fileLine(t, st, "s.jsonl", e.ID())
	sum := sha256.Sum256(raw)
	ref := "blob:sha256:" + hex.EncodeToString(sum[:])
	if !strings.Contains(line, `"data":"`+ref+`"`) || strings.Contains(line, big) {
		t.Fatalf("big image not externalized: %.300s", line)
	}
	if !strings.Contains(line, small) {
		t.Error("small image (< 1024 chars) must stay inline")
	}
	if !strings.Contains(line, base64.RawStdEncoding.EncodeToString(raw[:2000])) {
		t.Error("non-canonical base64 must stay inline (it would not come back byte for byte)")
	}
	r, _ := cas.ParseRef(ref)
	got, err := blobs.Get(ctx, r)
	must(t, err)
	if string(got) != string(raw) {
		t.Error("blob holds something else than the decoded image")
	}

	// Load resolves the ref back to the same base64.
	s2, err := tree.Open(ctx, st, "s.jsonl", tree.WithBlobStore(blobs))
	must(t, err)
	back := s2.Entry(e.ID())
	if !jsonEqual(t, back.Field("message"), msg) {
		t.Errorf("image not resolved back:\n%.300s", back.Field("message"))
	}
	if !jsonEqual(t, s2.Context().Messages[0], msg) {
		t.Error("context message differs from the stored one")
	}
	// A rewrite keeps the ref: the resolved form never reaches the file.
	must(t, s2.Rewrite(ctx))
	if line := fileLine(t, st, "s.jsonl", e.ID()); !strings.Contains(line, ref) || strings.Contains(line, big) {
		t.Error("rewrite inlined the image")
	}
}

func TestMissingAndCorruptBlobs(t *testing.T) {
	st := newMem(t)
	blobs := newCAS(t, st)
	raw := randomBytes(t, 2000)
	msg := imageMessage(base64.StdEncoding.EncodeToString(raw), "", "")
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w"}, tree.WithBlobStore(blobs))
	must(t, err)
	e, err := s.AppendMessage(ctx, msg)
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("ok"))
	must(t, err)
	must(t, s.Close(ctx))
	fileBefore := read(t, st, "s.jsonl")
	sum := sha256.Sum256(raw)
	ref, _ := cas.ParseRef("blob:sha256:" + hex.EncodeToString(sum[:]))

	check := func(t *testing.T, opts []tree.Option, want error) {
		t.Helper()
		var p problems
		s, err := tree.Open(ctx, st, "s.jsonl", append(opts, p.opt())...)
		must(t, err)
		if p.count(tree.ErrBlob) != 1 || (want != nil && p.count(want) != 1) {
			t.Fatalf("problems %v, want one tree.ErrBlob wrapping %v", p.list, want)
		}
		m := string(s.Entry(e.ID()).Field("message"))
		if !strings.Contains(m, `"type":"text","text":"[trove: image blob:sha256:`) || !strings.Contains(m, "unavailable") {
			t.Errorf("no placeholder: %.400s", m)
		}
		if len(s.Context().Messages) != 2 {
			t.Error("context lost messages")
		}
		// The placeholder never reaches the file.
		must(t, s.Rewrite(ctx))
		if string(read(t, st, "s.jsonl")) != string(fileBefore) {
			t.Error("file changed by a rewrite after a failed resolution")
		}
	}
	t.Run("no blob store", func(t *testing.T) { check(t, nil, nil) })
	t.Run("corrupt", func(t *testing.T) {
		var obj string
		for fi, err := range backend.Walk(ctx, st, "blobs") {
			must(t, err)
			if !fi.IsDir && strings.Contains(fi.Name, ref.Hex()) {
				obj = fi.Name
			}
		}
		if obj == "" {
			t.Fatal("blob object not found")
		}
		data := read(t, st, obj)
		good := append([]byte(nil), data...)
		data[len(data)-1] ^= 0xff
		must(t, st.WriteFile(ctx, obj, data))
		check(t, []tree.Option{tree.WithBlobStore(newCAS(t, st))}, cas.ErrCorrupt)
		must(t, st.WriteFile(ctx, obj, good))
	})
	t.Run("missing", func(t *testing.T) {
		must(t, blobs.Delete(ctx, ref))
		check(t, []tree.Option{tree.WithBlobStore(blobs)}, fs.ErrNotExist)
	})
}

func toolResult(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": false, "timestamp": 1,
	})
	return b
}

func TestToolOutputExternalized(t *testing.T) {
	st := newMem(t)
	blobs := newCAS(t, st)
	long := strings.Repeat("line of output\n", 10000) // 150 KB
	short := "small output"
	s, err := tree.Create(st, "s.jsonl", tree.Header{Cwd: "/w"}, tree.WithBlobStore(blobs))
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("run"))
	must(t, err)
	el, err := s.AppendMessage(ctx, toolResult(long))
	must(t, err)
	es, err := s.AppendMessage(ctx, toolResult(short))
	must(t, err)
	// Only tool results: a long user message stays inline.
	eu, err := s.AppendMessage(ctx, userMsg(long))
	must(t, err)
	must(t, s.Close(ctx))

	line := fileLine(t, st, "s.jsonl", el.ID())
	if len(line) > 1000 || !strings.Contains(line, `"textRef":"blob:sha256:`) || !strings.Contains(line, "[trove: tool output of 150000 bytes stored as blob:sha256:") {
		t.Fatalf("long tool output not externalized: %.500s", line)
	}
	if !strings.Contains(fileLine(t, st, "s.jsonl", es.ID()), short) || len(fileLine(t, st, "s.jsonl", eu.ID())) < len(long) {
		t.Error("small tool output or user text externalized")
	}
	s2, err := tree.Open(ctx, st, "s.jsonl", tree.WithBlobStore(blobs))
	must(t, err)
	if !jsonEqual(t, s2.Entry(el.ID()).Field("message"), toolResult(long)) {
		t.Error("tool output not resolved back")
	}

	// A custom threshold, and 0 for never.
	for _, tc := range []struct {
		threshold int
		external  bool
	}{{5, true}, {0, false}} {
		s, err := tree.Create(st, "t"+string(rune('0'+tc.threshold))+".jsonl", tree.Header{}, tree.WithBlobStore(blobs), tree.WithToolResultThreshold(tc.threshold))
		must(t, err)
		_, err = s.AppendMessage(ctx, assistantMsg("run"))
		must(t, err)
		e, err := s.AppendMessage(ctx, toolResult(short))
		must(t, err)
		must(t, s.Close(ctx))
		if got := strings.Contains(fileLine(t, st, s.Name(), e.ID()), "textRef"); got != tc.external {
			t.Errorf("threshold %d: externalized = %v", tc.threshold, got)
		}
	}
}

func TestTruncationAndTransientFields(t *testing.T) {
	st := newMem(t)
	// A surrogate pair straddles the cut point.
	limit := tree.MaxPersistChars - len(utf16.Encode([]rune(tree.TruncationNotice)))
	long := strings.Repeat("a", limit-1) + "😀" + strings.Repeat("b", 200000)
	sig := strings.Repeat("s", 600000)
	msg, _ := json.Marshal(map[string]any{
		"role": "assistant", "api": "a", "provider": "p", "model": "m",
		"usage": map[string]any{"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"content": []any{
			map[string]any{"type": "text", "text": long},
			map[string]any{"type": "thinking", "thinking": sig, "thinkingSignature": "sig"},
			map[string]any{"type": "toolCall", "id": "1", "name": "x", "arguments": map[string]any{}, "partialJson": "{\"a"},
			map[string]any{"type": "file", "content": long, "lineCount": 7},
		},
		"jsonlEvents": []any{"e1", "e2"},
	})
	s, err := tree.Create(st, "s.jsonl", tree.Header{}, tree.WithToolResultThreshold(0))
	must(t, err)
	e, err := s.AppendMessage(ctx, msg)
	must(t, err)
	must(t, s.Close(ctx))
	if !jsonEqual(t, e.Field("message"), msg) {
		t.Error("the in-memory entry must stay whole")
	}
	var stored struct {
		Message struct {
			Content []map[string]any `json:"content"`
			Events  any              `json:"jsonlEvents"`
		} `json:"message"`
	}
	must(t, json.Unmarshal([]byte(fileLine(t, st, "s.jsonl", e.ID())), &stored))
	c := stored.Message.Content
	text := c[0]["text"].(string)
	units := utf16.Encode([]rune(text))
	if len(units) > tree.MaxPersistChars || !strings.HasSuffix(text, tree.TruncationNotice) {
		t.Errorf("truncated text: %d units", len(units))
	}
	if want := strings.Repeat("a", limit-1) + tree.TruncationNotice; text != want {
		t.Errorf("cut splits the surrogate pair or cuts elsewhere (len %d, want %d)", len(text), len(want))
	}
	if c[1]["thinking"] != sig {
		t.Error("a signed thinking block must be written whole")
	}
	if _, ok := c[2]["partialJson"]; ok || stored.Message.Events != nil {
		t.Error("transient fields written")
	}
	// The cut content is one line plus the notice's two newlines.
	if c[3]["lineCount"] != 3.0 {
		t.Errorf("lineCount = %v, want 3 (recomputed after the cut)", c[3]["lineCount"])
	}
}

// A short message's transient fields are dropped too, their keys written
// plainly or escaped.
func TestShortTransientFieldsDropped(t *testing.T) {
	st := newMem(t)
	s, err := tree.Create(st, "s.jsonl", tree.Header{})
	must(t, err)
	var ids []string
	for _, msg := range []string{
		`{"role":"user","content":[{"type":"toolCall","id":"1","name":"x","arguments":{},"partialJson":"{"}]}`,
		`{"role":"user","content":[{"type":"toolCall","id":"1","name":"x","arguments":{},"partial\u004Ason":"{"}]}`,
		`{"role":"user","content":"x","jsonlEvents":["e"]}`,
	} {
		e, err := s.AppendMessage(ctx, json.RawMessage(msg))
		must(t, err)
		ids = append(ids, e.ID())
	}
	must(t, s.Flush(ctx))
	must(t, s.Close(ctx))
	for _, id := range ids {
		if line := fileLine(t, st, "s.jsonl", id); strings.Contains(line, "partialJson") || strings.Contains(line, "u004Ason") || strings.Contains(line, "jsonlEvents") {
			t.Errorf("a transient field written: %s", line)
		}
	}
}

// failingBlobs fails every Put: the error must latch like a write error.
type failingBlobs struct{}

var errBlobDown = errors.New("blob store down")

func (failingBlobs) Put(context.Context, []byte) (cas.Ref, error) { return cas.Ref{}, errBlobDown }
func (failingBlobs) PutReader(context.Context, io.Reader) (cas.Ref, error) {
	return cas.Ref{}, errBlobDown
}
func (failingBlobs) Get(context.Context, cas.Ref) ([]byte, error) { return nil, errBlobDown }
func (failingBlobs) Open(context.Context, cas.Ref) (io.ReadCloser, error) {
	return nil, errBlobDown
}
func (failingBlobs) Has(context.Context, cas.Ref) (bool, error) { return false, errBlobDown }

func TestBlobPutErrorLatched(t *testing.T) {
	st := newMem(t)
	s, err := tree.Create(st, "s.jsonl", tree.Header{}, tree.WithBlobStore(failingBlobs{}))
	must(t, err)
	_, err = s.AppendMessage(ctx, assistantMsg("hi"))
	must(t, err)
	_, err = s.AppendMessage(ctx, imageMessage(base64.StdEncoding.EncodeToString(randomBytes(t, 2000)), "", ""))
	if !errors.Is(err, errBlobDown) {
		t.Fatalf("err = %v", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, errBlobDown) {
		t.Errorf("flush: %v", err)
	}
}
