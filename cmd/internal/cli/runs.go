package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/runlog"
)

func newRunsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Run logs: list and summarise"}
	open := func(cmd *cobra.Command) (*runlog.Store, error) {
		st, bs, err := a.blobs(cmd.Context())
		if err != nil {
			return nil, err
		}
		return runlog.New(st, runlog.WithBlobs(bs), runlog.WithLogger(a.log))
	}
	var limit int
	var sessionID string
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List runs newest first with their summaries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rl, err := open(cmd)
			if err != nil {
				return err
			}
			opts := []runlog.ListOption{runlog.Limit(limit)}
			if sessionID != "" {
				opts = append(opts, runlog.ForSession(sessionID))
			}
			sums := []runlog.Summary{}
			for sum, err := range rl.Summaries(cmd.Context(), opts...) {
				if err != nil {
					return err
				}
				sums = append(sums, sum)
			}
			if a.jsonOut {
				return a.printJSON(sums)
			}
			for _, s := range sums {
				a.printf("%-36s %-11s %8s  llm=%d tools=%d errors=%d  %s\n", s.RunID, s.Status,
					(time.Duration(s.DurationMS) * time.Millisecond).String(), s.LLMCalls, s.ToolCalls, s.Errors, s.Input)
			}
			return nil
		},
	}
	ls.Flags().IntVar(&limit, "limit", 50, "at most this many runs (each summary reads its run)")
	ls.Flags().StringVar(&sessionID, "session", "", "only runs of this session id")
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Summarise one run (id or unique prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rl, err := open(cmd)
			if err != nil {
				return err
			}
			s, err := rl.Summary(cmd.Context(), args[0])
			if errors.Is(err, runlog.ErrInvalid) {
				return usageErr("%v", err)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(s)
			}
			a.printf("run %s (session %s)\nstatus %s, %d ms, model %s\nllm calls %d (unanswered %d), tokens in %d out %d\ntool calls %d (errors %d), errors %d, records %d\n",
				s.RunID, s.SessionID, s.Status, s.DurationMS, s.Model, s.LLMCalls, s.LLMUnanswered,
				s.Tokens.Input, s.Tokens.Output, s.ToolCalls, s.ToolErrors, s.Errors, s.Records)
			return nil
		},
	}
	cmd.AddCommand(ls, show)
	return cmd
}
