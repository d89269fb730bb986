package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
)

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
