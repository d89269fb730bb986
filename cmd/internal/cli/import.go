package cli

import (
	"github.com/spf13/cobra"

	"github.com/trovekit/trove/importer"
)

// importJSON is `trove import --json`.
type importJSON struct {
	DryRun   bool              `json:"dry_run"`
	Imported int               `json:"imported"` // new sessions
	Updated  int               `json:"updated"`  // sessions brought up to date with their grown source
	Skipped  int               `json:"skipped"`
	Blobs    int               `json:"blobs"` // put from pi roots' blobs/
	Sessions []importer.Result `json:"sessions"`
}

func newImportCmd(a *app) *cobra.Command {
	var from string
	var dryRun, redactOut bool
	cmd := &cobra.Command{
		Use:   "import [--from pi|omp|claude|codex|agent-jsonl|auto] PATH...",
		Short: "Import other agents' sessions into the store, leaving the sources unchanged",
		Long: "Import session files (or directories of them) from pi, oh-my-pi, Claude Code\n" +
			"(~/.claude/projects), Codex (~/.codex/sessions) and agent JSONL (docs/formats.md). A session\n" +
			"already imported is skipped, or brought up to date when its source only grew since and it\n" +
			"was not changed in trove.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if _, ok := importer.CanonicalFormat(from); !ok || from == "" {
				return usageErr("--from %q: want pi, omp, claude, codex, agent-jsonl (or its old name spec002) or auto", from)
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			var b *bar
			progress := func(done, total int) {
				if b == nil {
					b = a.progress(total, "importing")
				}
				b.set(done, total)
			}
			opts := importer.Options{From: from, DryRun: dryRun, Progress: progress}
			if redactOut {
				d, err := ts.Redactor(ctx)
				if err != nil {
					return err
				}
				opts.Redact = func(data []byte) ([]byte, error) {
					out, _, err := d.JSONLines(data, nil)
					return out, err
				}
			}
			res, err := importer.Import(ctx, ts, args, opts)
			b.done()
			out := importJSON{DryRun: dryRun, Sessions: append([]importer.Result{}, res...)}
			for _, r := range res {
				switch {
				case r.Format == "blobs":
					out.Blobs += r.Messages
				case r.Updated:
					out.Updated++
				case r.Imported:
					out.Imported++
				default:
					out.Skipped++
				}
			}
			if a.jsonOut {
				if perr := a.printJSON(out); perr != nil {
					return perr
				}
				return err
			}
			verb := "imported"
			if dryRun {
				verb = "would import"
			}
			for _, r := range res {
				switch {
				case r.Format == "blobs":
					a.printf("%s %d blobs from %s\n", verb, r.Messages, r.Source)
				case r.Imported:
					v := verb
					if r.Updated {
						v = "updated"
						if dryRun {
							v = "would update"
						}
					}
					of := ""
					if r.ParentID != "" {
						of = ", parent " + r.ParentID
					}
					if r.Reason != "" {
						of += "; " + r.Reason
					}
					a.printf("%s %s (%s, %d messages%s) as %s\n", v, r.Source, r.Format, r.Messages, of, r.SessionID)
				default:
					a.printf("skipped %s: %s\n", r.Source, r.Reason)
				}
			}
			a.printf("%s %d new sessions, %d updated, and %d blobs; skipped %d sessions\n", verb, out.Imported, out.Updated, out.Blobs, out.Skipped)
			return err
		},
	}
	cmd.Flags().StringVar(&from, "from", "auto", "source format: pi, omp, claude, codex, agent-jsonl or auto (spec002: agent-jsonl)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be imported and change nothing")
	cmd.Flags().BoolVar(&redactOut, "redact", false, "replace secrets with [REDACTED:detector] in what is imported (the sources stay as they are)")
	return cmd
}
