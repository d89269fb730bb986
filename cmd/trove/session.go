package main

import (
	"encoding/json"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend/fs"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session"
)

func newSessionCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Conversation trees (spec 003 v3 JSONL)"}
	var leaf string
	contextCmd := &cobra.Command{
		Use:   "context FILE|ID|PREFIX",
		Short: "Print the context rebuilt at the leaf (or --leaf ID) as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			bs, err := cas.Open(ctx, st)
			if err != nil {
				return err
			}
			opts := []session.Option{session.WithBlobStore(session.CAS(bs)), session.WithLogger(a.log)}
			src, ref := st, args[0]
			if filepath.Ext(ref) == ".jsonl" {
				// A file on disk, outside the store: read it in place.
				abs, err := filepath.Abs(ref)
				if err != nil {
					return err
				}
				dirSt, err := fs.NewOS(filepath.Dir(abs))
				if err != nil {
					return err
				}
				defer dirSt.Close()
				src, ref = dirSt, filepath.Base(abs)
			}
			c, err := session.ContextFor(ctx, src, ref, leaf, opts...)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		},
	}
	contextCmd.Flags().StringVar(&leaf, "leaf", "", "rebuild at this entry id instead of the leaf")
	cmd.AddCommand(contextCmd)
	return cmd
}
