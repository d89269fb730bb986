package cli

import "github.com/spf13/cobra"

func newRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID-OR-PREFIX...",
		Short: "Delete sessions: the file, metadata, transcript and checkpoints (blobs go at the next gc)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			for _, ref := range args {
				m, err := ts.Sessions().Metadata(ctx, ref)
				if id, ok := a.agentRef(ctx, ref, err); ok {
					m, err = ts.Sessions().Metadata(ctx, id)
				}
				if err != nil {
					return storeErr(err)
				}
				if err := ts.Sessions().Delete(ctx, m.ID); err != nil {
					return storeErr(err)
				}
				if !a.jsonOut {
					a.printf("removed %s\n", m.ID)
				}
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"removed": args})
			}
			return nil
		},
	}
}
