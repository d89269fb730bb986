package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"testing"

	"github.com/trovekit/trove/cas"
)

// memBlobs is a blob store of a few blobs, stored at half their size.
type memBlobs map[string][]byte

func (m memBlobs) put(data string) string {
	sum := sha256.Sum256([]byte(data))
	ref := "blob:sha256:" + hex.EncodeToString(sum[:])
	m[ref] = []byte(data)
	return ref
}

func (m memBlobs) Get(_ context.Context, ref cas.Ref) ([]byte, error) {
	if b, ok := m[ref.String()]; ok {
		return b, nil
	}
	return nil, fs.ErrNotExist
}

func (m memBlobs) Stat(_ context.Context, ref cas.Ref) (cas.Info, error) {
	b, ok := m[ref.String()]
	if !ok {
		return cas.Info{}, fs.ErrNotExist
	}
	return cas.Info{Ref: ref, Size: int64(len(b)), StoredSize: int64(len(b) / 2)}, nil
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	st := newMem()
	blobs := memBlobs{}
	output := blobs.put("a long tool output mentioning kangaroo")
	usage := map[string]any{"input": 100, "output": 20, "cacheRead": 7, "cacheWrite": 3, "cost": map[string]any{"total": 0.5}}
	for i, cwd := range []string{"/w/a", "/w/a", "/w/b"} {
		s := &fakeSession{id: "s" + string(rune('1'+i)), cwd: cwd, title: "t"}
		s.message("e1", "", map[string]any{"role": "user", "content": "hi"})
		s.message("e2", "e1", map[string]any{"role": "assistant", "model": []string{"m1", "m2", "m1"}[i], "usage": usage, "content": []any{
			map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{"command": "ls"}},
			map[string]any{"type": "toolCall", "id": "c2", "name": "edit", "arguments": map[string]any{"path": "x"}},
		}})
		s.message("e3", "e2", map[string]any{"role": "toolResult", "toolName": "bash", "isError": i == 0, "content": []any{
			map[string]any{"type": "text", "text": "[stored]", "textRef": output},
		}})
		writeFile(t, st, s.path(), s.bytes())
	}
	c, err := Open(ctx, t.TempDir(), st, blobs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.Stats(ctx, StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	tot := all.Total
	if tot.Sessions != 3 || tot.Messages != 9 || tot.Input != 300 || tot.Output != 60 || tot.CacheRead != 21 || tot.CacheWrite != 9 ||
		tot.Cost != 1.5 || tot.ToolCalls != 6 || tot.ToolErrors != 1 {
		t.Errorf("total %+v", tot)
	}
	n := int64(len(blobs[output]))
	if all.Blobs != 1 || all.BlobOriginal != n || all.BlobBytes != n/2 || all.DedupSaved != 2*n || all.SessionBytes == 0 {
		t.Errorf("bytes %+v", all)
	}
	// The blob's text is searchable.
	if got := hitKeys(t, c, Query{Text: "kangaroo"}); len(got) != 3 {
		t.Errorf("blob text: %q", got)
	}
	by := func(key string) map[string]Usage {
		s, err := c.Stats(ctx, StatsQuery{By: key})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Usage{}
		for _, g := range s.Groups {
			out[g.Key] = g
		}
		return out
	}
	if m := by(ByModel); len(m) != 2 || m["m1"].Sessions != 2 || m["m1"].Input != 200 || m["m2"].Cost != 0.5 {
		t.Errorf("by model %+v", m)
	}
	if m := by(ByCwd); m["/w/a"].Sessions != 2 || m["/w/b"].Messages != 3 {
		t.Errorf("by cwd %+v", m)
	}
	if m := by(ByTool); m["bash"].ToolCalls != 3 || m["bash"].ToolErrors != 1 || m["edit"].ToolCalls != 3 || m["edit"].Sessions != 3 {
		t.Errorf("by tool %+v", m)
	}
	if m := by(ByDay); m["2026-01-02"].Messages != 9 || m["2026-01-01"].Sessions != 3 { // the title rows, on the day of the header
		t.Errorf("by day %+v", m)
	}
	if _, err := c.Stats(ctx, StatsQuery{By: "planet"}); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("by planet: %v", err)
	}
}
