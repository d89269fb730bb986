package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentLoop(t *testing.T) {
	for _, url := range []string{"mem://", "file://" + t.TempDir()} {
		var out bytes.Buffer
		ws := t.TempDir()
		if err := run(context.Background(), &out, url, ws); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, out.String())
		}
		for _, want := range []string{"checkpoint turn-1", "rewound 1 files to turn-2", "8 messages", `return \"hello\" }`, "fsck: 0 problems"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", url, want, out.String())
			}
		}
		got, _ := os.ReadFile(filepath.Join(ws, "main.go"))
		if !strings.Contains(string(got), `return "hello" }`) {
			t.Errorf("workspace not rewound: %q", got)
		}
	}
}

func TestAgentLoopBuilds(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agentloop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-store", "mem://").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fsck: 0 problems") {
		t.Fatalf("agentloop: %v\n%s", err, out)
	}
}
