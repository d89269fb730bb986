package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend"
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
			head, err := st.ReadPrefix(ctx, logName, 26)
			if err != nil {
				return err
			}
			a.printf("read back %s: identical; first line of the log: %s\n", note, bytes.TrimSpace(head))

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
