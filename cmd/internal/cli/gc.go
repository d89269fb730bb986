package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
)

func newGCCmd(a *app) *cobra.Command {
	var dryRun bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove blobs no session, checkpoint or run log refers to",
		Long: "Remove blobs no session (any branch, transcript included), checkpoint or run log refers to,\n" +
			"once older than the grace period (default 1h: a blob a live writer has put but not yet\n" +
			"recorded survives), and repack sparse packs and those written since the last gc (versions\n" +
			"of a file or directory side by side, compressed harder), as git gc does.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if grace < 0 {
				return usageErr("--grace %v: must not be negative", grace)
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			pruned, err := a.applyRetention(ctx, ts, dryRun)
			if err != nil {
				return err
			}
			var opts []troveapi.GCOption
			if dryRun {
				opts = append(opts, troveapi.GCDryRun())
			}
			if cmd.Flags().Changed("grace") {
				opts = append(opts, troveapi.GCGrace(grace))
			}
			b := a.progress(-1, "collecting garbage: refs marked")
			opts = append(opts, troveapi.GCProgress(func(n int) { b.set(n, -1) }))
			rep, err := ts.GC(ctx, opts...)
			b.done()
			if err != nil {
				return err
			}
			out := gcJSON{DryRun: rep.DryRun, Live: rep.Live, Kept: rep.Kept, Freed: []string{}, FreedBytes: rep.DeletedBytes,
				Young: rep.Young, Repacked: rep.Repacked, Removed: append([]string{}, rep.Removed...),
				SessionRefs: rep.SessionRefs, CheckpointRefs: rep.CheckpointRefs, RunRefs: rep.RunRefs}
			for _, it := range pruned.Removed {
				out.Pruned = append(out.Pruned, itemJSON{it.Kind, it.ID})
			}
			for _, r := range rep.Deleted {
				out.Freed = append(out.Freed, r.String())
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			if len(pruned.Removed) > 0 {
				if err := a.printPruned(pruned); err != nil {
					return err
				}
			}
			verb := "freed"
			if dryRun {
				verb = "would free"
			}
			a.printf("roots: %d refs (sessions %d, checkpoints %d, runs %d)\n", rep.Live, rep.SessionRefs, rep.CheckpointRefs, rep.RunRefs)
			a.printf("kept %d blobs; %s %d blobs (%s); %d unreferenced kept for the grace period; %d packs repacked, %d objects removed\n",
				rep.Kept, verb, len(rep.Deleted), humanBytes(rep.DeletedBytes), rep.Young, rep.Repacked, len(rep.Removed))
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be freed and change nothing")
	cmd.Flags().DurationVar(&grace, "grace", time.Hour, "keep unreferenced blobs younger than this")
	return cmd
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// gcJSON is `trove gc --json`.
type gcJSON struct {
	DryRun         bool     `json:"dry_run"`
	Live           int      `json:"live"`
	Kept           int      `json:"kept"`
	Freed          []string `json:"freed"`
	FreedBytes     int64    `json:"freed_bytes"`
	Young          int      `json:"young"`
	Repacked       int      `json:"repacked"`
	Removed        []string `json:"removed_objects"`
	SessionRefs    int      `json:"session_refs"`
	CheckpointRefs int      `json:"checkpoint_refs"`
	RunRefs        int      `json:"run_refs"`
	// Pruned is what the retention policy of config.json removed first.
	Pruned []itemJSON `json:"pruned,omitempty"`
}
