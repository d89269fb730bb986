package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
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
	list []session.Problem
}

func (p *problems) opt() session.Option {
	return session.WithReport(func(pr session.Problem) {
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

// countingStorage counts WriteFile calls and can fail writes on demand.
type countingStorage struct {
	backend.Storage
	mu         sync.Mutex
	writeFiles int
	failWrites error // returned by WriteFile, OpenWriter and Writer.Write once set
	failAfter  int   // Writer.Write calls that succeed before failWrites applies
}

func (c *countingStorage) WriteFile(ctx context.Context, name string, data []byte) error {
	c.mu.Lock()
	c.writeFiles++
	fail := c.failWrites
	c.mu.Unlock()
	if fail != nil {
		return fail
	}
	return c.Storage.WriteFile(ctx, name, data)
}

func (c *countingStorage) OpenWriter(ctx context.Context, name string, opt backend.WriterOptions) (backend.Writer, error) {
	w, err := c.Storage.OpenWriter(ctx, name, opt)
	if err != nil {
		return nil, err
	}
	return &failingWriter{Writer: w, c: c}, nil
}

type failingWriter struct {
	backend.Writer
	c *countingStorage
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	fail := w.c.failWrites != nil && w.c.failAfter <= 0
	w.c.failAfter--
	err := w.c.failWrites
	w.c.mu.Unlock()
	if fail {
		return 0, err
	}
	return w.Writer.Write(p)
}

func (w *failingWriter) Sync() error {
	w.c.mu.Lock()
	err := w.c.failWrites
	w.c.mu.Unlock()
	if err != nil && w.c.failAfter < 0 {
		return err
	}
	return w.Writer.Sync()
}

func userMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1771237260000})
	return b
}

func assistantMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
		"content":    []any{map[string]any{"type": "text", "text": text}},
		"usage":      map[string]any{"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
		"stopReason": "stop", "timestamp": 1771237265000,
	})
	return b
}
