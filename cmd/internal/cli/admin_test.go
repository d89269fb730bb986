package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/session"
)

func randomImage(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, 4000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// adminStore makes a store on disk with two sessions sharing one image,
// each with one of its own, and an orphan blob.
func adminStore(t *testing.T) (dir string, a, b string, shared, onlyA, onlyB, orphan cas.Ref) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	s, err := troveapi.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func(own []byte) string {
		h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/x", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []json.RawMessage{conformance.OneStoreImage("shared", randomImage(1)), conformance.OneStoreReply("ok"),
			conformance.OneStoreImage("own", own), conformance.OneStoreReply("done")} {
			if err := h.AppendMessage(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return h.ID()
	}
	a, b = mk(randomImage(2)), mk(randomImage(3))
	shared, _ = cas.Sum(cas.SHA256, randomImage(1))
	onlyA, _ = cas.Sum(cas.SHA256, randomImage(2))
	onlyB, _ = cas.Sum(cas.SHA256, randomImage(3))
	if orphan, err = s.Blobs().Put(ctx, randomImage(4)); err != nil {
		t.Fatal(err)
	}
	return
}

func blobPath(dir string, r cas.Ref) string {
	return filepath.Join(dir, "blobs", "sha256", r.Hex()[:2], r.Hex())
}

func TestGCAndRm(t *testing.T) {
	dir, a, b, shared, onlyA, onlyB, orphan := adminStore(t)
	code, out, errOut := trove(t, "", "--store", dir, "gc", "--dry-run", "--grace", "0", "--json")
	if code != exitOK {
		t.Fatalf("gc --dry-run: %d %s", code, errOut)
	}
	var rep gcJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Freed) != 1 || rep.Freed[0] != orphan.String() {
		t.Fatalf("dry run: %+v", rep)
	}
	if _, err := os.Stat(blobPath(dir, orphan)); err != nil {
		t.Fatal("a dry run removed a blob")
	}
	if code, out, errOut := trove(t, "", "--store", dir, "gc", "--grace", "0"); code != exitOK || !strings.Contains(out, "freed 1 blobs") {
		t.Fatalf("gc: %d %s %s", code, out, errOut)
	}
	if code, out, _ := trove(t, "", "--store", dir, "fsck"); code != exitOK || !strings.Contains(out, ": 0 problems") {
		t.Fatalf("fsck after gc: %d %s", code, out)
	}
	if code, out, errOut := trove(t, "", "--store", dir, "rm", a); code != exitOK || !strings.Contains(out, "removed "+a) {
		t.Fatalf("rm: %d %s %s", code, out, errOut)
	}
	if code, _, _ := trove(t, "", "--store", dir, "show", a); code == exitOK {
		t.Fatal("a removed session still shows")
	}
	if code, _, errOut := trove(t, "", "--store", dir, "gc", "--grace", "0"); code != exitOK {
		t.Fatal(errOut)
	}
	for ref, want := range map[cas.Ref]bool{shared: true, onlyB: true, onlyA: false, orphan: false} {
		if _, err := os.Stat(blobPath(dir, ref)); (err == nil) != want {
			t.Errorf("blob %s present=%v, want %v", ref, err == nil, want)
		}
	}
	if code, out, _ := trove(t, "", "--store", dir, "show", b); code != exitOK || !strings.Contains(out, "done") {
		t.Fatalf("the other session after gc: %d %s", code, out)
	}
	if code, out, _ := trove(t, "", "--store", dir, "fsck"); code != exitOK {
		t.Fatalf("fsck: %d %s", code, out)
	}
	if code, _, _ := trove(t, "", "--store", dir, "gc", "--grace", "-1s"); code != exitUsage {
		t.Errorf("negative grace: exit %d", code)
	}
}

