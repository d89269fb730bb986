package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove/internal/browsertest"
)

func TestHTMLInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "session.html")
	var buf bytes.Buffer
	if err := HTML(context.Background(), &buf, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browsertest.Load(t, bin, "file://"+file, browsertest.Page{Args: []string{"--dump-dom"}})
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
		browsertest.Load(t, bin, "file://"+file, browsertest.Page{Args: append(flags, "--screenshot="+png, "--window-size=1200,900")})
		if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
			t.Errorf("%s screenshot missing or empty: %v", name, err)
		}
	}
}
