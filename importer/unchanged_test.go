package importer

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/trovekit/trove"
)

// A second import of unchanged files finds each by the id its first line
// (or a Claude Code file's name) gives, without parsing them again; a
// subagents/ file (no main session of its own) is parsed again.
func TestUnchangedNeedsNoParse(t *testing.T) {
	ctx := context.Background()
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := Import(ctx, s, []string{"testdata"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := sourceFiles("testdata")
	if err != nil {
		t.Fatal(err)
	}
	sessions := 0
	for _, f := range files {
		if strings.Contains(f, "/subagents/") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rs, ok := unchanged(ctx, s, NewSessionIndex(s), source{path: f, format: detect(data), data: data})
		if !ok {
			t.Errorf("%s: not found as imported", f)
		}
		sessions += len(rs)
	}
	want := 0
	for _, r := range first {
		if r.Format != "blobs" && !strings.Contains(r.Source, "/subagents/") {
			want++
		}
	}
	if sessions != want {
		t.Errorf("the fast path reports %d sessions, the import made %d", sessions, want)
	}
}
