package trove_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// Fake secrets, one per place a transcript holds text.
var planted = map[string]string{
	"user text":   "AKIAQ3EGRTXBK7Z4WUNS",
	"thinking":    "sk_live_4eC39HqLyjWDarjtT1zdp7dcPq0R2vXy",
	"tool call":   "ghp_Z8xk2LmQ9vTnR4bWc7YpJ3sHd6FgA1eK0uVo",
	"tool output": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"run output":  "glpat-Xy9Kq2Lm8Nv4Bw6Zt1Rs",
}

// secretStore is a store with one session holding every planted secret
// (the tool output big enough to be a blob) and a run log with one.
func secretStore(t *testing.T) (*trove.Store, backend.Storage, string) {
	t.Helper()
	return secretStoreOn(t, mem.New())
}

func secretStoreOn(t *testing.T, st backend.Storage) (*trove.Store, backend.Storage, string) {
	t.Helper()
	ctx := context.Background()
	s, err := trove.New(ctx, st, trove.WithToolOutputThreshold(1024))
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/src/app", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("building module github.com/acme/app ... ok\n", 100)
	msgs := []any{
		map[string]any{"role": "user", "content": "deploy with key " + planted["user text"] + " please", "timestamp": 1},
		map[string]any{"role": "assistant", "timestamp": 2, "content": []any{
			map[string]any{"type": "thinking", "thinking": "the stripe key " + planted["thinking"] + " is live"},
			map[string]any{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": map[string]any{"command": "GITHUB_TOKEN=" + planted["tool call"] + " gh pr list"}},
		}},
		map[string]any{"role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "timestamp": 3, "isError": false,
			"content": []any{map[string]any{"type": "text", "text": filler + "SLACK_BOT_TOKEN=" + planted["tool output"] + "\n" + filler}}},
		map[string]any{"role": "assistant", "timestamp": 4, "content": []any{map[string]any{"type": "text", "text": "done, commit 3f9a2c1b7e8d4f6a0b1c2d3e4f5a6b7c8d9e0f1a"}}},
	}
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		if err := h.AppendMessage(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		t.Fatal(err)
	}
	out := filler + "token " + planted["run output"] + "\n" + filler
	if err := w.ToolOutputFrom(ctx, &runlog.ToolOutput{Tool: "bash", ToolCallID: "call_1"}, strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return s, st, h.ID()
}

func TestScanFindsEverySecret(t *testing.T) {
	ctx := context.Background()
	s, _, id := secretStore(t)
	d, err := s.Redactor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	entries := map[string]bool{}
	for f, err := range s.Scan(ctx, d) {
		if err != nil {
			t.Fatal(err)
		}
		if f.SessionID != id || f.EntryID == "" {
			t.Errorf("finding %+v: want session %s and an entry", f, id)
		}
		for _, sec := range planted {
			if strings.Contains(f.Excerpt, sec) {
				t.Errorf("excerpt %q shows a secret", f.Excerpt)
			}
		}
		got[f.Detector] = true
		entries[f.EntryID] = true
	}
	for _, want := range []string{"aws-access-token", "stripe-access-token", "github-pat", "slack-bot-token"} {
		if !got[want] {
			t.Errorf("scan did not report %s (got %v)", want, got)
		}
	}
	if len(entries) != 3 {
		t.Errorf("secrets in %d entries, want 3 (user, assistant, tool result)", len(entries))
	}
	for _, err := range s.Scan(ctx, d, "no-such-session") {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("scan of a missing session: %v, want fs.ErrNotExist", err)
		}
	}
}

// snapshot is every file of st and its bytes.
func snapshot(t *testing.T, st backend.Storage) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for fi, err := range backend.Walk(context.Background(), st, ".") {
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir {
			b, err := st.ReadFile(context.Background(), fi.Name)
			if err != nil {
				t.Fatal(err)
			}
			out[fi.Name] = b
		}
	}
	return out
}

