package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session/tree"
)

// png1x1 is a valid 1x1 PNG.
var png1x1 = []byte{0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0, 5, 0, 1, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82}

const hostile = `<script>document.title="PWNED";document.body.setAttribute("data-pwned","1")</script><img src=x onerror="document.title='PWNED'">`

func msg(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixture builds a session with thinking, a tool call and a long output,
// an image, a hostile message, a compaction, a label and a second branch.
func fixture(t *testing.T) *tree.Session {
	t.Helper()
	ctx := context.Background()
	s, err := tree.Create(mem.New(), "s.jsonl", tree.Header{ID: "sess-1", Cwd: "/work/demo", Title: "Fix the parser"}, tree.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	add := func(v any) *tree.Entry {
		e, err := s.AppendMessage(ctx, msg(t, v))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	u1 := add(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "Why does parse() fail? " + hostile},
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png1x1)},
	}})
	add(map[string]any{"role": "assistant", "model": "demo-model", "content": []any{
		map[string]any{"type": "thinking", "thinking": "SECRET-THOUGHT: read the file first"},
		map[string]any{"type": "toolCall", "id": "c1", "name": "read_file", "arguments": map[string]any{"path": "parser.go"}},
	}})
	add(map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "read_file", "content": []any{
		map[string]any{"type": "text", "text": strings.Repeat("LONG-OUTPUT line\n", 200)},
	}})
	a2 := add(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "The loop exits early."}}})
	if _, err := s.SetLabel(ctx, a2.ID(), "root-cause"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, &tree.Compaction{Summary: "COMPACTED-SUMMARY", FirstKeptEntryID: a2.ID(), TokensBefore: 1234}); err != nil {
		t.Fatal(err)
	}
	// Another branch from the first user message, then back to the main one.
	main := s.Leaf().ID()
	if err := s.Branch(u1.ID()); err != nil {
		t.Fatal(err)
	}
	add(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "OTHER-BRANCH reply"}}})
	if err := s.Branch(main); err != nil {
		t.Fatal(err)
	}
	add(map[string]any{"role": "user", "content": "MAIN-LEAF thanks"})
	return s
}

