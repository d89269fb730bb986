package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"

	"github.com/trovekit/trove/viewer/viewertest"
)

// TestServeCommand runs serve as a user does: its first line is the URL to
// open, which works in a client with cookies; nothing else does.
func TestServeCommand(t *testing.T) {
	store, id := viewertest.Store(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errb strings.Builder
	go func() {
		done <- run(ctx, []string{"--store", store, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr %s)", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	line = strings.TrimSpace(line)
	m := regexp.MustCompile(`^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q is not the URL with its token", line)
	}
	base := "http://127.0.0.1:" + m[1]
	status := func(url, host string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status(base+"/", "127.0.0.1:"+m[1]); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code := status(base+"/?token="+m[2], "evil.example:"+m[1]); code != http.StatusMisdirectedRequest {
		t.Errorf("Host evil.example: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(line)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), id) || resp.Request.URL.RawQuery != "" {
		t.Errorf("the printed URL: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("serve exit %d: %s", code, errb.String())
	}
}

func TestServeRefusesOpenNoToken(t *testing.T) {
	store, _ := viewertest.Store(t)
	code, out, errOut := trove(t, "", "--store", store, "serve", "--addr", "0.0.0.0:0", "--no-token")
	if code != exitUsage || !strings.Contains(errOut, "--no-token") || out != "" {
		t.Errorf("--no-token on 0.0.0.0: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestServeBadAddr(t *testing.T) {
	store, _ := viewertest.Store(t)
	if code, _, errOut := trove(t, "", "--store", store, "serve", "--addr", "127.0.0.1:99999"); code == exitOK || !strings.Contains(errOut, "99999") {
		t.Errorf("serve on a bad address: exit %d, stderr %q", code, errOut)
	}
}

// A session's page links its parent, and the parent's page its children
// (here an imported Claude Code session and its subagent).
