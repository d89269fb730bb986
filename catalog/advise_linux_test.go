//go:build linux

package catalog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trovekit/trove/backend/fs"
)

// TestMappingReadAtRandom: after a search, the kernel reads the
// catalog's mapping at random (VmFlags "rr" in smaps): a page it lacks
// is read alone, not with the device's read-around window.
func TestMappingReadAtRandom(t *testing.T) {
	st, err := fs.NewOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSession{id: "s1", cwd: "/w", title: "t"}
	s.message("e1", "", map[string]any{"role": "user", "content": "find the wombat"})
	writeFile(t, st, s.path(), s.bytes())
	dir := t.TempDir()
	c := openCatalog(t, dir, st)
	if got := hitKeys(t, c, Query{Text: "wombat"}); len(got) != 1 {
		t.Fatalf("hits %q", got)
	}
	path, err := filepath.EvalSymlinks(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps to check: %v", err)
	}
	var in, found bool
	for line := range bytes.Lines(smaps) {
		line = bytes.TrimSpace(line)
		if f := bytes.Fields(line); len(f) >= 5 && !bytes.HasSuffix(f[0], []byte(":")) {
			// A mapping's line: start-end perms offset dev inode [path].
			in = len(f) >= 6 && string(f[len(f)-1]) == path
			continue
		}
		if in && bytes.HasPrefix(line, []byte("VmFlags:")) {
			found = true
			if !bytes.Contains(append(line, ' '), []byte(" rr ")) {
				t.Errorf("catalog mapped without MADV_RANDOM: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no mapping of %s in smaps", path)
	}
}
