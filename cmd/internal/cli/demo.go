package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend/crypt"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/export"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// newDemoCmd plays a realistic agent session on a store (the default local
// root unless --store says otherwise) and says what it did at each step,
// with the commands to look at each piece.
func newDemoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Play an agent session (images, tool output, a branch, a compaction, a fork, a checkpoint and its rewind, a run log)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			d := &demo{a: a, s: ts, now: time.Now()}
			return d.run(ctx)
		},
	}
}

type demo struct {
	a   *app
	s   *troveapi.Store
	now time.Time
	n   int // messages so far, for timestamps
}

func (d *demo) ts() int64 {
	d.n++
	return d.now.Add(time.Duration(d.n) * time.Second).UnixMilli()
}

func (d *demo) user(text string, image []byte) json.RawMessage {
	content := []map[string]any{{"type": "text", "text": text}}
	if image != nil {
		content = append(content, map[string]any{"type": "image", "data": base64.StdEncoding.EncodeToString(image), "mimeType": "image/png"})
	}
	return mustMarshal(map[string]any{"role": "user", "content": content, "timestamp": d.ts()})
}

func (d *demo) assistant(thinking, text string, call map[string]any) json.RawMessage {
	var content []map[string]any
	if thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": thinking})
	}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	stop := "stop"
	if call != nil {
		content = append(content, call)
		stop = "toolUse"
	}
	in, out := 1200+100*d.n, 80+10*d.n
	cost := map[string]any{"input": float64(in) * 3e-6, "output": float64(out) * 15e-6, "cacheRead": 0, "cacheWrite": 0, "total": float64(in)*3e-6 + float64(out)*15e-6}
	return mustMarshal(map[string]any{
		"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "demo", "model": "demo-model",
		"usage":      map[string]any{"input": in, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": in + out, "cost": cost},
		"stopReason": stop, "timestamp": d.ts(),
	})
}

func (d *demo) toolResult(id, name, text string, isError bool) json.RawMessage {
	return mustMarshal(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": name,
		"content": []map[string]any{{"type": "text", "text": text}}, "isError": isError, "timestamp": d.ts()})
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values only
	}
	return b
}

