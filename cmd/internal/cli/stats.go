package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/catalog"
)

func newStatsCmd(a *app) *cobra.Command {
	var q catalog.StatsQuery
	var since string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Usage: sessions, messages, tokens, cost, tool calls and failures, bytes stored and saved",
		Long: `Add up the store's sessions from its catalog: sessions, messages, tokens
(input, output, cache read and write), cost, tool calls and failed tool
results, in total or --by day (UTC), model (assistant messages), cwd or
tool; and the bytes the session files and their blobs take, with what
storing each blob once saves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if since != "" {
				t, _, err := parseSince(since, time.Now())
				if err != nil {
					return usageErr("--since %q: %v", since, err)
				}
				q.Since = t
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			st, err := ts.Stats(ctx, q)
			if errors.Is(err, fs.ErrInvalid) {
				return usageErr("%v", err)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printRawJSON(st)
			}
			a.printStats(q.By, st)
			return nil
		},
	}
	cmd.Flags().StringVar(&q.By, "by", "", "group by day, model, cwd or tool")
	cmd.Flags().StringVar(&since, "since", "", "entries since a time (RFC 3339, a date, or a duration ago such as 36h)")
	return cmd
}

func (a *app) printStats(by string, st *catalog.Stats) {
	t := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	key := by
	if key == "" {
		key = " "
	}
	fmt.Fprintf(t, "%s\tsessions\tmessages\tinput\toutput\tcache read\tcache write\tcost\ttool calls\tfailures\t\n", key)
	row := func(u catalog.Usage) {
		fmt.Fprintf(t, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t$%.2f\t%d\t%d\t\n", u.Key, u.Sessions, u.Messages, u.Input, u.Output,
			u.CacheRead, u.CacheWrite, u.Cost, u.ToolCalls, u.ToolErrors)
	}
	for _, g := range st.Groups {
		row(g)
	}
	total := st.Total
	total.Key = "total"
	row(total)
	t.Flush()
	a.printf("\nsession files %s, blobs %d: %s stored (%s before compression), %s saved by storing each once\n",
		humanBytes(st.SessionBytes), st.Blobs, humanBytes(st.BlobBytes), humanBytes(st.BlobOriginal), humanBytes(st.DedupSaved))
}
