package cli

import (
	"cmp"
	"context"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
)

// itemJSON is one line of `trove prune --json` and `trove pin --json`.
type itemJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// printLine writes v as one compact JSON line (for streams of objects).
func (a *app) printLine(v any) error {
	b, err := normalize(v)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(append(b, '\n'))
	return err
}

func newPruneCmd(a *app) *cobra.Command {
	var within, cwd string
	var last int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --keep-within DURATION | --keep-last N [--cwd DIR] [--dry-run]",
		Short: "Remove old sessions, workspace checkpoints and runs by a retention policy",
		Long: "Remove the sessions, workspace checkpoints and run logs no rule keeps, as restic forget does:\n" +
			"--keep-within keeps what was updated within DURATION before now (720h, 30d, 2w, 1w3d),\n" +
			"--keep-last keeps the N newest of each cwd (each workspace, for checkpoints); an item is kept\n" +
			"when any rule keeps it. Pinned items (trove pin) are always kept, and a kept fork keeps the\n" +
			"session it was forked from. Their blobs go at the next gc.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p := troveapi.Policy{KeepLast: last}
			if last < 0 {
				return usageErr("--keep-last %d: must not be negative", last)
			}
			if within != "" {
				d, err := troveapi.ParseDuration(within)
				if err != nil {
					return usageErr("--keep-within: %v", err)
				}
				p.KeepWithin = d
			}
			if p.KeepWithin == 0 && p.KeepLast == 0 {
				return usageErr("give --keep-within or --keep-last: pruning everything is never the default")
			}
			if cwd != "" {
				abs, err := filepath.Abs(cwd)
				if err != nil {
					return err
				}
				p.Cwd = abs
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			var opts []troveapi.PruneOption
			if dryRun {
				opts = append(opts, troveapi.PruneDryRun())
			}
			rep, err := ts.Prune(ctx, p, opts...)
			if perr := a.printPruned(rep); perr != nil {
				return perr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&within, "keep-within", "", "keep what was updated within this long before now (720h, 30d, 2w)")
	cmd.Flags().IntVar(&last, "keep-last", 0, "keep the N newest of each cwd (of each workspace, for checkpoints)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "only prune the items of this directory")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be removed and change nothing")
	return cmd
}

// printPruned prints what a prune removed: under --json one object per
// line with kind and id.
func (a *app) printPruned(rep troveapi.PruneReport) error {
	for _, it := range rep.Removed {
		if a.jsonOut {
			if err := a.printLine(itemJSON{it.Kind, it.ID}); err != nil {
				return err
			}
			continue
		}
		verb := "removed"
		if rep.DryRun {
			verb = "would remove"
		}
		a.printf("%s %s %s (%s, %s)\n", verb, it.Kind, it.ID, cmp.Or(it.Cwd, "-"), it.Time.Local().Format(time.DateTime))
	}
	if !a.jsonOut {
		verb := "removed"
		if rep.DryRun {
			verb = "would remove"
		}
		a.printf("%s %d, kept %d\n", verb, len(rep.Removed), rep.Kept)
	}
	return nil
}

// applyRetention prunes by the policy of the store's config.json, if it
// has one, before gc collects: what it removes, gc frees the same run.
func (a *app) applyRetention(ctx context.Context, ts *troveapi.Store, dryRun bool) (troveapi.PruneReport, error) {
	cfg, err := ts.Config(ctx)
	if err != nil || cfg.Retention == nil {
		return troveapi.PruneReport{}, err
	}
	p, err := cfg.Retention.Policy()
	if err != nil {
		return troveapi.PruneReport{}, err
	}
	var opts []troveapi.PruneOption
	if dryRun {
		opts = append(opts, troveapi.PruneDryRun())
	}
	return ts.Prune(ctx, p, opts...)
}
