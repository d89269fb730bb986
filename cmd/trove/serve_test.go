package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

const hostileMsg = `<script>document.title="PWNED";document.body.setAttribute("data-pwned","1")</script><img src=x onerror="document.title='PWNED'">`

// viewerStore makes a store on disk holding one session with a hostile
// message, and returns the store's directory and the session id.
func viewerStore(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	ts, err := troveapi.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ts.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/proj", Title: "Viewer session"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		`{"role":"user","content":` + jsonStr("Find the bug ZEBRA-42 "+hostileMsg) + `}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c1","name":"grep","arguments":{"pattern":"x"}}]}`,
		`{"role":"toolResult","toolCallId":"c1","toolName":"grep","content":[{"type":"text","text":"main.go:1: x"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Found it in main.go"}]}`,
	} {
		if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	// Two checkpoints of a workspace file, in the session's sidecar.
	ws := t.TempDir()
	file := filepath.Join(ws, "a.txt")
	cps, err := ts.SessionCheckpoints(h, ws)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"one\ntwo\n", "one\nTHREE <b>bold</b>\n"} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := cps.Create(ctx, fmt.Sprintf("cp%d", i+1), []string{"a.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	cps.Close()
	w, err := ts.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: "RUN-INPUT <i>x</i>"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	return dir, id
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestExportCommand(t *testing.T) {
	store, id := viewerStore(t)
	code, out, errOut := trove(t, "", "--store", store, "export", id[:8])
	if code != exitOK || !strings.Contains(out, "Find the bug ZEBRA-42") || !strings.Contains(out, "&lt;script&gt;") || strings.Contains(out, "<script") {
		t.Fatalf("export html: exit %d, stderr %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "s.md")
	if code, _, errOut := trove(t, "", "--store", store, "export", id, "--format", "md", "-o", file); code != exitOK {
		t.Fatalf("export md: exit %d: %s", code, errOut)
	}
	md, _ := os.ReadFile(file)
	if !strings.Contains(string(md), "Tool call `grep`") {
		t.Errorf("markdown file:\n%s", md)
	}
	code, out, _ = trove(t, "", "--store", store, "export", id, "--format", "jsonl")
	if code != exitOK || strings.Count(out, "\n") != 5 || !strings.HasPrefix(out, `{"type":"session","version":3,"id":"`+id) {
		t.Errorf("export jsonl: exit %d:\n%s", code, out)
	}
	if code, _, _ := trove(t, "", "--store", store, "export", id, "--format", "pdf"); code != exitUsage {
		t.Errorf("bad format: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := trove(t, "", "--store", store, "export", "nosuchsession"); code == exitOK {
		t.Error("export of a missing session succeeded")
	}
}

// openViewer is the viewer's handler on the viewer store, and the id of
// its session.
func openViewer(t *testing.T) (http.Handler, string) {
	t.Helper()
	store, id := viewerStore(t)
	ts, err := troveapi.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return newViewer(ts, slog.New(slog.DiscardHandler)), id
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

// chromiumBin is Debian's chromium, which .ci/run installs.
func chromiumBin(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("chromium not found (apt-get install chromium); browser test skipped")
	return ""
}

// chrome loads url headless, every host name but those rules maps
// unresolvable, fails the test on any console message, and returns stdout.
func chrome(t *testing.T, bin, url string, rules string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--host-resolver-rules=" + rules + "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		// console messages (errors, CSP-blocked requests) go to stderr
		"--enable-logging=stderr", "--v=0"}, extra...)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") && !strings.Contains(l, "status of 40") && !strings.Contains(l, "status of 421") {
			t.Errorf("console message: %s", l)
		}
	}
	return out.String()
}

func TestViewerInChromium(t *testing.T) {
	bin := chromiumBin(t)
	srv, id := startViewer(t)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("viewer not on loopback: %s", srv.URL)
	}
	page := srv.URL + "/s/" + id
	dom := chrome(t, bin, page, "", "--dump-dom")
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
	shots := cmpOr(os.Getenv("TROVE_SCREENSHOTS"), t.TempDir())
	for name, flags := range map[string][]string{
		"light": {"--blink-settings=preferredColorScheme=1"},
		"dark":  {"--force-dark-mode", "--blink-settings=preferredColorScheme=0"},
	} {
		png := filepath.Join(shots, "viewer-"+name+".png")
		chrome(t, bin, page, "", append(flags, "--screenshot="+png, "--window-size=1200,900")...)
		if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
			t.Errorf("%s screenshot missing: %v", name, err)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestLineDiff(t *testing.T) {
	var got []string
	for _, l := range lineDiff("a\nb\nc\n", "a\nc\nd") {
		got = append(got, l.Op+l.Text)
	}
	if want := []string{" a", "-b", " c", "+d"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lineDiff = %q, want %q", got, want)
	}
	if lineDiff(strings.Repeat("x\n", diffMaxLines+1), "") != nil {
		t.Error("lineDiff of a huge file should give up")
	}
}

func TestServeBadAddr(t *testing.T) {
	store, _ := viewerStore(t)
	if code, _, errOut := trove(t, "", "--store", store, "serve", "--addr", "127.0.0.1:99999"); code == exitOK || !strings.Contains(errOut, "99999") {
		t.Errorf("serve on a bad address: exit %d, stderr %q", code, errOut)
	}
}

// A session's page links its parent, and the parent's page its children
// (here an imported Claude Code session and its subagent).
func TestViewerLineage(t *testing.T) {
	store := t.TempDir()
	code, out, errOut := trove(t, "", "--store", store, "--json", "import", filepath.Join("..", "..", "importer", "testdata", "claude-sidechain"))
	var rep importJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Sessions) != 3 {
		t.Fatalf("import: %d %v %s", code, err, errOut)
	}
	ts, err := troveapi.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	srv := httptest.NewServer(newViewer(ts, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	main, sub := rep.Sessions[0].SessionID, rep.Sessions[1].SessionID
	if _, body := get(t, srv.URL+"/s/"+main); !strings.Contains(body, `href="/s/`+sub+`">child: subagent: Profile the search handler`) {
		t.Errorf("the main session's page does not link its subagent:\n%s", body)
	}
	if _, body := get(t, srv.URL+"/s/"+sub); !strings.Contains(body, `href="/s/`+main+`">parent: Find the slow query`) {
		t.Errorf("the subagent's page does not link its parent")
	}
}
