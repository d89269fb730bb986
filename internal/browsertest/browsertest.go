// Package browsertest loads pages in headless Chromium for tests: Debian's
// chromium, which .ci/run installs, with every host name unresolvable but
// 127.0.0.1 and those a test maps, so a page can reach nothing else.
//
// Imports: the standard library; nothing of trove's.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Chromium returns the browser's path, skipping the test when it is absent.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("chromium not found (apt-get install chromium); browser test skipped")
	return ""
}

// Page says how to load a page.
type Page struct {
	// Map is host-resolver rules put before the rule that makes every
	// other name unresolvable, such as "MAP evil.example 127.0.0.1".
	Map string
	// Refused pages are expected: console lines about 4xx answers pass.
	Refused bool
	// Args are more Chromium flags (--dump-dom, --screenshot=FILE, ...).
	Args []string
}

// Load opens url with bin and returns what Chromium wrote to stdout (the
// DOM with --dump-dom). Any console message (a script error, a request
// the Content-Security-Policy blocked) fails the test.
func Load(t testing.TB, bin, url string, p Page) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rules := "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
	if p.Map != "" {
		rules = p.Map + ", " + rules
	}
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--host-resolver-rules=" + rules,
		// console messages go to stderr
		"--enable-logging=stderr", "--v=0"}, p.Args...)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", p.Args, err, errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") && !(p.Refused && strings.Contains(l, "status of 4")) {
			t.Errorf("console message: %s", l)
		}
	}
	return out.String()
}
