package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTyposAreUsageErrors(t *testing.T) {
	store := t.TempDir()
	for _, args := range [][]string{
		{"checkpoint", "lst"}, {"runs", "lst"}, {"blob", "foo"}, {"session", "ctx"}, {"files", "lss"}, {"nosuch"},
		{"ls", "--nosuch"}, {"runs", "ls", "--limit", "x"},
	} {
		code, out, errOut := trove(t, "", append([]string{"--store", store}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stdout %q)", args, code, exitUsage, out)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 || errOut == "" {
			t.Errorf("%v: stderr is not one line: %q", args, errOut)
		}
	}
	// A group without a subcommand still shows its help.
	if code, out, _ := trove(t, "", "--store", store, "checkpoint"); code != exitOK || !strings.Contains(out, "rewind") {
		t.Errorf("checkpoint alone: %d %q", code, out)
	}
}

func TestReadersNeverCreateAStore(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "relative", "typo")
	for _, args := range [][]string{{"ls"}, {"ls", "--all"}, {"show", "01a2"}, {"blob", "verify"}, {"fsck"}, {"runs", "ls"}, {"files", "ls"}} {
		code, _, errOut := trove(t, "", append([]string{"--store", typo}, args...)...)
		if code == exitOK || !strings.Contains(errOut, "no store at "+typo) {
			t.Errorf("%v on a missing store: exit %d, %q", args, code, errOut)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%v created the store", args)
		}
	}
	// Writers do create it.
	if code, _, errOut := trove(t, "", "--store", typo, "blob", "put", "-"); code != exitOK {
		t.Fatalf("blob put on a new store: %s", errOut)
	}
}

func TestJSONErrors(t *testing.T) {
	code, _, errOut := trove(t, "", "--store", t.TempDir(), "--json", "show", "nosuch")
	if code == exitOK {
		t.Fatal("show of a missing session succeeded")
	}
	var e errorJSON
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error == "" || e.Code != code {
		t.Fatalf("error under --json is not one JSON object: %q (%v)", errOut, err)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := trove(t, "", "--version")
	if code != exitOK || !strings.HasPrefix(out, "trove version ") {
		t.Errorf("--version: %d %q", code, out)
	}
}
