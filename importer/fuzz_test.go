package importer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConvert: whatever a source holds, parsing never panics, and what
// trove builds from a Claude Code or Codex file (every message made here)
// keeps the writing contract; agent JSONL and pi files carry content blocks
// through, so a file of theirs may be refused (an import error), never
// written wrong.
func FuzzConvert(f *testing.F) {
	filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range []struct {
			name   string
			parse  func([]byte) (*conversation, error)
			strict bool
		}{{"claude", parseClaude, true}, {"codex", parseCodex, true}, {"agent-jsonl", parseAgentJSONL, false}} {
			c, err := p.parse(data)
			if err != nil {
				continue
			}
			for _, conv := range append([]*conversation{c}, c.subs...) {
				v := conv.toV3("01a2b3c4-d5e6-8f70-8a1b-2c3d4e5f6a7b")
				v.defaults()
				if _, err := v.encode("01a2b3c4-d5e6-8f70-8a1b-2c3d4e5f6a7b"); err != nil && p.strict {
					t.Fatalf("%s: the file built breaks the writing contract: %v", p.name, err)
				}
			}
		}
		if v, _, err := parsePi(data); err == nil {
			v.defaults()
			v.encode("01a2b3c4-d5e6-8f70-8a1b-2c3d4e5f6a7b")
		}
	})
}