func TestMirrorRedact(t *testing.T) {
	ctx := context.Background()
	s, src, id := secretStore(t)
	// A checkpoint of a workspace whose .env holds a secret.
	ws := t.TempDir()
	const envSecret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc9Rk2Lm8Vx0Qa"
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("STRIPE_KEY="+envSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := s.Checkpoints(ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTree(ctx, "before-deploy"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	before := snapshot(t, src)
	d, err := s.Redactor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := mem.New()
	dry, err := trove.Mirror(ctx, src, dst, trove.MirrorRedact(d), trove.MirrorDryRun())
	if err != nil || dry.Copied == 0 || len(snapshot(t, dst)) != 0 {
		t.Fatalf("dry run: %+v %v, or it wrote", dry, err)
	}
	rep, err := trove.Mirror(ctx, src, dst, trove.MirrorRedact(d))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != dry.Copied {
		t.Errorf("copied %d files, the dry run said %d", rep.Copied, dry.Copied)
	}
	if rep.CheckpointsLeftOut == 0 || dry.CheckpointsLeftOut != rep.CheckpointsLeftOut {
		t.Errorf("checkpoint files left out: %d (dry run %d), want the checkpoint's, counted", rep.CheckpointsLeftOut, dry.CheckpointsLeftOut)
	}
	for name, b := range snapshot(t, dst) {
		if bytes.Contains(b, []byte(envSecret)) {
			t.Errorf("%s of the copy holds the checkpointed .env's secret", name)
		}
	}
	if after := snapshot(t, src); len(after) != len(before) {
		t.Fatal("the source changed")
	} else {
		for name, b := range before {
			if !bytes.Equal(after[name], b) {
				t.Fatalf("source file %s changed", name)
			}
		}
	}
	ds, err := trove.New(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	// No secret in any file or blob of the copy.
	for name, b := range snapshot(t, dst) {
		for where, sec := range planted {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s of the copy holds the %s secret", name, where)
			}
		}
	}
	blobs := 0
	for ref, err := range ds.Blobs().Walk(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := ds.Blobs().Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		blobs++
		if bytes.Contains(b, []byte(envSecret)) {
			t.Errorf("blob %s of the copy holds the checkpointed .env's secret", ref)
		}
		for where, sec := range planted {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("blob %s of the copy holds the %s secret", ref, where)
			}
		}
	}
	if blobs < 2 {
		t.Errorf("the copy has %d blobs, want the tool output's and the run output's", blobs)
	}
	// The copy is a sound store with the same tree, the secrets replaced.
	chk, err := ds.Check(ctx)
	if err != nil || len(chk.Problems) != 0 {
		t.Fatalf("fsck of the copy: %v %v", err, chk.Problems)
	}
	srcEntries, err := s.Sessions().LoadMessages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	dstEntries, err := ds.Sessions().LoadMessages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcEntries) != len(dstEntries) {
		t.Fatalf("copy has %d messages, source %d", len(dstEntries), len(srcEntries))
	}
	var text strings.Builder
	for i := range srcEntries {
		if srcEntries[i].ID() != dstEntries[i].ID() || srcEntries[i].ParentID() != dstEntries[i].ParentID() {
			t.Fatalf("entry %d: ids %s/%s, want %s/%s", i, dstEntries[i].ID(), dstEntries[i].ParentID(), srcEntries[i].ID(), srcEntries[i].ParentID())
		}
		text.Write(dstEntries[i].JSON())
	}
	for _, want := range []string{"[REDACTED:slack-bot-token]", "[REDACTED:github-pat]", "[REDACTED:aws-access-token]", "building module", "commit 3f9a2c1b"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the copy's session (blobs resolved) lacks %q", want)
		}
	}
	again, err := trove.Mirror(ctx, src, dst, trove.MirrorRedact(d))
	if err != nil || again.Copied != 0 {
		t.Fatalf("second redacted mirror copied %d (%v), want 0", again.Copied, err)
	}
}

// A redacted mirror of an encrypted store reads it through its key and
// writes a plain, redacted copy; without the key it refuses and writes
// nothing.
func TestMirrorRedactEncrypted(t *testing.T) {
	ctx := context.Background()
	raw := mem.New()
	cs, err := crypt.Init(ctx, raw, []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := secretStoreOn(t, cs)
	d, err := s.Redactor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := mem.New()
	if _, err := trove.Mirror(ctx, raw, dst, trove.MirrorRedact(d)); !errors.Is(err, crypt.ErrEncrypted) {
		t.Fatalf("redacted mirror of raw ciphertext: %v, want crypt.ErrEncrypted", err)
	}
	if n := len(snapshot(t, dst)); n != 0 {
		t.Fatalf("a refused mirror wrote %d files", n)
	}
	if _, err := trove.Mirror(ctx, cs, dst, trove.MirrorRedact(d)); err != nil {
		t.Fatal(err)
	}
	if enc, err := crypt.IsEncrypted(ctx, dst); err != nil || enc {
		t.Fatalf("the copy is encrypted (%v): keys were copied", err)
	}
	files := snapshot(t, dst)
	if len(files) < 4 {
		t.Fatalf("the copy has %d files", len(files))
	}
	for name, b := range files {
		for where, sec := range planted {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s of the copy holds the %s secret", name, where)
			}
		}
	}
	ds, err := trove.New(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := ds.Check(ctx)
	if err != nil || len(chk.Problems) != 0 || chk.Sessions != 1 {
		t.Fatalf("fsck of the copy: %v %+v", err, chk)
	}
}
