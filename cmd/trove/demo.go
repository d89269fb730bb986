package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session"
)

// newDemoCmd runs the main job end to end on a store (the default local root
// unless --store says otherwise) and says what it did at each step.
func newDemoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Exercise a store end to end and print what happened",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			a.printf("store: %s\n", a.storeName())
			caps := st.Capabilities()
			a.printf("capabilities: atomic-rename=%v native-append=%v locks=%v durable=%v\n",
				caps.AtomicRename, caps.NativeAppend, caps.Locks, caps.Durable)

			dir := backend.Join("demo", time.Now().UTC().Format("20060102T150405.000Z"))
			if err := st.EnsureDir(ctx, dir); err != nil {
				return err
			}
			note := backend.Join(dir, "note.txt")
			body := []byte("trove keeps what coding agents must not lose\n")
			if err := st.WriteFile(ctx, note, body); err != nil {
				return err
			}
			a.printf("wrote %s (%d bytes, atomic)\n", note, len(body))

			logName := backend.Join(dir, "events.jsonl")
			w, err := st.OpenWriter(ctx, logName, backend.WriterOptions{Exclusive: true})
			if err != nil {
				return err
			}
			for i := range 3 {
				if _, err := fmt.Fprintf(w, "{\"seq\":%d,\"event\":\"step\"}\n", i); err != nil {
					w.Close()
					return err
				}
			}
			if err := w.Sync(); err != nil {
				w.Close()
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			a.printf("appended 3 records to %s and synced\n", logName)

			got, err := st.ReadFile(ctx, note)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, body) {
				return fmt.Errorf("read back %s: content differs", note)
			}
			head, err := st.ReadPrefix(ctx, logName, 64)
			if err != nil {
				return err
			}
			first, _, _ := bytes.Cut(head, []byte("\n"))
			a.printf("read back %s: identical; first line of the log (a 64-byte prefix read): %s\n", note, first)

			_, bs, err := a.blobs(ctx)
			if err != nil {
				return err
			}
			output := bytes.Repeat([]byte("tool output line that an agent must keep\n"), 4096)
			ref, err := bs.Put(ctx, output)
			if err != nil {
				return err
			}
			info, err := bs.Stat(ctx, ref)
			if err != nil {
				return err
			}
			back, err := bs.Get(ctx, ref)
			if err != nil || !bytes.Equal(back, output) {
				return fmt.Errorf("blob %s did not come back whole: %v", ref, err)
			}
			a.printf("stored a %d-byte tool output as %s (%d bytes on the store, %s), read back verified\n",
				info.Size, ref, info.StoredSize, info.Codec)

			// A conversation, as an agent loop keeps it: the session store,
			// the tool output above referenced by its blob ref.
			ss, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			h, err := ss.Create(ctx, session.CreateOptions{Cwd: "/" + dir, Model: "demo-model", AgentName: "trove-demo"})
			if err != nil {
				return err
			}
			for _, m := range []string{
				`{"role":"user","content":"list the files","timestamp":1}`,
				`{"role":"assistant","content":[{"type":"text","text":"Running ls."}],"model":"demo-model","usage":{"input":12,"output":4,"cost":{"total":0.0001}},"timestamp":2}`,
				fmt.Sprintf(`{"role":"toolResult","toolCallId":"call-1","toolName":"bash","content":[{"type":"text","text":"see %s"}],"isError":false,"timestamp":3}`, ref),
				`{"role":"assistant","content":[{"type":"text","text":"Done."}],"model":"demo-model","usage":{"input":20,"output":2},"timestamp":4}`,
			} {
				if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
					h.Close(ctx)
					return err
				}
			}
			if err := h.Close(ctx); err != nil {
				return err
			}
			meta, err := ss.Metadata(ctx, h.ID())
			if err != nil {
				return err
			}
			a.printf("session %s: %d messages, %d turns, %d tokens, written to %s (see it: trove show %s)\n",
				meta.ID, meta.MessageCount, meta.TurnCount, meta.TotalTokens, meta.Path, meta.ID)

			a.printf("listing %s:\n", dir)
			for info, err := range st.List(ctx, dir) {
				if err != nil {
					return err
				}
				a.printf("  %-40s %6d bytes\n", info.Name, info.Size)
			}
			return nil
		},
	}
}
