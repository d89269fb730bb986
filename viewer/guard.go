package viewer

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// guard admits a request to the viewer only when it can place it: its Host
// names the address serve listens on (so a page whose DNS name was rebound
// to this machine is refused), and it carries the run's token, in the URL
// serve printed or in the cookie that URL set. Nothing of the store is
// served before both hold.
type guard struct {
	hosts  map[string]bool // lower-case host:port values a request may name
	token  string          // empty: no token asked (--no-token)
	cookie string          // per port, so two viewers on one host keep theirs
	next   http.Handler
}

// Guard admits the hosts that reach ln's address: the bound IP, and for
// loopback or unspecified binds localhost, 127.0.0.1 and [::1]; an
// unspecified bind also admits this machine's interface addresses (an IP
// literal cannot be rebound). allow adds names the user chose (a LAN name);
// one without a port gets the listener's.
func Guard(next http.Handler, addr *net.TCPAddr, token string, allow []string, ifaceAddrs []net.IP) http.Handler {
	return newGuard(next, addr, token, allow, ifaceAddrs)
}

func newGuard(next http.Handler, addr *net.TCPAddr, token string, allow []string, ifaceAddrs []net.IP) *guard {
	port := strconv.Itoa(addr.Port)
	g := &guard{hosts: map[string]bool{}, token: token, cookie: "trove_token_" + port, next: next}
	add := func(host string) { g.hosts[strings.ToLower(net.JoinHostPort(host, port))] = true }
	add(addr.IP.String())
	if addr.IP.IsLoopback() || addr.IP.IsUnspecified() {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			add(h)
		}
	}
	if addr.IP.IsUnspecified() {
		for _, ip := range ifaceAddrs {
			add(ip.String())
		}
	}
	for _, a := range allow {
		if _, _, err := net.SplitHostPort(a); err == nil {
			g.hosts[strings.ToLower(a)] = true
		} else {
			add(strings.Trim(a, "[]"))
		}
	}
	return g
}

// NewToken is the run's secret: 256 bits from the OS, URL-safe.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("viewer token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hosts[strings.ToLower(r.Host)] {
		// 421: this server is not the one the name was meant for.
		http.Error(w, "misdirected request: this viewer answers only to the address it listens on (see serve --allow-host)", http.StatusMisdirectedRequest)
		return
	}
	if g.token == "" {
		g.next.ServeHTTP(w, r)
		return
	}
	if q := r.URL.Query(); q.Has("token") {
		if !g.match(q.Get("token")) {
			g.refuse(w)
			return
		}
		// Move the token into a cookie and out of the address bar and
		// history: the same page, without it.
		http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		w.Header().Set("Location", u.String())
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(g.cookie); err == nil && g.match(c.Value) {
		g.next.ServeHTTP(w, r)
		return
	}
	g.refuse(w)
}

func (g *guard) match(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) == 1
}

func (g *guard) refuse(w http.ResponseWriter) {
	http.Error(w, "unauthorized: open the URL with the token that trove serve printed", http.StatusUnauthorized)
}

// URL is the address to open: the bound IP, or loopback for an
// unspecified bind, with the token when one is asked.
func URL(addr *net.TCPAddr, token string) string {
	ip := addr.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1) // "tcp" listeners on :: take IPv4 too
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port)), Path: "/"}
	if token != "" {
		u.RawQuery = "token=" + token
	}
	return u.String()
}

// InterfaceIPs lists this machine's addresses, for an unspecified bind.
func InterfaceIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	return ips
}
