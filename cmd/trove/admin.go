package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/checkpoint"
)

// troveStore wires the layers on the --store root once.
func (a *app) troveStore(ctx context.Context) (*troveapi.Store, error) {
	if a.ts != nil {
		return a.ts, nil
	}
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := troveapi.New(ctx, st, troveapi.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	a.ts = ts
	return ts, nil
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
}

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
			for _, r := range rep.Deleted {
				out.Freed = append(out.Freed, r.String())
			}
			if a.jsonOut {
				return a.printJSON(out)
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

// problemJSON is one problem of `trove fsck --json`.
type problemJSON struct {
	Layer string `json:"layer"`
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Ref   string `json:"ref,omitempty"`
	Error string `json:"error"`
}

type fsckJSON struct {
	Sessions    int           `json:"sessions"`
	Transcripts int           `json:"transcripts"`
	Checkpoints int           `json:"checkpoints"`
	Runs        int           `json:"runs"`
	Blobs       int           `json:"blobs"`
	Refs        int           `json:"refs"`
	Problems    []problemJSON `json:"problems"`
}

func newFsckCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "fsck",
		Short: "Read the whole store and report every problem; exit 3 if any (changes nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			b := a.progress(-1, "checking the store: files and blobs read")
			rep, err := ts.Check(ctx, troveapi.CheckProgress(func(n int) { b.set(n, -1) }))
			b.done()
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := fsckJSON{Sessions: rep.Sessions, Transcripts: rep.Transcripts, Checkpoints: rep.Checkpoints, Runs: rep.Runs,
					Blobs: rep.Blobs, Refs: rep.Refs, Problems: []problemJSON{}}
				for _, p := range rep.Problems {
					out.Problems = append(out.Problems, problemJSON{Layer: p.Layer, File: p.File, Line: p.Line, Ref: p.Ref, Error: p.Err.Error()})
				}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					a.printf("%s\n", sanitizeLine(p.String()))
				}
				a.printf("checked %d sessions, %d transcripts, %d checkpoints, %d run files, %d refs, %d blobs: %d problems\n",
					rep.Sessions, rep.Transcripts, rep.Checkpoints, rep.Runs, rep.Refs, rep.Blobs, len(rep.Problems))
			}
			if !rep.OK() {
				return &exitError{code: exitProblems, err: fmt.Errorf("%d problems", len(rep.Problems))}
			}
			return nil
		},
	}
}

// sanitizeLine keeps stored text from driving the terminal.
func sanitizeLine(s string) string {
	b := []rune(s)
	for i, r := range b {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			b[i] = '?'
		}
	}
	return string(b)
}

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

// checkpointJSON is one checkpoint of `trove checkpoint ls --json`.
type checkpointJSON struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	Files     int       `json:"files"`
	Session   string    `json:"session,omitempty"`
	Size      int64     `json:"manifest_bytes"`
}

// addCheckpointAdmin adds ls, show and rm to the checkpoint command; with
// runs a function on the workspace's manager.
func addCheckpointAdmin(a *app, cmd *cobra.Command, with func(*cobra.Command, func(*checkpoint.Manager) error) error) {
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the workspace's checkpoints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				infos, err := m.List(cmd.Context())
				if err != nil {
					return err
				}
				out := []checkpointJSON{}
				for _, in := range infos {
					c := checkpointJSON{ID: in.ID, Size: in.Size}
					if man, err := m.Load(cmd.Context(), in.ID); err == nil {
						c.Kind, c.CreatedAt, c.Files, c.Session = man.Kind, man.CreatedAt.UTC(), len(man.Files), man.Session
					}
					out = append(out, c)
				}
				if a.jsonOut {
					return a.printJSON(out)
				}
				w := 24
				for _, c := range out {
					w = max(w, len(c.ID))
				}
				for _, c := range out {
					a.printf("%-*s  %s  %-5s  %6d files\n", w, c.ID, c.CreatedAt.Local().Format(time.DateTime), c.Kind, c.Files)
				}
				return nil
			})
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a checkpoint: its files, sizes and modes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				man, err := m.Load(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(man)
				}
				a.printf("checkpoint %s (%s) taken %s", man.ID, man.Kind, man.CreatedAt.Local().Format(time.DateTime))
				if man.Session != "" {
					a.printf(", session %s", man.Session)
				}
				a.printf("\n")
				for _, f := range man.Files {
					switch {
					case !f.Exists:
						a.printf("  absent            %s\n", sanitizeLine(f.Path))
					case f.Type == checkpoint.TypeSymlink:
						a.printf("  link              %s -> %s\n", sanitizeLine(f.Path), sanitizeLine(f.Target))
					default:
						a.printf("  %04o %10d  %s\n", uint32(f.Mode), f.Size, sanitizeLine(f.Path))
					}
				}
				for _, s := range man.Skipped {
					a.printf("  skipped (%s)  %s\n", s.Reason, sanitizeLine(s.Path))
				}
				return nil
			})
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete checkpoints (their blobs go at the next gc)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				for _, id := range args {
					if err := m.Delete(cmd.Context(), id); err != nil {
						return err
					}
					if !a.jsonOut {
						a.printf("removed checkpoint %s\n", id)
					}
				}
				if a.jsonOut {
					return a.printJSON(map[string]any{"removed": args})
				}
				return nil
			})
		},
	}
	cmd.AddCommand(ls, show, rm)
}
