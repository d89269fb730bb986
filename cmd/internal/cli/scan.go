package cli

import (
	"bytes"
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/backend/mem"
	"github.com/trovekit/trove/export"
	"github.com/trovekit/trove/session/tree"
)

func newScanCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scan [ID...]",
		Short: "Report secrets in sessions (all of them without an ID); exit 3 if any",
		Long: "Look for secrets in message text, thinking, tool calls and tool results (outputs kept as\n" +
			"blobs included): credentials of known formats (gitleaks's rules), URLs with a password,\n" +
			".env assignments, high-entropy strings, and the rules of the store's config.json. Each\n" +
			"finding names its detector, session and entry and shows the line masked; --json writes\n" +
			"one object per line. Exit 3 when any is found.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			d, err := ts.Redactor(ctx)
			if err != nil {
				return err
			}
			n := 0
			sessions := map[string]bool{}
			for f, err := range ts.Scan(ctx, d, args...) {
				if err != nil {
					return storeErr(err)
				}
				n++
				sessions[f.SessionID] = true
				if a.jsonOut {
					if err := a.printLine(f); err != nil {
						return err
					}
					continue
				}
				a.printf("%s  session %s  entry %s  %s\n", f.Detector, f.SessionID, cmp.Or(f.EntryID, "(header)"), f.Excerpt)
			}
			if !a.jsonOut {
				a.printf("%d secrets in %d sessions\n", n, len(sessions))
			}
			if n > 0 {
				return &exitError{code: exitProblems, err: fmt.Errorf("%d secrets found", n)}
			}
			return nil
		},
	}
	cmd.ValidArgsFunction = completeSessions(a)
	return cmd
}

// redactedSession is sess with every secret replaced: its JSONL form
// (blobs inline) redacted line by line and loaded again in memory, so
// every export format renders the redacted text and nothing else.
func redactedSession(ctx context.Context, ts *troveapi.Store, sess *tree.Session) (*tree.Session, error) {
	d, err := ts.Redactor(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := export.JSONL(ctx, &buf, sess); err != nil {
		return nil, err
	}
	out, _, err := d.JSONLines(buf.Bytes(), nil)
	if err != nil {
		return nil, err
	}
	st := mem.New()
	defer st.Close()
	if err := st.WriteFile(ctx, "session.jsonl", out); err != nil {
		return nil, err
	}
	return tree.Open(ctx, st, "session.jsonl", tree.ReadOnly(), tree.InMemory())
}
