package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBucketScheme(t *testing.T) {
	// As in trove, which links no provider.
	missing := func(scheme string) bool {
		return slices.Contains([]string{"s3", "gs", "azblob", "memblob", "fileblob"}, scheme)
	}
	for args, want := range map[string]string{
		"--store s3://b ls":                  "s3",
		"--store=gs://b?x=1 ls":              "gs",
		"mirror /tmp/a azblob://c":           "azblob",
		"--store fileblob:///tmp/x demo":     "fileblob",
		"--store /tmp/x search https://a.b/": "",
		"--store file:///tmp/x ls":           "",
		"search s3":                          "",
	} {
		if got := bucketScheme(strings.Fields(args), missing); got != want {
			t.Errorf("bucketScheme(%q) = %q, want %q", args, got, want)
		}
	}
}

// TestCompanion: trove runs a command line naming a bucket as trove-cloud,
// found beside it, with the same arguments, output and exit code; without
// trove-cloud the error says what to install; a local store never needs it.
func TestCompanion(t *testing.T) {
	trove := buildTrove(t, "trove-cloud")
	bucket := "fileblob://" + filepath.ToSlash(t.TempDir())
	env := append(os.Environ(), "TROVE_HOME="+t.TempDir(), "HOME="+t.TempDir())
	troveRun := func(bin string, env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := troveRun(trove, env, "--store", bucket, "demo"); code != exitOK || !strings.Contains(out, "0 problems") {
		t.Fatalf("trove --store %s demo: exit %d\n%s", bucket, code, out)
	}
	if out, code := troveRun(trove, env, "--store="+bucket, "ls"); code != exitOK || strings.Count(out, "fix the greeting") != 2 {
		t.Fatalf("trove ls of the bucket: exit %d\n%s", code, out)
	}
	if _, code := troveRun(trove, env, "--store", bucket, "no-such-command"); code != exitUsage {
		t.Errorf("a usage error through trove-cloud: exit %d, want %d", code, exitUsage)
	}

	// trove alone, with no trove-cloud on PATH either.
	alone := filepath.Join(t.TempDir(), "trove")
	data, err := os.ReadFile(trove)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	bare := append(env, "PATH="+t.TempDir())
	out, code := troveRun(alone, bare, "--store", bucket, "ls")
	if code == exitOK || !strings.Contains(out, "go install github.com/trovekit/trove/cmd/trove-cloud@latest") {
		t.Errorf("trove without trove-cloud on a bucket: exit %d\n%s", code, out)
	}
	if out, code := troveRun(alone, bare, "--store", t.TempDir(), "demo"); code != exitOK {
		t.Errorf("trove without trove-cloud on a local store: exit %d\n%s", code, out)
	}

	// A trove-cloud that is trove itself (a link) runs the command once.
	if err := os.Symlink(alone, filepath.Join(filepath.Dir(alone), "trove-cloud")); err != nil {
		t.Fatal(err)
	}
	out, code = troveRun(alone, bare, "--store", bucket, "ls")
	if code == exitOK || !strings.Contains(out, "go install github.com/trovekit/trove/cmd/trove-cloud@latest") {
		t.Errorf("trove with itself as trove-cloud on a bucket: exit %d\n%s", code, out)
	}
}
