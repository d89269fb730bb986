package trove_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/conformance"
	"github.com/trovekit/trove/session"
)

func storeBytes(t *testing.T, st backend.Storage, under string) (total int64) {
	t.Helper()
	for fi, err := range backend.Walk(context.Background(), st, under) {
		if errors.Is(err, fs.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir {
			total += fi.Size
		}
	}
	return total
}

// The quick start's store keeps images once however many forks hold them:
// 50 distinct ~150 KB screenshots, forked 100 times, take at most 1.05x
// the unique image bytes plus the session files.
func TestForksKeepImagesOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := trove.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/shots", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	var unique int64
	var firstB64 string
	for i := range 50 {
		img := make([]byte, 150_000)
		for j := range img {
			img[j] = byte(r.Uint32())
		}
		unique += int64(len(img))
		if i == 0 {
			firstB64 = base64.StdEncoding.EncodeToString(img)[:4096]
		}
		if err := h.AppendMessage(ctx, conformance.OneStoreImage(fmt.Sprintf("screenshot %d", i), img)); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, conformance.OneStoreReply("seen")); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	forks := 100
	if testing.Short() {
		forks = 10
	}
	for range forks {
		f, err := s.Sessions().Fork(ctx, h.ID(), session.ForkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sessions := storeBytes(t, s.Storage(), session.SessionsDir)
	total := storeBytes(t, s.Storage(), ".")
	ratio := float64(total) / float64(unique+sessions)
	t.Logf("%d forks: store %d bytes, images %d, session files %d: %.3fx", forks, total, unique, sessions, ratio)
	if ratio > 1.05 {
		t.Errorf("store holds %.2fx the unique bytes, want <= 1.05x", ratio)
	}
	for fi, err := range backend.Walk(ctx, s.Storage(), session.SessionsDir) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(fi.Name, ".jsonl") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(fi.Name)))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(firstB64)) || !bytes.Contains(data, []byte("blob:sha256:")) {
			t.Errorf("%s holds images inline, not as refs", fi.Name)
		}
	}
}

func ExampleOpen() {
	ctx := context.Background()
	s, err := trove.Open(ctx, "mem://")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	h, _ := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/work/app", Model: "claude-sonnet-4-5"})
	_ = h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"fix the test","timestamp":1}`))
	_ = h.Flush(ctx) // everything appended before is durable
	_ = h.Close(ctx)

	rep, _ := s.GC(ctx)
	fmt.Println("deleted", len(rep.Deleted))
	check, _ := s.Check(ctx)
	fmt.Println("problems", len(check.Problems))
	// Output:
	// deleted 0
	// problems 0
}

// GC and Check tell a progress display how far they are, counting up to
// what their reports say.
func TestProgress(t *testing.T) {
	ctx := context.Background()
	s, err := trove.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(i)}, 4096))
		msg := fmt.Sprintf(`{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}],"timestamp":1}`, img)
		if err := h.AppendMessage(ctx, json.RawMessage(msg)); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var seen []int
	rep, err := s.GC(ctx, trove.GCProgress(func(n int) { seen = append(seen, n) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[len(seen)-1] < rep.Live || !slices.IsSorted(seen) {
		t.Errorf("GC progress %v for %d live refs", seen, rep.Live)
	}
	seen = nil
	check, err := s.Check(ctx, trove.CheckProgress(func(n int) { seen = append(seen, n) }))
	if err != nil {
		t.Fatal(err)
	}
	want := check.Sessions + check.Transcripts + check.Checkpoints + check.Runs + check.Blobs
	if want == 0 || len(seen) != want || seen[len(seen)-1] != want {
		t.Errorf("Check progress %v, report %+v", seen, check)
	}
}