func TestHTML(t *testing.T) {
	s := fixture(t)
	var buf bytes.Buffer
	if err := HTML(context.Background(), &buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Fix the parser", "Why does parse() fail?", "SECRET-THOUGHT", "read_file", `&#34;path&#34;: &#34;parser.go&#34;`,
		"COMPACTED-SUMMARY", "root-cause", "OTHER-BRANCH reply", "MAIN-LEAF thanks",
		`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(png1x1) + `"`,
		"prefers-color-scheme: dark", "Other branches",
		// the hostile text is shown escaped
		"&lt;script&gt;document.title=", "onerror=&#34;document.title",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// Thinking and the long output are folded.
	if !regexp.MustCompile(`(?s)<details class="thinking"><summary>thinking</summary><div class="text">SECRET-THOUGHT`).MatchString(out) {
		t.Error("thinking not folded")
	}
	if !regexp.MustCompile(`(?s)<details><summary>output \(\d+ bytes\)</summary><pre>LONG-OUTPUT`).MatchString(out) {
		t.Error("long tool output not folded")
	}
	// Every entry has an anchor and a link in the tree.
	for _, e := range s.Entries() {
		if !strings.Contains(out, `id="e-`+e.ID()+`"`) || !strings.Contains(out, `href="#e-`+e.ID()+`"`) {
			t.Errorf("entry %s (%s) has no anchor or tree link", e.ID(), e.Type())
		}
	}
	// A label's tree line says what it labels.
	if !regexp.MustCompile(`>label: label &#34;root-cause&#34; on [0-9a-f]{8}</a>`).MatchString(out) {
		t.Error("the label's tree line does not name its label")
	}
	// The leaf is highlighted in the tree.
	if !strings.Contains(out, `href="#e-`+s.Leaf().ID()+`" class="on leaf"`) {
		t.Error("leaf not highlighted in the tree")
	}
	// Nothing from the session made it out as markup, and nothing is fetched.
	if strings.Contains(out, "<script") || strings.Contains(out, "<img src=x") {
		t.Error("hostile markup emitted unescaped")
	}
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9]`).FindString(out); m != "" {
		t.Errorf("HTML references a URL: %q", m)
	}
}

func TestHTMLSkipsSVGImages(t *testing.T) {
	ctx := context.Background()
	s, _ := tree.Create(mem.New(), "s.jsonl", tree.Header{ID: "x"}, tree.InMemory())
	svg := base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))
	if _, err := s.AppendMessage(ctx, msg(t, map[string]any{"role": "user", "content": []any{map[string]any{"type": "image", "mimeType": "image/svg+xml", "data": svg}}})); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(ctx, &buf, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "data:image/svg") || !strings.Contains(buf.String(), "[image image/svg") {
		t.Error("an SVG image must be described, not inlined")
	}
}

func TestMarkdown(t *testing.T) {
	s := fixture(t)
	var buf bytes.Buffer
	if err := Markdown(context.Background(), &buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"# Fix the parser", "### user", "Why does parse() fail?", "<details><summary>thinking</summary>",
		"Tool call `read_file`:", "\"path\": \"parser.go\"", "COMPACTED-SUMMARY", "[root-cause]", "MAIN-LEAF thanks",
		"*[image image/png, 70 bytes]*", "1 other branch"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if strings.Contains(out, "OTHER-BRANCH") {
		t.Error("Markdown shows an entry off the leaf path")
	}
}

func TestFenceOutrunsBackticks(t *testing.T) {
	got := fence("a ```` b", "")
	if !strings.HasPrefix(got, "`````\n") || !strings.HasSuffix(got, "\n`````\n") {
		t.Errorf("fence = %q", got)
	}
}

func TestJSONLResolvesBlobs(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	cs, err := cas.Open(ctx, st, cas.WithDir("blobs"))
	if err != nil {
		t.Fatal(err)
	}
	blobs := cs
	s, err := tree.Create(st, "s.jsonl", tree.Header{ID: "j1", Cwd: "/w"}, tree.WithBlobStore(blobs))
	if err != nil {
		t.Fatal(err)
	}
	img := base64.StdEncoding.EncodeToString(bytes.Repeat(png1x1, 2000))
	if _, err := s.AppendMessage(ctx, msg(t, map[string]any{"role": "user", "content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": img}}})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, msg(t, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}}})); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored, _ := st.ReadFile(ctx, "s.jsonl")
	if strings.Contains(string(stored), img) {
		t.Fatal("fixture: the image should be stored as a blob ref")
	}
	loaded, err := tree.Open(ctx, st, "s.jsonl", tree.ReadOnly(), tree.WithBlobStore(blobs))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := JSONL(ctx, &buf, loaded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), img) || strings.Contains(buf.String(), "blob:") {
		t.Errorf("JSONL did not inline the blob:\n%s", buf.String())
	}
	// Read back without a blob store: same entries and the image inline.
	if err := st.WriteFile(ctx, "flat.jsonl", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	flat, err := tree.Open(ctx, st, "flat.jsonl", tree.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if flat.Header().ID != "j1" || flat.Len() != loaded.Len() || len(flat.Problems()) != 0 {
		t.Errorf("flat session: id %q, %d entries (want %d), problems %v", flat.Header().ID, flat.Len(), loaded.Len(), flat.Problems())
	}
	if !strings.Contains(string(flat.Entries()[0].JSON()), img) {
		t.Error("flat session lost the image")
	}
}

func TestTreeNestsOnlyAtForks(t *testing.T) {
	ctx := context.Background()
	// The fixture forks once after the first user message: one list for the
	// root chain and one per branch.
	var buf bytes.Buffer
	if err := HTML(ctx, &buf, fixture(t)); err != nil {
		t.Fatal(err)
	}
	nav := buf.String()[strings.Index(buf.String(), "<nav"):strings.Index(buf.String(), "</nav>")]
	if n := strings.Count(nav, "<ul>"); n != 3 {
		t.Errorf("fixture tree has %d lists, want 3", n)
	}
	// A long linear session stays one flat list.
	s, _ := tree.Create(mem.New(), "s.jsonl", tree.Header{ID: "long"}, tree.InMemory())
	for i := range 2000 {
		role := []string{"user", "assistant"}[i%2]
		if _, err := s.AppendMessage(ctx, msg(t, map[string]any{"role": role, "content": "m"})); err != nil {
			t.Fatal(err)
		}
	}
	buf.Reset()
	if err := HTML(ctx, &buf, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "<ul>"); n != 1 {
		t.Errorf("linear session tree has %d lists, want 1", n)
	}
}
