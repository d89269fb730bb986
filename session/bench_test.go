package session_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// benchSession writes a session of n entries (user, assistant with usage
// and a tool call, tool result of ~1 KB, in turn) and returns its bytes.
func benchSession(b *testing.B, st backend.Storage, name string, n int) []byte {
	b.Helper()
	s, err := tree.Create(st, name, tree.Header{Cwd: "/bench"}, tree.WithToolResultThreshold(0))
	must(b, err)
	out := strings.Repeat("some tool output, as a shell prints it\n", 26)
	for i := range n {
		var msg json.RawMessage
		switch i % 3 {
		case 0:
			msg = userMsg(fmt.Sprintf("please do step %d of the plan", i))
		case 1:
			msg, _ = json.Marshal(map[string]any{
				"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
				"content": []any{
					map[string]any{"type": "thinking", "thinking": "Let me look at the file first.", "thinkingSignature": "EqQBCkYIBxgCKkB"},
					map[string]any{"type": "toolCall", "id": fmt.Sprint("toolu_", i), "name": "read", "arguments": map[string]any{"path": "src/a.ts"}},
				},
				"usage":      map[string]any{"input": 1200, "output": 80, "cacheRead": 1000, "cacheWrite": 0, "cost": map[string]any{"input": 0.0036, "output": 0.0012, "cacheRead": 0.0003, "cacheWrite": 0, "total": 0.0051}},
				"stopReason": "toolUse", "timestamp": 1771237265000 + i,
			})
		default:
			msg = toolResult(out)
		}
		_, err := s.AppendMessage(ctx, msg)
		must(b, err)
	}
	must(b, s.Close(ctx))
	return read(b, st, name)
}

// BenchmarkLoad loads a 10,000-entry session; the json-* cases decode the
// same lines with encoding/json alone, for comparison in the same run.
func BenchmarkLoad(b *testing.B) {
	st := newMem(b)
	data := benchSession(b, st, "s.jsonl", 10000)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.Run("trove", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			s, err := tree.Open(ctx, st, "s.jsonl")
			if err != nil || s.Len() != 10000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("trove+context", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			s, err := tree.Open(ctx, st, "s.jsonl")
			if err != nil || len(s.Context().Messages) != 10000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-map", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var v map[string]any
				if err := json.Unmarshal(l, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("json-struct", func(b *testing.B) {
		type entry struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			ParentID  *string         `json:"parentId"`
			Timestamp string          `json:"timestamp"`
			Message   json.RawMessage `json:"message"`
		}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var v entry
				if err := json.Unmarshal(l, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

type benchBackend struct {
	name string
	st   func(b *testing.B) backend.Storage
}

func benchBackends() []benchBackend {
	return []benchBackend{
		{"mem", func(b *testing.B) backend.Storage { return newMem(b) }},
		{"fs", func(b *testing.B) backend.Storage {
			st, err := fs.NewOS(b.TempDir())
			must(b, err)
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// BenchmarkAppendFlush is one durable append: a message line and an fsync.
func BenchmarkAppendFlush(b *testing.B) {
	for _, bc := range benchBackends() {
		b.Run(bc.name, func(b *testing.B) {
			s, err := tree.Create(bc.st(b), "s.jsonl", tree.Header{Cwd: "/bench"})
			must(b, err)
			_, err = s.AppendMessage(ctx, assistantMsg("first"))
			must(b, err)
			msg := userMsg(strings.Repeat("a typical prompt of some length ", 8))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.AppendMessage(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			must(b, s.Close(ctx))
		})
	}
}

// BenchmarkDiscovery lists 10,000 session files across 100 cwds.
func BenchmarkDiscovery(b *testing.B) {
	for _, bc := range benchBackends() {
		b.Run(bc.name, func(b *testing.B) {
			st := bc.st(b)
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			body := strings.Repeat(`{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{"role":"assistant","content":"`+strings.Repeat("y", 900)+`"}}`+"\n", 8)
			for i := range 10000 {
				cwd := fmt.Sprintf("/work/project-%d", i%100)
				id := fmt.Sprintf("%016x", i)
				h := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":%q}`+"\n", id, cwd)
				first := `{"type":"message","id":"u","parentId":null,"timestamp":"t","message":{"role":"user","content":"task ` + id + `"}}` + "\n"
				must(b, st.WriteFile(ctx, session.SessionPath(cwd, at.Add(time.Duration(i)*time.Second), id), []byte(h+first+body)))
			}
			store, err := session.OpenStore(ctx, st, session.WithInlineBlobs())
			must(b, err)
			b.ResetTimer()
			for b.Loop() {
				n := 0
				for _, err := range store.Discover(ctx, session.Discovery{All: true}) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 10000 {
					b.Fatalf("%d sessions", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/file")
		})
	}
}

// BenchmarkHandleAppend is the CPU an agent's message costs on its way in
// through a Handle (in memory: no disk), ~1 KiB assistant messages with
// thinking, a tool call and usage, flushed every 64.
func BenchmarkHandleAppend(b *testing.B) {
	st := mem.New()
	defer st.Close()
	s, err := session.OpenStore(ctx, st, session.WithInlineBlobs())
	must(b, err)
	h, err := s.Create(ctx, session.CreateOptions{Cwd: "/bench"})
	must(b, err)
	msg := json.RawMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"` + strings.Repeat("Let me read the file first. ", 12) +
		`","thinkingSignature":"EqQBCkYIBxgCKkB"},{"type":"text","text":"` + strings.Repeat("I will change the loop. ", 12) +
		`"},{"type":"toolCall","id":"toolu_1","name":"read","arguments":{"path":"src/a.ts"}}],"provider":"anthropic","model":"claude-sonnet-4-5",` +
		`"usage":{"input":1200,"output":80,"cacheRead":1000,"cacheWrite":0,"totalTokens":2280,"cost":{"input":0.0036,"output":0.0012,"cacheRead":0.0003,"cacheWrite":0,"total":0.0051}},"stopReason":"toolUse","timestamp":1771237265000}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := h.AppendMessage(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if i++; i%64 == 0 {
			must(b, h.Flush(ctx))
		}
	}
	must(b, h.Close(ctx))
}
