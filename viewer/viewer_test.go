package viewer

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/importer"
	"github.com/trovekit/trove/internal/browsertest"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/viewer/viewertest"
)

// openViewer is the viewer's handler on the viewer store, and the id of
// its session.
func openViewer(t *testing.T) (http.Handler, string) {
	t.Helper()
	store, id := viewertest.Store(t)
	ts, err := troveapi.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return New(ts, slog.New(slog.DiscardHandler)), id
}

func startViewer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	h, id := openViewer(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, id
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestViewer(t *testing.T) {
	srv, id := startViewer(t)
	code, body := get(t, srv.URL+"/")
	if code != 200 || !strings.Contains(body, "/work/proj") || !strings.Contains(body, `href="/s/`+id+`"`) || !strings.Contains(body, "Viewer session") {
		t.Fatalf("list: %d\n%s", code, body)
	}
	if _, body := get(t, srv.URL+"/?q=zebra-42"); !strings.Contains(body, id) {
		t.Error("search over first messages found nothing")
	}
	if _, body := get(t, srv.URL+"/?q=nothing-like-this"); strings.Contains(body, id) || !strings.Contains(body, "No sessions") {
		t.Error("search matched a session it should not")
	}
	code, body = get(t, srv.URL+"/s/"+id)
	if code != 200 || !strings.Contains(body, "Found it in main.go") || !strings.Contains(body, "&lt;script&gt;") || strings.Contains(body, "<script") ||
		!strings.Contains(body, `href="/s/`+id+`/checkpoints"`) {
		t.Fatalf("session page: %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/s/"+id+"/checkpoints")
	for _, want := range []string{"cp1", "Changes since cp1", "modified <code>a.txt</code>", `<span class="d"> one</span>`,
		`<span class="ddel">-two</span>`, `<span class="dadd">&#43;THREE &lt;b&gt;bold&lt;/b&gt;</span>`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("checkpoints page (%d) lacks %q:\n%s", code, want, body)
		}
	}
	if code, body := get(t, srv.URL+"/s/"+id+"/runs"); code != 200 || !strings.Contains(body, "RUN-INPUT &lt;i&gt;x&lt;/i&gt;") || !strings.Contains(body, "incomplete") {
		t.Errorf("runs: %d %s", code, body)
	}
	if code, _ := get(t, srv.URL+"/s/nosuch"); code != http.StatusNotFound {
		t.Errorf("missing session: %d, want 404", code)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequest(m, srv.URL+"/s/"+id, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	resp, err := http.Head(srv.URL + "/s/" + id)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD: %v %v", resp, err)
	}
}

func TestViewerInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	srv, id := startViewer(t)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("viewer not on loopback: %s", srv.URL)
	}
	page := srv.URL + "/s/" + id
	dom := browsertest.Load(t, bin, page, browsertest.Page{Args: []string{"--dump-dom"}})
	if !strings.Contains(dom, "Find the bug ZEBRA-42") || !strings.Contains(dom, "Found it in main.go") {
		t.Errorf("conversation not in the DOM:\n%s", dom)
	}
	if strings.Contains(dom, "<title>PWNED") || strings.Contains(dom, `data-pwned="1"`) {
		t.Error("injected script ran")
	}
	for _, u := range regexp.MustCompile(`(?i)https?://[^\s"'<>]+`).FindAllString(dom, -1) {
		if !strings.HasPrefix(u, "http://127.0.0.1") {
			t.Errorf("page references %s", u)
		}
	}
	shots := cmp.Or(os.Getenv("TROVE_SCREENSHOTS"), t.TempDir())
	for name, flags := range map[string][]string{
		"light": {"--blink-settings=preferredColorScheme=1"},
		"dark":  {"--force-dark-mode", "--blink-settings=preferredColorScheme=0"},
	} {
		png := filepath.Join(shots, "viewer-"+name+".png")
		browsertest.Load(t, bin, page, browsertest.Page{Args: append(flags, "--screenshot="+png, "--window-size=1200,900")})
		if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
			t.Errorf("%s screenshot missing: %v", name, err)
		}
	}
}

func TestViewerLineage(t *testing.T) {
	ctx := context.Background()
	ts, err := troveapi.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	rep, err := importer.Import(ctx, ts, []string{filepath.Join("..", "importer", "testdata", "claude-sidechain")}, importer.Options{})
	if err != nil || len(rep) != 3 {
		t.Fatalf("import: %v %v", rep, err)
	}
	srv := httptest.NewServer(New(ts, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	main, sub := rep[0].SessionID, rep[1].SessionID
	if _, body := get(t, srv.URL+"/s/"+main); !strings.Contains(body, `href="/s/`+sub+`">child: subagent: Profile the search handler`) {
		t.Errorf("the main session's page does not link its subagent:\n%s", body)
	}
	if _, body := get(t, srv.URL+"/s/"+sub); !strings.Contains(body, `href="/s/`+main+`">parent: Find the slow query`) {
		t.Errorf("the subagent's page does not link its parent")
	}
}

// A session's checkpoints page shows those the hooks took of its
// workspace before its tool calls (kept with the workspace's, linked to
// the session), with the call each precedes, and no other checkpoint of
// that workspace.
func TestViewerHookCheckpoints(t *testing.T) {
	ctx := context.Background()
	store, ws := t.TempDir(), t.TempDir()
	ts, err := troveapi.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	h, err := ts.Sessions().Create(ctx, session.CreateOptions{Cwd: filepath.Join(ws, "sub")})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"clean up"}`)); err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cps, err := ts.Checkpoints(ws)
	if err != nil {
		t.Fatal(err)
	}
	for i, cp := range []struct{ name, session, text string }{
		{"toolu_01first", id, "one\n"}, {"unlinked", "", "two\n"}, {"toolu_02other", "0badc0de-0000-4000-8000-000000000000", "three\n"}, {"toolu_03second", id, "four <b>\n"},
	} {
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(cp.text), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := []checkpoint.CreateOption{checkpoint.WithNote(fmt.Sprintf("Bash: step %d", i))}
		if cp.session != "" {
			opts = append(opts, checkpoint.WithSession(cp.session), checkpoint.WithMessage(cp.name))
		}
		if _, err := cps.CreateTree(ctx, cp.name, opts...); err != nil {
			t.Fatal(err)
		}
	}
	cps.Close()
	srv := httptest.NewServer(New(ts, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	code, body := get(t, srv.URL+"/s/"+id+"/checkpoints")
	for _, want := range []string{"toolu_01first", "before Bash: step 0 (toolu_01first)", "toolu_03second", "Changes since toolu_01first", "&#43;four &lt;b&gt;"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("checkpoints page (%d) lacks %q:\n%s", code, want, body)
		}
	}
	for _, not := range []string{"unlinked", "toolu_02other"} {
		if strings.Contains(body, not) {
			t.Errorf("checkpoints page shows %s, not linked to the session:\n%s", not, body)
		}
	}
}
