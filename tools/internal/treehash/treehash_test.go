package treehash

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// A symlink is left out, or hashed as its target, as the caller asks; temp
// files are left out either way.
func TestHash(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"a": "alpha", "d/b": "beta", "d/" + TempPrefix + "x": "temp"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	regular, err := Hash(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": sum("alpha"), "d/b": sum("beta")}
	if !maps.Equal(regular, want) {
		t.Errorf("regular files = %v, want %v", regular, want)
	}
	followed, err := Hash(dir, Options{FollowSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	want["link"] = sum("alpha")
	if !maps.Equal(followed, want) {
		t.Errorf("with symlinks = %v, want %v", followed, want)
	}
	if _, err := Hash(filepath.Join(dir, "missing"), Options{}); !os.IsNotExist(err) {
		t.Errorf("Hash of a missing dir = %v, want not-exist", err)
	}
}
