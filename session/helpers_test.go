package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/faulty"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

func newMem(t testing.TB) *mem.Storage {
	st := mem.New()
	t.Cleanup(func() { st.Close() })
	return st
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// putFixture copies testdata/<name> into st as name and returns its bytes.
func putFixture(t testing.TB, st backend.Storage, file, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	must(t, err)
	must(t, st.WriteFile(context.Background(), name, data))
	return data
}

func read(t testing.TB, st backend.Storage, name string) []byte {
	t.Helper()
	data, err := st.ReadFile(context.Background(), name)
	must(t, err)
	return data
}

// decode parses JSON keeping numbers exact, for meaning-equal comparisons.
func decode(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", truncate(b), err)
	}
	return normNumbers(v)
}

// normNumbers makes 1.0e-7 and 1e-07 compare equal, as JavaScript sees them.
func normNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return x.String()
		}
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normNumbers(e)
		}
	}
	return v
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(decode(t, a), decode(t, b))
}

func truncate(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

// problems collects what a load reports.
type problems struct {
	mu   sync.Mutex
	list []tree.Problem
}

func (p *problems) opt() tree.Option {
	return tree.WithReport(func(pr tree.Problem) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.list = append(p.list, pr)
	})
}

func (p *problems) count(target error) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pr := range p.list {
		if errors.Is(pr, target) {
			n++
		}
	}
	return n
}

func (p *problems) lines(target error) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, pr := range p.list {
		if errors.Is(pr, target) {
			out = append(out, pr.Line)
		}
	}
	return out
}

// countWrites wraps st so that the whole-file writes through it are
// counted.
func countWrites(st backend.Storage) (*faulty.Storage, *atomic.Int64) {
	var n atomic.Int64
	return faulty.New(st, faulty.WithHook(func(op, _ string) error {
		if op == "WriteFile" {
			n.Add(1)
		}
		return nil
	})), &n
}

func userMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1771237260000})
	return b
}

func assistantMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "text", "text": text}},
		"usage": map[string]any{"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": "stop", "timestamp": 1771237265000,
	})
	return b
}

// storeOn opens a session store on st that keeps blobs inline.
func storeOn(t testing.TB, st backend.Storage) *session.Store {
	t.Helper()
	s, err := session.OpenStore(context.Background(), st, session.WithInlineBlobs())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
