package importer

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
)

// storeFiles is every file of a store on disk but caches and locks, by
// name.
func storeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.Contains(rel, ".index") || strings.HasSuffix(rel, ".lock") || strings.HasSuffix(rel, ".lease") {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importedFiles are the files of the store at dir after a one-shot import
// of src into it.
func importedFiles(t *testing.T, dir string, src ...string) map[string]string {
	t.Helper()
	st, err := trove.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Import(context.Background(), st, src, Options{}); err != nil {
		t.Fatal(err)
	}
	return storeFiles(t, dir)
}

func sourcesUnder(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, d := range dirs {
		fs, _, err := sourceFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	return files
}

// TestFollowEqualsImport feeds each recorded source to a Follower a few
// lines at a time and checks the store ends as a one-shot import of the
// files leaves a fresh one, whatever the steps; with resume, each feed is
// made by a new Follower resumed from the last one's State, as after a
// restart of `trove watch`.
func TestFollowEqualsImport(t *testing.T) {
	ctx := context.Background()
	dirs := []string{"testdata/claude", "testdata/claude-sidechain", "testdata/codex", "testdata/agent-jsonl",
		"testdata/heldout/claude", "testdata/heldout/codex", "testdata/heldout/pi/sessions", "testdata/heldout/agent-jsonl",
		"testdata/bom-crlf", "testdata/codex-legacy"}
	for _, run := range []struct {
		step   int
		resume bool
	}{{1, false}, {2, false}, {3, false}, {1000, false}, {1, true}, {3, true}} {
		step := run.step
		oneDir, liveDir := t.TempDir(), t.TempDir()
		one, err := trove.Open(ctx, oneDir)
		if err != nil {
			t.Fatal(err)
		}
		live, err := trove.Open(ctx, liveDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*trove.Store{one, live} {
			if _, err := importPiBlobs(ctx, s.Blobs(), "testdata/heldout/pi/blobs", false); err != nil {
				t.Fatal(err)
			}
		}
		files := sourcesUnder(t, dirs...)
		if _, err := Import(ctx, one, files, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Follow(live, path, "", data)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(data, []byte("\n"))
			for i := 0; i < len(lines); i += step {
				chunk := bytes.Join(lines[i:min(i+step, len(lines))], nil)
				if _, err := f.Feed(ctx, chunk); err != nil {
					t.Fatalf("step %d %s: %v", step, path, err)
				}
				if run.resume {
					f = resumed(t, live, f)
				}
			}
		}
		one.Close()
		live.Close()
		want, got := storeFiles(t, oneDir), storeFiles(t, liveDir)
		if n := countSuffix(want, "import.json"); n < 8 {
			t.Fatalf("the one-shot import made %d sessions", n)
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("step %d: %s differs:\nimport: %s\nfollow: %s", step, name, w, got[name])
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("step %d: follow wrote %s, import did not", step, name)
			}
		}
	}
}

// resumed is a Follower resumed from f's State, checked against the store.
func resumed(t *testing.T, st *trove.Store, f *Follower) *Follower {
	t.Helper()
	state, err := f.State()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resume(st, state)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Verify(context.Background()); !ok || err != nil {
		t.Fatalf("%s: the store is not as the Follower left it: %v", f.path, err)
	}
	if r.Size() != f.Size() || r.Format() != f.Format() {
		t.Fatalf("resumed at %d (%s), fed %d (%s)", r.Size(), r.Format(), f.Size(), f.Format())
	}
	return r
}

func countSuffix(files map[string]string, suffix string) int {
	n := 0
	for name := range files {
		if strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}

// TestFollowAfterOtherWriters: a `trove import` of the grown source (a
// Stop hook's) between two feeds does not stop the Follower, and the store
// still ends as one import of the file leaves it; a session changed in
// trove itself is left alone from then on.
func TestFollowAfterOtherWriters(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("testdata/claude/-work-app/5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "5f0c1a2e-7b1d-4c8e-9a31-2d6f0e4b7c90.jsonl")
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
	half := bytes.Join(lines[:len(lines)/2], nil)
	rest := bytes.Join(lines[len(lines)/2:], nil)
	// What the other writer imports: more than the Follower has read,
	// less than the end.
	most := bytes.Join(lines[:len(lines)-2], nil)

	oneDir, liveDir := t.TempDir(), t.TempDir()
	for _, dir := range []string{oneDir, liveDir} {
		s, err := trove.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if dir == oneDir {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Import(ctx, s, []string{path}, Options{})
		} else {
			f, ferr := Follow(s, path, "", data)
			if ferr != nil {
				t.Fatal(ferr)
			}
			_, err = f.Feed(ctx, half)
			if err == nil {
				// Imported behind the Follower's back, then the file grows.
				os.WriteFile(path, most, 0o600)
				_, err = Import(ctx, s, []string{path}, Options{})
				os.WriteFile(path, data, 0o600)
			}
			var rs []Result
			if err == nil {
				rs, err = f.Feed(ctx, rest)
			}
			for _, r := range rs {
				if strings.Contains(r.Reason, "changed in trove") {
					t.Errorf("the Follower stopped after an import: %+v", r)
				}
			}
		}
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	want, got := storeFiles(t, oneDir), storeFiles(t, liveDir)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nimport: %s\nfollow: %s", name, w, got[name])
		}
	}

	// Changed in trove: appended to by another writer.
	s, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := Follow(s, path, "", data)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := f.Feed(ctx, half)
	if err != nil || len(rs) == 0 {
		t.Fatal(rs, err)
	}
	name, err := s.Sessions().Find(ctx, rs[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Storage().ReadFile(ctx, name)
	changed := append(before, `{"type":"label","id":"ffffffff","parentId":null,"timestamp":"2026-11-28T10:00:00.000Z","targetId":"x","label":"mine"}`+"\n"...)
	if err := s.Storage().WriteFile(ctx, name, changed); err != nil {
		t.Fatal(err)
	}
	rs, err = f.Feed(ctx, rest)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Storage().ReadFile(ctx, name); !bytes.Equal(after, changed) || !strings.Contains(rs[0].Reason, "changed in trove") {
		t.Fatalf("a session changed in trove was written to: %+v", rs[0])
	}
}

// A subagent's file written before its main file's Task call (a replay of
// the files side by side, a copy) is titled once the main file has it.
func TestFollowSubagentBeforeItsTask(t *testing.T) {
	ctx := context.Background()
	const rel = "-work-web/7c2d9e41-0a6b-4f3e-9d15-3b8a1c0e5f27"
	src, dst := filepath.Join("testdata", "claude-sidechain"), t.TempDir()
	mainData, err := os.ReadFile(filepath.Join(src, rel+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	subData, err := os.ReadFile(filepath.Join(src, rel, "subagents", "agent-b81f.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	mainPath, subPath := filepath.Join(dst, rel+".jsonl"), filepath.Join(dst, rel, "subagents", "agent-b81f.jsonl")
	if err := os.MkdirAll(filepath.Dir(subPath), 0o755); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(mainData, []byte("\n"))
	if err := os.WriteFile(mainPath, bytes.Join(lines[:2], nil), 0o644); err != nil { // before the Task calls
		t.Fatal(err)
	}
	if err := os.WriteFile(subPath, subData, 0o644); err != nil {
		t.Fatal(err)
	}
	liveDir, oneDir := t.TempDir(), t.TempDir()
	live, err := trove.Open(ctx, liveDir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Follow(live, subPath, "claude", subData)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Feed(ctx, subData); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mainPath, mainData, 0o644); err != nil {
		t.Fatal(err)
	}
	if !f.Untitled() {
		t.Fatal("the subagent is titled before its Task call is written")
	}
	if did, err := f.Retitle(ctx); !did || err != nil || f.Untitled() {
		t.Fatalf("Retitle: %v %v; untitled after: %v", did, err, f.Untitled())
	}
	if did, err := f.Retitle(ctx); did || err != nil {
		t.Fatalf("Retitle of a titled subagent: %v %v", did, err)
	}
	live.Close()
	want, got := importedFiles(t, oneDir, subPath), storeFiles(t, liveDir)
	if !strings.Contains(strings.Join(mapValues(want), ""), "subagent: Check the migration") {
		t.Fatal("the one-shot import did not title the subagent")
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs:\nimport: %s\nfollow: %s", name, w, got[name])
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// An agent JSONL file first seen with its header alone is not taken for
// pi's (their headers look alike): Follow waits for a line that tells.
func TestFollowAutoWaitsPastHeader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "20261120-143012-a3f7c901.jsonl")
	data := []byte(`{"type":"session","id":"a3f7c901-5b2e-4d1c-9f0a-1e2d3c4b5a69","version":1,"timestamp":"2026-11-20T14:30:12.000Z","cwd":"/p"}` + "\n" +
		`{"type":"message","id":"d4e5f6a7","parent_id":null,"timestamp":"2026-11-20T14:30:13.000Z","role":"user","message":{"role":"user","content":[{"type":"text","text":"List the files"}],"timestamp":1763649013000}}` + "\n")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := trove.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	header := data[:bytes.IndexByte(data, '\n')+1]
	if _, err := Follow(st, path, "auto", header); !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("Follow of a header alone: %v, want ErrUnknownSource", err)
	}
	f, err := Follow(st, path, "auto", data)
	if err != nil || f.Format() != "agent-jsonl" {
		t.Fatalf("Follow of a header and a line: %v, format %q", err, f.Format())
	}
}
