package cli

import (
	"github.com/spf13/cobra"

	"github.com/trovekit/trove/session"
)

func newForkCmd(a *app) *cobra.Command {
	var at string
	var last int
	cmd := &cobra.Command{
		Use:   "fork ID-OR-PREFIX",
		Short: "Fork a session (whole, --at MESSAGE, or only the --last N messages) and print the new id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 0 {
				return usageErr("--last must not be negative")
			}
			ctx := cmd.Context()
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			// The fork is durable before its id is printed, and nothing
			// holds it open: no writer lock is taken.
			meta, err := s.ForkSession(ctx, args[0], session.ForkOptions{At: at, Last: last})
			if id, ok := a.agentRef(ctx, args[0], err); ok {
				meta, err = s.ForkSession(ctx, id, session.ForkOptions{At: at, Last: last})
			}
			if err != nil {
				return storeErr(err)
			}
			if a.jsonOut {
				return a.printJSON(meta)
			}
			a.printf("%s\n", meta.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "fork up to and including this message id")
	cmd.Flags().IntVar(&last, "last", 0, "keep only the last N messages")
	return cmd
}
