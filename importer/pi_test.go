package importer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
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

// sessionPath loads the messages on a session's current path and returns
// their roles, space-separated, and their JSON run together.
func sessionPath(t *testing.T, s *trove.Store, id string) (roles, all string) {
	t.Helper()
	msgs, err := s.Sessions().LoadMessages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var rs []string
	var b strings.Builder
	for _, e := range msgs {
		rs = append(rs, e.Role())
		b.Write(e.JSON())
	}
	return strings.Join(rs, " "), b.String()
}

// importFresh imports src into a new store, returning it, the results and
// the source files' bytes before.
func importFresh(t *testing.T, src string, o importer.Options) (*trove.Store, []importer.Result, map[string][]byte) {
	t.Helper()
	before := snapshot(t, src)
	s, err := trove.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := importer.Import(context.Background(), s, []string{src}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s, res, before
}

// reimportAddsNothing checks that importing src again imports nothing and
// that its files are as they were before.
func reimportAddsNothing(t *testing.T, s *trove.Store, src string, before map[string][]byte) {
	t.Helper()
	again, err := importer.Import(context.Background(), s, []string{src}, importer.Options{})
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
}

func TestImportOmpRoot(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "omp")
	s, res, before := importFresh(t, src, importer.Options{From: "omp"})
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
	reimportAddsNothing(t, s, src, before)
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Sessions != 2 {
		t.Errorf("check: %+v %v", rep, err)
	}
}

// Inline images of pi files go to the blob store, once for both sessions.
func TestImportPiInlineImagesOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("pixel"), 600))
	for i, id := range []string{"11111111-2222-4333-8444-555555555555", "11111111-2222-4333-8444-666666666666"} {
		file := `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-20T09:00:00.000Z","cwd":"/work/pics"}` + "\n" +
			`{"type":"message","id":"bb00000` + string(rune('1'+i)) + `","parentId":null,"timestamp":"2026-11-20T09:00:01.000Z","message":{"role":"user","content":[{"type":"image","data":"` + img + `","mimeType":"image/png"}],"timestamp":1}}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	storeDir := t.TempDir()
	s, err := trove.Open(ctx, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := importer.Import(ctx, s, []string{dir}, importer.Options{})
	if err != nil || len(res) != 2 {
		t.Fatalf("import: %+v %v", res, err)
	}
	for _, r := range res {
		msgs, err := s.Sessions().LoadMessages(ctx, r.SessionID)
		if err != nil || len(msgs) != 1 || !strings.Contains(string(msgs[0].JSON()), img) {
			t.Errorf("%s: image not loaded back (%v)", r.Source, err)
		}
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Blobs != 1 {
		t.Errorf("check: %+v %v, want one blob", rep, err)
	}
	filepath.WalkDir(filepath.Join(storeDir, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(img[:200])) {
				t.Errorf("%s holds the image inline", p)
			}
		}
		return nil
	})
}

// A pi sessions directory imported without its root's blobs/ says which
// sessions name blobs the store lacks.
func TestImportPiWithoutBlobs(t *testing.T) {
	_, res, _ := importFresh(t, filepath.Join("testdata", "omp", "sessions"), importer.Options{})
	var warned []string
	for _, r := range res {
		if strings.Contains(r.Reason, "not in the store") {
			warned = append(warned, r.Reason)
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "1 blob refs") {
		t.Errorf("reasons: %+v", res)
	}
}

// A v1 session's entries have no ids: the ids it is given are the same at
// every import, so a watcher's store and a one-shot import agree.
func TestImportPiV1IDsStable(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "omp")
	var ids [2][]string
	for i := range ids {
		s, res, _ := importFresh(t, src, importer.Options{From: "omp"})
		for _, r := range res {
			if r.Messages != 3 {
				continue
			}
			msgs, err := s.Sessions().LoadMessages(ctx, r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				ids[i] = append(ids[i], m.ID())
			}
		}
	}
	if len(ids[0]) != 3 || !slices.Equal(ids[0], ids[1]) {
		t.Errorf("v1 entry ids differ between imports: %v %v", ids[0], ids[1])
	}
	if ids[0][0] == ids[0][1] || ids[0][1] == ids[0][2] {
		t.Errorf("v1 entry ids repeat: %v", ids[0])
	}
}
