package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An encrypted store through the command line: init, the demo, the
// passphrase from the environment, a file or the user's key file; keys
// added, changed and removed; mirrors of it as ciphertext and into a new
// encrypted store.
func TestEncryptedStoreCommands(t *testing.T) {
	dir, cache, config := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv(envPassword, "pw1")
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := trove(t, "", args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s %s", args, code, errOut, out)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, out, errOut := trove(t, "", args...)
		if code == exitOK || !strings.Contains(errOut, want) {
			t.Fatalf("%v: exit %d, %q %q; want a failure saying %q", args, code, errOut, out, want)
		}
	}
	must("--store", dir, "init", "--encrypt")
	must("--store", dir, "demo")
	if out := must("--store", dir, "fsck"); !strings.Contains(out, " 0 problems") {
		t.Fatalf("fsck: %s", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 || hasEntry(entries, "demo") {
		t.Fatalf("the demo's workspace is in the encrypted store's directory: %v", entries)
	}
	// The demo's text, file names and cwd are nowhere in the store's bytes.
	cwd, _ := os.Getwd()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, needle := range []string{"greet", "Greet", "fix the greeting", cwd, "before-edit"} {
			if strings.Contains(p, needle) || strings.Contains(string(b), needle) {
				t.Errorf("%s holds %q", p, needle)
			}
		}
		return err
	})
	t.Setenv(envPassword, "")
	fails("store is encrypted", "--store", dir, "ls", "--all")
	t.Setenv(envPassword, "nope")
	fails("wrong passphrase", "--store", dir, "ls", "--all")

	t.Setenv(envPassword, "pw1")
	t.Setenv(envNewPassword, "pw2")
	must("--store", dir, "key", "add")
	var keys []map[string]any
	if err := json.Unmarshal([]byte(must("--store", dir, "--json", "key", "list")), &keys); err != nil || len(keys) != 2 {
		t.Fatalf("key list: %v %v", keys, err)
	}
	t.Setenv(envPassword, "pw2")
	t.Setenv(envNewPassword, "pw3")
	must("--store", dir, "key", "passwd")
	fails("wrong passphrase", "--store", dir, "ls", "--all")
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("pw3\n"), 0o600)
	must("--store", dir, "--password-file", pwFile, "ls", "--all")

	// A key file for hooks and services, readable by the user only.
	t.Setenv(envPassword, "pw3")
	must("--store", dir, "key", "add", "--generate-key-file")
	kf := filepath.Join(config, "trove", "key")
	if fi, err := os.Stat(kf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// Its 256 random bits are wrapped through HKDF, not scrypt: a hook
	// opens the store in microseconds.
	if out := must("--store", dir, "key", "list"); strings.Count(out, "hkdf-sha256") != 1 || strings.Count(out, "scrypt") != 2 {
		t.Fatalf("key list after --generate-key-file:\n%s", out)
	}
	t.Setenv(envPassword, "")
	must("--store", dir, "fsck")
	os.Chmod(kf, 0o644)
	fails("readable by others", "--store", dir, "fsck")
	os.Chmod(kf, 0o600)

	// Mirrors: ciphertext to a bucket directory, which opens with the
	// same key; a plain store re-encrypted under another passphrase.
	bucket := t.TempDir()
	must("mirror", dir, "fileblob://"+bucket)
	if out := must("--store", "fileblob://"+bucket, "fsck"); !strings.Contains(out, " 0 problems") {
		t.Fatalf("fsck of the mirror: %s", out)
	}
	plain := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no key file
	must("--store", plain, "demo")
	fails("not encrypted", "--store", plain, "--password-file", pwFile, "ls")
	enc := t.TempDir()
	t.Setenv(envDstPassword, "other")
	must("mirror", "--encrypt", plain, enc)
	t.Setenv(envPassword, "other")
	if out := must("--store", enc, "fsck"); !strings.Contains(out, " 0 problems") || !strings.Contains(out, "2 sessions") {
		t.Fatalf("fsck of the encrypted mirror: %s", out)
	}
	t.Setenv(envDstPassword, "wrong")
	fails("wrong passphrase", "mirror", "--encrypt", plain, enc)
}

func hasEntry(entries []os.DirEntry, name string) bool {
	for _, e := range entries {
		if e.Name() == name {
			return true
		}
	}
	return false
}