func TestFsckNamesDamage(t *testing.T) {
	dir, a, _, shared, onlyA, _, _ := adminStore(t)
	// A flipped byte in a blob, a deleted blob, a truncated session file.
	p := blobPath(dir, shared)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blobPath(dir, onlyA)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*", "*"+a+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("session file of %s: %v", a, files)
	}
	sess, _ := os.ReadFile(files[0])
	if err := os.WriteFile(files[0], sess[:len(sess)-30], 0o600); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, files[0])
	code, out, _ := trove(t, "", "--store", dir, "fsck")
	if code != exitProblems {
		t.Fatalf("fsck exit %d, want %d:\n%s", code, exitProblems, out)
	}
	for _, want := range []string{shared.String(), onlyA.String(), filepath.ToSlash(rel) + ":"} {
		if !strings.Contains(out, want) {
			t.Errorf("fsck output does not name %s:\n%s", want, out)
		}
	}
	code, out, _ = trove(t, "", "--store", dir, "--json", "fsck")
	var rep fsckJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitProblems || len(rep.Problems) < 3 {
		t.Fatalf("fsck --json: %d %v %s", code, err, out)
	}

	// blob get never writes a corrupt blob's bytes.
	code, out, _ = trove(t, "", "--store", dir, "blob", "get", shared.String())
	if code == exitOK || out != "" {
		t.Errorf("blob get of a corrupt blob: exit %d, %d bytes out", code, len(out))
	}
	target := filepath.Join(t.TempDir(), "img.png")
	if code, _, _ := trove(t, "", "--store", dir, "blob", "get", "-o", target, shared.String()); code == exitOK {
		t.Error("blob get -o of a corrupt blob succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(target), "*")); len(left) != 0 {
		t.Errorf("blob get -o left %v", left)
	}
}

func TestBlobGetToFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.bin")
	want := randomImage(9)
	if err := os.WriteFile(src, want, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := trove(t, "", "--store", filepath.Join(dir, "store"), "blob", "put", src)
	if code != exitOK {
		t.Fatal(errOut)
	}
	ref := strings.TrimSpace(out)
	target := filepath.Join(dir, "out.bin")
	if code, _, errOut := trove(t, "", "--store", filepath.Join(dir, "store"), "blob", "get", "-o", target, ref); code != exitOK {
		t.Fatal(errOut)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, want) {
		t.Error("blob get -o wrote other bytes")
	}
	if code, out, _ := trove(t, "", "--store", filepath.Join(dir, "store"), "blob", "get", ref); code != exitOK || out != string(want) {
		t.Error("blob get to stdout wrote other bytes")
	}
}

func TestCheckpointAdmin(t *testing.T) {
	store, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Taken in an order their names do not sort in: ls lists them as taken.
	for _, name := range []string{"second", "first"} {
		if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "create", "--dir", ws, name); code != exitOK {
			t.Fatal(errOut)
		}
	}
	code, out, _ := trove(t, "", "--store", store, "checkpoint", "ls", "--dir", ws)
	if code != exitOK || !strings.Contains(out, "first") || strings.Index(out, "second") > strings.Index(out, "first") {
		t.Fatalf("checkpoint ls, oldest first: %d %s", code, out)
	}
	code, out, _ = trove(t, "", "--store", store, "checkpoint", "show", "--dir", ws, "first")
	if code != exitOK || !strings.Contains(out, "a.txt") {
		t.Fatalf("checkpoint show: %d %s", code, out)
	}
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "rm", "--dir", ws, "first"); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, _ = trove(t, "", "--store", store, "--json", "checkpoint", "ls", "--dir", ws)
	var list []checkpointJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != exitOK || len(list) != 1 || list[0].ID != "second" || list[0].Files != 1 {
		t.Fatalf("checkpoint ls after rm: %d %v %s", code, err, out)
	}
	if code, _, _ := trove(t, "", "--store", store, "checkpoint", "show", "--dir", ws, "first"); code == exitOK {
		t.Error("a removed checkpoint still shows")
	}
	if code, out, _ := trove(t, "", "--store", store, "fsck"); code != exitOK {
		t.Errorf("fsck: %s", out)
	}
}

