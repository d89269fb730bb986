package export

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium returns Debian's chromium, skipping the test when it is absent.
func chromium(t *testing.T) string {
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

// runChromium loads url headless with every host but 127.0.0.1 unresolvable,
// returning stdout (the DOM with --dump-dom).
func runChromium(t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		// console messages (errors, CSP-blocked requests) go to stderr
		"--enable-logging=stderr", "--v=0"}, extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console message: %s", l)
		}
	}
	return out.String()
}

func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "session.html")
	var buf bytes.Buffer
	if err := HTML(context.Background(), &buf, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, "file://"+file, "--dump-dom")
	for _, want := range []string{"Why does parse() fail?", "MAIN-LEAF thanks", "OTHER-BRANCH reply", "COMPACTED-SUMMARY"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if strings.Contains(dom, "PWNED") && !strings.Contains(dom, "&lt;script&gt;document.title=\"PWNED\"") {
		t.Error("injected script may have run")
	}
	if strings.Contains(dom, "<title>PWNED") || strings.Contains(dom, `data-pwned="1"`) {
		t.Error("injected script ran")
	}
	if !strings.Contains(dom, "<title>Fix the parser</title>") {
		t.Error("document title changed")
	}
	shots := filepath.Join(os.Getenv("TROVE_SCREENSHOTS"))
	if shots == "" {
		shots = dir
	}
	for name, flags := range map[string][]string{
		"light": {"--blink-settings=preferredColorScheme=1"},
		"dark":  {"--force-dark-mode", "--blink-settings=preferredColorScheme=0"},
	} {
		png := filepath.Join(shots, "export-"+name+".png")
		runChromium(t, bin, "file://"+file, append(flags, "--screenshot="+png, "--window-size=1200,900")...)
		if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
			t.Errorf("%s screenshot missing or empty: %v", name, err)
		}
	}
}