// screenshot is a deterministic stand-in for a PNG screenshot: random
// bytes do not compress, like real image data.
func screenshot(seed uint64) []byte {
	// A terminal of test output: rows of light "words" on a dark ground,
	// the failing line in red; a real PNG, so exports show it.
	r := rand.New(rand.NewPCG(seed, seed))
	const w, h = 640, 240
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{30, 30, 36, 255}}, image.Point{}, draw.Src)
	for row := 0; row < 12; row++ {
		ink := color.RGBA{200, 200, 200, 255}
		if row == 7 {
			ink = color.RGBA{230, 80, 80, 255}
		}
		y := 12 + row*18
		for x := 10; x < w-40; {
			word := 8 + r.IntN(48)
			draw.Draw(img, image.Rect(x, y, x+word, y+10), &image.Uniform{ink}, image.Point{}, draw.Src)
			x += word + 7
			if r.IntN(6) == 0 {
				break
			}
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// say prints for people; under --json the demo prints one object at the end.
func (d *demo) say(format string, args ...any) {
	if !d.a.jsonOut {
		d.a.printf(format, args...)
	}
}

func (d *demo) run(ctx context.Context) error {
	a, s := d.a, d.s
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	d.say("store: %s\n", a.storeName())

	ws, cleanup, err := d.workspace()
	if err != nil {
		return err
	}
	defer cleanup()
	mainGo := filepath.Join(ws, "greet.go")

	// 1. The conversation, as an agent loop keeps it.
	h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: cwd, Model: "demo-model", AgentName: "trove-demo", Title: "fix the greeting"})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	w, err := s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID(), SessionID: h.ID()})
	if err != nil {
		return err
	}
	defer w.Close()
	prompt := "The greeting test fails; here is a screenshot of the output."
	if err := w.Append(ctx, &runlog.RunStart{Input: runlog.Input{Type: "text", Text: prompt}}); err != nil {
		return err
	}
	shot := screenshot(1)
	listing := strings.Repeat("greet.go\ngreet_test.go\nREADME.md\n", 3000) // ~100 KB of tool output
	cps, err := s.SessionCheckpoints(h, ws)
	if err != nil {
		return err
	}
	defer cps.Close()

	steps := []json.RawMessage{
		d.user(prompt, shot),
		d.assistant("The screenshot shows \"bye\"; the test wants \"hello\". Let me look at the files.", "",
			map[string]any{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": map[string]any{"command": "ls -R"}}),
		d.toolResult("call-1", "bash", listing, false),
	}
	for _, m := range steps {
		if err := h.AppendMessage(ctx, m); err != nil {
			return err
		}
	}
	if err := d.llm(ctx, w, listing); err != nil {
		return err
	}

	// 2. A checkpoint before the edit, a bad edit, and its rewind.
	if _, err := cps.Create(ctx, "before-edit", []string{"greet.go"}); err != nil {
		return err
	}
	if err := os.WriteFile(mainGo, []byte("package greet\n\nfunc Greet() string { return \"hello\n"), 0o644); err != nil {
		return err
	}
	buildErr := "greet.go:3:41: newline in string"
	for _, m := range []json.RawMessage{
		d.assistant("", "Changing the greeting.", map[string]any{"type": "toolCall", "id": "call-2", "name": "edit", "arguments": map[string]any{"path": "greet.go"}}),
		d.toolResult("call-2", "edit", buildErr, true),
	} {
		if err := h.AppendMessage(ctx, m); err != nil {
			return err
		}
	}
	res, err := cps.Rewind(ctx, "before-edit", false)
	if err != nil {
		return err
	}
	if err := os.WriteFile(mainGo, []byte("package greet\n\nfunc Greet() string { return \"hello\" }\n"), 0o644); err != nil {
		return err
	}
	if err := h.AppendMessage(ctx, d.assistant("The edit broke the build; I rewound greet.go and made it again.", "Fixed: Greet returns \"hello\".", nil)); err != nil {
		return err
	}
	if err := w.Append(ctx, &runlog.ToolOutput{Tool: "bash", ToolCallID: "call-1", ResultRaw: listing}); err != nil {
		return err
	}
	if err := w.Append(ctx, &runlog.RunEnd{Outcome: runlog.OutcomeCompleted}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}

	// 3. A branch and a compaction.
	branchMsg, entries, err := d.branchAndCompact(ctx, h)
	if err != nil {
		return err
	}
	if err := h.Close(ctx); err != nil {
		return err
	}
	d.say("1. session %s in %s: a prompt with a screenshot (kept as a blob), thinking, a tool call and its %s output (a blob)\n",
		h.ID(), cwd, humanBytes(int64(len(listing))))
	d.say("2. checkpoint before-edit of %s, a bad edit, then rewind: %d file(s) restored\n", ws, len(res.FilesChanged))

	d.say("3. a branch from the first message (%s) and a compaction keeping the fix, labelled \"fixed\"\n", branchMsg.ID())

	// 4. A fork at the first reply.
	f, err := s.Sessions().Fork(ctx, h.ID(), session.ForkOptions{At: entries[1].ID()})
	if err != nil {
		return err
	}
	if err := f.Close(ctx); err != nil {
		return err
	}
	d.say("4. fork %s of the session at its first reply (images shared by ref, not copied)\n", f.ID())

	// 5. The session as one self-contained HTML page, beside the workspace.
	page := ws + ".html"
	view, _, err := s.ReadSession(ctx, h.ID())
	if err != nil {
		return err
	}
	if err := writeFileAtomic(page, func(w io.Writer) error { return export.HTML(ctx, w, view) }); err != nil {
		return err
	}
	d.say("5. exported the session as HTML: %s (one file, no network; open it in a browser)\n", page)

	// 6. fsck.
	rep, err := s.Check(ctx)
	if err != nil {
		return err
	}
	d.say("6. run log %s; fsck: %d sessions, %d checkpoints, %d run files, %d blobs, %d problems\n",
		w.RunID(), rep.Sessions, rep.Checkpoints, rep.Runs, rep.Blobs, len(rep.Problems))
	for _, p := range rep.Problems {
		d.say("   %s\n", sanitizeLine(p.String()))
	}
	if !rep.OK() {
		return fmt.Errorf("fsck found %d problems", len(rep.Problems))
	}

	if a.jsonOut {
		return a.printJSON(map[string]any{"store": a.storeName(), "session": h.ID(), "fork": f.ID(), "branch_entry": branchMsg.ID(),
			"checkpoint": "before-edit", "workspace": ws, "html": page, "run": w.RunID(), "files_restored": len(res.FilesChanged),
			"blobs": rep.Blobs, "problems": len(rep.Problems)})
	}
	return d.printNext(ctx, h.ID(), f.ID(), branchMsg.ID(), ws, w.RunID())
}

// workspace makes the sample workspace the agent edits, with its one
// file. It lives beside the store's files on a local store, so it can be
// looked at after; a temporary one (cleanup removes it) for other stores.
// An encrypted store's directory holds only its objects: the workspace
// and the HTML page are the user's files, kept in the cache directory.
func (d *demo) workspace() (ws string, cleanup func(), err error) {
	a := d.a
	cleanup = func() {}
	root, local := localRoot(a.storeURL)
	if _, enc := a.st.(*crypt.Storage); enc {
		if root, err = os.UserCacheDir(); err == nil {
			root, local = filepath.Join(root, "trove"), true
		}
	}
	if local {
		ws = filepath.Join(root, "demo", "workspace-"+d.now.UTC().Format("20060102T150405"))
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return "", cleanup, err
		}
	} else {
		if ws, err = os.MkdirTemp("", "trove-demo-workspace-*"); err != nil {
			return "", cleanup, err
		}
		cleanup = func() { os.RemoveAll(ws) }
	}
	mainGo := filepath.Join(ws, "greet.go")
	if err := os.WriteFile(mainGo, []byte("package greet\n\nfunc Greet() string { return \"bye\" }\n"), 0o644); err != nil {
		cleanup()
		return "", func() {}, err
	}
	return ws, cleanup, nil
}

