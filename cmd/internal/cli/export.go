package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/export"
	"github.com/trovekit/trove/session/tree"
)

func newExportCmd(a *app) *cobra.Command {
	var format, out string
	var redactOut bool
	cmd := &cobra.Command{
		Use:   "export ID-OR-PREFIX",
		Short: "Export a session as self-contained HTML, Markdown (the current branch) or JSONL with blobs inline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var render func(context.Context, io.Writer, *tree.Session, ...export.Option) error
			switch format {
			case "html":
				render = export.HTML
			case "md", "markdown":
				render = export.Markdown
			case "jsonl":
				render = export.JSONL
			default:
				return usageErr("--format must be html, md or jsonl, not %q", format)
			}
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			sess, _, err := ts.ReadSession(ctx, args[0])
			if id, ok := a.agentRef(ctx, args[0], err); ok {
				sess, _, err = ts.ReadSession(ctx, id)
			}
			if err != nil {
				return storeErr(err)
			}
			if redactOut {
				if sess, err = redactedSession(ctx, ts, sess); err != nil {
					return err
				}
			}
			if out == "" || out == "-" {
				return render(ctx, a.stdout, sess)
			}
			return writeFileAtomic(out, func(w io.Writer) error { return render(ctx, w, sess) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "html", "html, md or jsonl")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE (atomically) instead of stdout")
	cmd.Flags().BoolVar(&redactOut, "redact", false, "replace secrets (see trove scan) with [REDACTED:detector] in what is written")
	return cmd
}

// writeFileAtomic writes a temporary file beside name and renames it into
// place once complete and synced: a failed write (an export, a blob that
// does not verify) leaves no partial file.
func writeFileAtomic(name string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".trove-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
