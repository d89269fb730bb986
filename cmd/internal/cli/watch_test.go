package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The service definitions run the binary with its arguments intact,
// whatever characters they hold.
func TestWatchServiceDefinitions(t *testing.T) {
	argv := []string{"/opt/my tools/trove", "--store", "/data/trove 100%", "watch", `/home/a"b`}
	unit := systemdUnit(argv)
	want := `ExecStart="/opt/my tools/trove" --store "/data/trove 100%%" watch "/home/a\"b"` + "\n"
	if !strings.Contains(unit, want) || !strings.Contains(unit, "WantedBy=default.target") {
		t.Fatalf("unit:\n%s\nwant the line %q", unit, want)
	}
	plist := launchdAgent(argv)
	for _, s := range []string{"<string>/opt/my tools/trove</string>", "<string>/data/trove 100%</string>", "<string>/home/a&quot;b</string>", "<key>KeepAlive</key><true/>"} {
		if !strings.Contains(plist, s) {
			t.Fatalf("plist lacks %s:\n%s", s, plist)
		}
	}
	code, out, _ := trove(t, "", "watch", "--install")
	if code != 0 || !strings.Contains(out, "install with:") {
		t.Fatalf("watch --install: %d\n%s", code, out)
	}
	// A relative store is named absolutely: the service runs elsewhere.
	t.Chdir(t.TempDir())
	abs, err := filepath.Abs("rel")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := trove(t, "", "--store", "rel", "watch", "--install"); code != 0 || !strings.Contains(out, abs) {
		t.Fatalf("watch --install of --store rel: %d\n%s", code, out)
	}
	if code, _, _ := trove(t, "", "watch", "--write"); code != exitUsage {
		t.Fatalf("--write without --install: exit %d", code)
	}
}
