package importer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
)

func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = b
		}
		return nil
	})
	return out
}

func TestImportOmpRoot(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "omp")
	before := snapshot(t, src)
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := importer.Import(ctx, s, []string{src}, importer.Options{From: "omp"})
	if err != nil {
		t.Fatal(err)
	}
	byMsgs := map[int]importer.Result{}
	for _, r := range res {
		if !r.Imported {
			t.Errorf("not imported: %+v", r)
		}
		byMsgs[r.Messages] = r
	}
	if len(res) != 3 || byMsgs[1].Format != "blobs" {
		t.Fatalf("results: %+v", res)
	}
	msgs, err := s.Sessions().LoadMessages(ctx, byMsgs[4].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var all string
	for _, e := range msgs {
		all += string(e.JSON())
	}
	img := base64.StdEncoding.EncodeToString([]byte("fake png bytes for the omp fixture"))
	for _, want := range []string{img, `"type":"toolCall"`, `"toolName":"bash"`, "A PNG picture.", `"provider":"unknown"`, `"totalTokens":0`} {
		if !strings.Contains(all, want) {
			t.Errorf("v3 session lacks %s", want)
		}
	}
	if len(msgs) != 4 {
		t.Errorf("v3 session: %d messages on the path, want 4", len(msgs))
	}
	v1, err := s.Sessions().LoadMessages(ctx, byMsgs[3].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(v1) != 3 || v1[1].Role() != "custom" || !strings.Contains(string(v1[2].JSON()), "v1 reply") {
		t.Errorf("v1 session migrated wrong: %d messages", len(v1))
	}
	again, err := importer.Import(ctx, s, []string{src}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Imported {
			t.Errorf("second import imported %+v", r)
		}
	}
	for p, b := range snapshot(t, src) {
		if !bytes.Equal(before[p], b) {
			t.Errorf("%s changed", p)
		}
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Sessions != 2 {
		t.Errorf("check: %+v %v", rep, err)
	}
}
