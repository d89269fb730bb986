package viewer

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/trovekit/trove/internal/browsertest"
)

const testToken = "tok-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

// guardedViewer serves the viewer store behind a guard made as serve makes
// it, on a loopback port.
func guardedViewer(t *testing.T, token string, allow ...string) (*httptest.Server, string) {
	t.Helper()
	h, id := openViewer(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = newGuard(h, srv.Listener.Addr().(*net.TCPAddr), token, allow, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, id
}

type reply struct {
	code     int
	body     string
	location string
	cookies  []*http.Cookie
}

// fetch sends one GET with the Host and cookie given and follows nothing.
func fetch(t *testing.T, rawURL, host string, cookie *http.Cookie) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header.Get("Location"), resp.Cookies()}
}

// noStoreBytes fails when a refused reply carries anything of the store.
func noStoreBytes(t *testing.T, what string, r reply, id string) {
	t.Helper()
	for _, s := range []string{id, id[:8], "Viewer session", "ZEBRA", "/work/proj"} {
		if strings.Contains(r.body, s) {
			t.Errorf("%s: body holds %q:\n%s", what, s, r.body)
		}
	}
}

func TestViewerGuard(t *testing.T) {
	srv, id := guardedViewer(t, testToken, "lan.example", "other.example:9")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	hp := func(h string) string { return net.JoinHostPort(h, strconv.Itoa(port)) }

	for _, host := range []string{"evil.example:" + strconv.Itoa(port), "evil.example", hp("lan.example.evil"), "other.example:" + strconv.Itoa(port), "127.0.0.1:1", "localhost"} {
		for _, path := range []string{"/", "/?token=" + testToken, "/s/" + id} {
			r := fetch(t, srv.URL+path, host, &http.Cookie{Name: "trove_token_" + strconv.Itoa(port), Value: testToken})
			if r.code != http.StatusMisdirectedRequest {
				t.Errorf("Host %s %s: %d, want 421", host, path, r.code)
			}
			noStoreBytes(t, "Host "+host, r, id)
		}
	}
	for _, path := range []string{"/", "/s/" + id, "/s/" + id + "/checkpoints", "/?token=", "/?token=" + testToken[:20], "/?token=" + testToken + "x"} {
		r := fetch(t, srv.URL+path, "", nil)
		if r.code != http.StatusUnauthorized {
			t.Errorf("%s without a good token: %d, want 401", path, r.code)
		}
		noStoreBytes(t, path, r, id)
	}
	// A cookie of another port's viewer, or with a wrong value, is no key.
	for _, c := range []*http.Cookie{{Name: "trove_token_1", Value: testToken}, {Name: "trove_token_" + strconv.Itoa(port), Value: "nope"}} {
		if r := fetch(t, srv.URL+"/", "", c); r.code != http.StatusUnauthorized {
			t.Errorf("cookie %s=%s: %d, want 401", c.Name, c.Value, r.code)
		}
	}

	// The printed URL: a redirect to the same page without the token,
	// which moves into a cookie the browser keeps to itself.
	r := fetch(t, srv.URL+"/s/"+id+"?token="+testToken, "", nil)
	if r.code != http.StatusSeeOther || r.location != "/s/"+id || len(r.cookies) != 1 {
		t.Fatalf("token URL: %d Location %q cookies %v", r.code, r.location, r.cookies)
	}
	c := r.cookies[0]
	if c.Value != testToken || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("cookie %+v", c)
	}
	noStoreBytes(t, "redirect", r, id)
	for _, host := range []string{"", hp("localhost"), hp("127.0.0.1"), hp("::1"), hp("LAN.example"), "other.example:9"} {
		r := fetch(t, srv.URL+"/", host, c)
		if r.code != 200 || !strings.Contains(r.body, "Viewer session") {
			t.Errorf("Host %q with the cookie: %d", host, r.code)
		}
	}
	if r := fetch(t, srv.URL+"/s/"+id, "", c); r.code != 200 || !strings.Contains(r.body, "Found it in main.go") {
		t.Errorf("session page with the cookie: %d", r.code)
	}
}

func TestViewerGuardNoToken(t *testing.T) {
	srv, id := guardedViewer(t, "")
	if r := fetch(t, srv.URL+"/", "", nil); r.code != 200 || !strings.Contains(r.body, "Viewer session") {
		t.Errorf("--no-token: %d", r.code)
	}
	r := fetch(t, srv.URL+"/", "evil.example:"+strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), nil)
	if r.code != http.StatusMisdirectedRequest {
		t.Errorf("--no-token, Host evil.example: %d, want 421", r.code)
	}
	noStoreBytes(t, "--no-token evil host", r, id)
}

func TestGuardHosts(t *testing.T) {
	ips := []net.IP{net.ParseIP("192.0.2.7"), net.ParseIP("2001:db8::1")}
	cases := []struct {
		bind  string
		allow []string
		in    []string
		out   []string
	}{
		{"127.0.0.1", nil, []string{"127.0.0.1:80", "localhost:80", "[::1]:80", "LOCALHOST:80"}, []string{"192.0.2.7:80", "127.0.0.1:81", "localhost", "evil:80"}},
		{"0.0.0.0", nil, []string{"127.0.0.1:80", "192.0.2.7:80", "[2001:db8::1]:80", "0.0.0.0:80"}, []string{"evil:80", "192.0.2.8:80"}},
		{"192.0.2.7", []string{"box.lan", "[2001:db8::9]", "a.lan:9"}, []string{"192.0.2.7:80", "box.lan:80", "[2001:db8::9]:80", "a.lan:9"}, []string{"localhost:80", "127.0.0.1:80", "a.lan:80", "box.lan:9"}},
	}
	for _, c := range cases {
		g := newGuard(nil, &net.TCPAddr{IP: net.ParseIP(c.bind), Port: 80}, "", c.allow, ips)
		for _, h := range c.in {
			if !g.hosts[strings.ToLower(h)] {
				t.Errorf("bind %s: Host %s refused", c.bind, h)
			}
		}
		for _, h := range c.out {
			if g.hosts[strings.ToLower(h)] {
				t.Errorf("bind %s: Host %s admitted", c.bind, h)
			}
		}
	}
}

func TestViewerGuardInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	srv, id := guardedViewer(t, testToken)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	// The printed URL: the browser follows the redirect, keeps the cookie
	// and shows the sessions.
	dom := browsertest.Load(t, bin, srv.URL+"/?token="+testToken, browsertest.Page{Args: []string{"--dump-dom"}})
	if !strings.Contains(dom, "Viewer session") || !strings.Contains(dom, id) {
		t.Errorf("the token URL does not show the sessions:\n%s", dom)
	}
	// Without the token, and from a page whose name was rebound to this
	// machine (even one that knew the token), nothing of the store.
	for _, u := range []string{srv.URL + "/", srv.URL + "/s/" + id, "http://evil.example:" + port + "/?token=" + testToken, "http://evil.example:" + port + "/s/" + id} {
		dom := browsertest.Load(t, bin, u, browsertest.Page{Map: "MAP evil.example 127.0.0.1", Refused: true, Args: []string{"--dump-dom"}})
		noStoreBytes(t, "chromium "+u, reply{body: dom}, id)
		if !strings.Contains(dom, "unauthorized") && !strings.Contains(dom, "misdirected") {
			t.Errorf("%s: not refused:\n%s", u, dom)
		}
	}
}
