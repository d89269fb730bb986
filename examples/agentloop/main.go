// Command agentloop is a small agent loop that keeps everything in trove: the
// conversation (a session with an image and a long tool output as blob refs),
// a checkpoint of the workspace before each edit, a rewind when an edit goes
// wrong, and a run log of every model call and tool output. The "model" is
// scripted, so it runs offline:
//
//	go run ./examples/agentloop [-store URL] [-workspace DIR]
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

func main() {
	storeURL := flag.String("store", "mem://", "trove store URL")
	workspace := flag.String("workspace", "", "workspace directory (default: a temporary one)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *storeURL, *workspace); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

// turn is one scripted step of the model: a reply, and maybe a file edit.
type turn struct {
	prompt string
	reply  string
	edit   string // new content of main.go, "" for none
	bad    bool   // the edit breaks the build: rewind it
}

var script = []turn{
	{prompt: "the test fails, here is a screenshot", reply: "main.go returns the wrong greeting; fixing it", edit: "package main\n\nfunc greet() string { return \"hello\" }\n"},
	{prompt: "now make it say hello, world", reply: "changing the greeting", edit: "package main\n\nfunc greet() string { return \"hello, world\n", bad: true},
	{prompt: "that broke the build", reply: "rewound main.go to the checkpoint before my edit"},
}

func run(ctx context.Context, out io.Writer, storeURL, workspace string) error {
	if workspace == "" {
		dir, err := os.MkdirTemp("", "agentloop-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		workspace = dir
	}
	if err := os.WriteFile(filepath.Join(workspace, "main.go"), []byte("package main\n\nfunc greet() string { return \"bye\" }\n"), 0o644); err != nil {
		return err
	}
	s, err := trove.Open(ctx, storeURL)
	if err != nil {
		return err
	}
	defer s.Close()

	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: workspace, Model: "scripted-model", Title: "fix the greeting"})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	cps, err := s.SessionCheckpoints(h, workspace)
	if err != nil {
		return err
	}
	defer cps.Close()
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: script[0].prompt}}); err != nil {
		return err
	}

	lastGood := ""
	for i, t := range script {
		user := userMessage(t.prompt, i == 0)
		if err := h.AppendMessage(ctx, user); err != nil {
			return err
		}
		// The prompt is durable before the model is asked: a crash now
		// loses nothing the user typed.
		if err := h.Flush(ctx); err != nil {
			return err
		}
		seq, err := w.Request(ctx, &runlog.LLMRequest{})
		if err != nil {
			return err
		}
		if err := w.Append(ctx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{Usage: &runlog.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}}}); err != nil {
			return err
		}
		if err := h.AppendMessage(ctx, assistantMessage(t.reply)); err != nil {
			return err
		}
		switch {
		case t.edit != "":
			id := fmt.Sprintf("turn-%d", i+1)
			if _, err := cps.Create(ctx, id, []string{"main.go"}); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(workspace, "main.go"), []byte(t.edit), 0o644); err != nil {
				return err
			}
			// The "tool": a long build log, kept whole as a blob.
			log := strings.Repeat(fmt.Sprintf("build step %d ok\n", i), 5000)
			if err := h.AppendMessage(ctx, toolResult(log)); err != nil {
				return err
			}
			if err := w.Append(ctx, &runlog.ToolOutput{Tool: "build", ToolCallID: id, ResultRaw: log}); err != nil {
				return err
			}
			fmt.Fprintf(out, "turn %d: checkpoint %s, edited main.go\n", i+1, id)
			if t.bad {
				lastGood = id
			}
		case lastGood != "":
			res, err := cps.Rewind(ctx, lastGood, false)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "turn %d: rewound %d files to %s\n", i+1, len(res.FilesChanged), lastGood)
		}
	}
	if err := w.Append(ctx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted}); err != nil {
		return err
	}
	if err := h.Close(ctx); err != nil {
		return err
	}

	sess, err := s.Sessions().LoadMessages(ctx, h.ID())
	if err != nil {
		return err
	}
	got, err := os.ReadFile(filepath.Join(workspace, "main.go"))
	if err != nil {
		return err
	}
	check, err := s.Check(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session %s: %d messages\n", h.ID(), len(sess))
	fmt.Fprintf(out, "main.go after the rewind: %q\n", strings.TrimSpace(string(got)))
	fmt.Fprintf(out, "fsck: %d problems\n", len(check.Problems))
	return nil
}

// A 1x1 PNG, standing in for a screenshot.
var pixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func userMessage(text string, screenshot bool) json.RawMessage {
	content := []map[string]any{{"type": "text", "text": text}}
	if screenshot {
		// Padded to a realistic size so it goes to the blob store.
		img := append(append([]byte{}, pixel...), make([]byte, 4096)...)
		content = append(content, map[string]any{"type": "image", "data": base64.StdEncoding.EncodeToString(img), "mimeType": "image/png"})
	}
	return mustJSON(map[string]any{"role": "user", "content": content, "timestamp": time.Now().UnixMilli()})
}

func assistantMessage(text string) json.RawMessage {
	zero := map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
	return mustJSON(map[string]any{
		"role": "assistant", "content": []map[string]any{{"type": "text", "text": text}},
		"api": "scripted", "provider": "scripted", "model": "scripted-model",
		"usage":      map[string]any{"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120, "cost": zero},
		"stopReason": "stop", "timestamp": time.Now().UnixMilli(),
	})
}

func toolResult(text string) json.RawMessage {
	return mustJSON(map[string]any{"role": "toolResult", "toolCallId": "build", "toolName": "build",
		"content": []map[string]any{{"type": "text", "text": text}}, "isError": false, "timestamp": time.Now().UnixMilli()})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values above
	}
	return b
}