// Paths given to checkpoint create resolve as people type them.
func TestCheckpointPaths(t *testing.T) {
	store, ws := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.txt", "src/b.txt"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(ws, "src"))
	if code, _, errOut := trove(t, "", "--store", store, "checkpoint", "create", "--dir", ws, "c", "../a.txt", "b.txt", filepath.Join(ws, "a.txt")); code != exitOK {
		t.Fatalf("create: %s", errOut)
	}
	code, out, _ := trove(t, "", "--store", store, "--json", "checkpoint", "show", "--dir", ws, "c")
	var man struct {
		Files []struct {
			Path   string `json:"path"`
			Exists bool   `json:"exists"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &man); err != nil || code != exitOK {
		t.Fatalf("show: %v %s", err, out)
	}
	if len(man.Files) != 2 || man.Files[0].Path != "a.txt" || man.Files[1].Path != "src/b.txt" || !man.Files[0].Exists || !man.Files[1].Exists {
		t.Errorf("recorded %+v", man.Files)
	}
	if code, _, _ := trove(t, "", "--store", store, "checkpoint", "create", "--dir", ws, "d", "/etc/hostname"); code != exitUsage {
		t.Errorf("a path outside the workspace: exit %d", code)
	}
	_, _, errOut := trove(t, "", "--store", store, "checkpoint", "create", "--dir", ws, "e", "missing.txt")
	if !strings.Contains(errOut, "missing.txt does not exist") {
		t.Errorf("a missing path is not reported: %q", errOut)
	}
}

func TestUnlock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A bucket store: writers hold leases.
	url := "fileblob://" + dir
	code, out, errOut := trove(t, "", "--store", url, "--json", "demo")
	if code != exitOK {
		t.Fatalf("demo: %s %s", errOut, out)
	}
	var demo map[string]any
	if err := json.Unmarshal([]byte(out), &demo); err != nil {
		t.Fatal(err)
	}
	id := demo["session"].(string)
	if code, out, _ := trove(t, "", "--store", url, "unlock", id); code != exitOK || !strings.Contains(out, "nothing to unlock") {
		t.Fatalf("unlock of a closed session: %d %s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*", "*"+id))
	if len(files) != 1 {
		t.Fatalf("sidecar of %s: %v", id, files)
	}
	host, _ := os.Hostname()
	lease := filepath.Join(files[0], "writer.lease")
	write := func(pid int) {
		b, _ := json.Marshal(map[string]any{"host": host, "pid": pid, "since": "2026-11-24T10:00:00Z"})
		if err := os.WriteFile(lease, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(os.Getpid()) // a live writer
	code, _, errOut = trove(t, "", "--store", url, "unlock", id)
	if code != exitUsage || !strings.Contains(errOut, "looks alive") || !strings.Contains(errOut, fmt.Sprint(os.Getpid())) {
		t.Errorf("unlock of a live lease: %d %s", code, errOut)
	}
	if _, err := os.Stat(lease); err != nil {
		t.Fatal("a live lease was removed without --force")
	}
	if code, out, _ := trove(t, "", "--store", url, "unlock", "--force", id); code != exitOK || !strings.Contains(out, "removed the lease") {
		t.Errorf("unlock --force: %d %s", code, out)
	}
	write(1 << 30) // a pid no process has
	if code, out, _ := trove(t, "", "--store", url, "unlock", id); code != exitOK || !strings.Contains(out, "removed the lease") {
		t.Errorf("unlock of a dead writer's lease: %d %s", code, out)
	}
	// A local store: a live writer's file lock cannot be removed, and says so.
	store := t.TempDir()
	s, err := troveapi.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if err := h.AppendMessage(ctx, []byte(`{"role":"user","content":"q","timestamp":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = trove(t, "", "--store", store, "unlock", h.ID())
	if code != exitFailure || !strings.Contains(errOut, "live process holds") {
		t.Errorf("unlock of a live local writer: %d %s", code, errOut)
	}
}
