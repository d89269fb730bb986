package importer

import (
	"crypto/sha256"
	"testing"
)

// TestFormatNames: old spellings name the formats in use, and agent JSONL
// sessions keep the ids imports gave them before the rename.
func TestFormatNames(t *testing.T) {
	for name, want := range map[string]string{"spec002": "agent-jsonl", "agent-jsonl": "agent-jsonl", "claude": "claude", "": ""} {
		if got, ok := CanonicalFormat(name); !ok || got != want {
			t.Errorf("CanonicalFormat(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := CanonicalFormat("spec003"); ok {
		t.Error("spec003 names no format Import reads")
	}
	old := sha256.Sum256([]byte("spec002:b1f7c901"))
	for _, format := range []string{"agent-jsonl", "spec002"} {
		if got := SessionID(format, "b1f7c901"); got != idFrom(old[:]) {
			t.Errorf("SessionID(%q) = %s, not the id of before the rename %s", format, got, idFrom(old[:]))
		}
	}
}