// branchAndCompact adds a branch from the first message and a compaction
// keeping the fix, labelled "fixed"; it returns the branch's message and
// the entries before. The handle appends messages (and counts them); once
// it is flushed, the tree takes the other entries.
func (d *demo) branchAndCompact(ctx context.Context, h *session.Handle) (*tree.Entry, []*tree.Entry, error) {
	if err := h.Flush(ctx); err != nil {
		return nil, nil, err
	}
	sess := h.Session()
	entries := sess.Entries()
	first := entries[0]
	if _, err := sess.BranchWithSummary(ctx, first.ID(), tree.BranchSummary{Summary: "Tried the edit without a checkpoint; it broke the build."}); err != nil {
		return nil, nil, err
	}
	if err := h.AppendMessage(ctx, d.assistant("", "Another way: change the test instead of the code.", nil)); err != nil {
		return nil, nil, err
	}
	if err := h.Flush(ctx); err != nil {
		return nil, nil, err
	}
	branchMsg := sess.Leaf()
	if err := sess.Branch(entries[len(entries)-1].ID()); err != nil {
		return nil, nil, err
	}
	if _, err := sess.Append(ctx, &tree.Compaction{Summary: "The user asked to fix the greeting; greet.go now returns \"hello\" and the test passes.",
		FirstKeptEntryID: entries[len(entries)-1].ID(), TokensBefore: 4200}); err != nil {
		return nil, nil, err
	}
	if _, err := sess.SetLabel(ctx, entries[len(entries)-1].ID(), "fixed"); err != nil {
		return nil, nil, err
	}
	return branchMsg, entries, nil
}

// printNext prints the commands that look at what the demo made.
func (d *demo) printNext(ctx context.Context, sessionID, forkID, branchID, ws, runID string) error {
	a, s := d.a, d.s
	if strings.HasPrefix(a.storeURL, "mem://") {
		d.say("\n(a mem:// store lives as long as the process: run the demo on a real store to look at it after)\n")
		return nil
	}
	var ids []string
	for m, err := range s.Sessions().List(ctx, "") {
		if err != nil {
			return err
		}
		ids = append(ids, m.ID)
	}
	short := map[string]string{}
	for i, a := range session.Abbrev(ids) {
		short[ids[i]] = a
	}
	// Quoted, so a command pastes as it reads: an s3://b?endpoint=...&...
	// URL printed bare would send it to the background at the first &.
	store := ""
	if a.storeURL != "" {
		store = " --store " + shellQuote(a.storeURL)
	}
	d.say("\nlook at it:\n")
	for _, l := range [][2]string{
		{"ls", "the sessions of this directory"},
		{"show " + short[sessionID], "the conversation at its leaf"},
		{"show --leaf " + branchID + " " + short[sessionID], "the branch"},
		{"show " + short[forkID], "the fork"},
		{"checkpoint ls --dir " + shellQuote(ws) + " --session " + short[sessionID], "the session's checkpoint"},
		{"runs show " + runID, "the run log"},
		{"fsck", "check everything"},
		{"serve", "browse it all: open the URL it prints (it holds a token)"},
	} {
		d.say("  %-60s # %s\n", "trove"+store+" "+l[0], l[1])
	}
	return nil
}

// llm records one model call of the demo in the run log.
func (d *demo) llm(ctx context.Context, w *runlog.Writer, _ string) error {
	seq, err := w.Request(ctx, &runlog.LLMRequest{})
	if err != nil {
		return err
	}
	return w.Append(ctx, &runlog.LLMResponse{Seq: seq, Output: runlog.LLMOutput{Usage: &runlog.Usage{InputTokens: 1200, OutputTokens: 80, TotalTokens: 1280}}})
}
