package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend"
)

// newFilesCmd gives raw access to the store's files, for debugging and for
// scripts that move things between stores.
func newFilesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "files",
		Short: "Raw access to the files of a store",
	}
	ls := &cobra.Command{
		Use:   "ls [DIR]",
		Short: "List a directory (default: the root); -r walks the whole tree",
		Args:  cobra.MaximumNArgs(1),
	}
	recursive := ls.Flags().BoolP("recursive", "r", false, "walk every directory below DIR")
	ls.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		st, err := a.store(ctx)
		if err != nil {
			return err
		}
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		seq := st.List(ctx, dir)
		if *recursive {
			if _, err := st.Stat(ctx, dir); err != nil {
				return err
			}
			seq = backend.Walk(ctx, st, dir)
		}
		var infos []backend.Info
		for info, err := range seq {
			if err != nil {
				return err
			}
			infos = append(infos, info)
		}
		if a.jsonOut {
			if infos == nil {
				infos = []backend.Info{}
			}
			return a.printJSON(infos)
		}
		for _, info := range infos {
			kind := "f"
			if info.IsDir {
				kind = "d"
			}
			a.printf("%s %10d %s %s\n", kind, info.Size, info.ModTime.UTC().Format("2006-01-02T15:04:05Z"), info.Name)
		}
		return nil
	}
	cat := &cobra.Command{
		Use:   "cat NAME",
		Short: "Write a file's content to standard output",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			rc, err := st.Open(ctx, args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(a.stdout, rc)
			return err
		},
	}
	put := &cobra.Command{
		Use:   "put NAME [FILE]",
		Short: "Write a file atomically from FILE or standard input",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			src := a.stdin
			if len(args) == 2 && args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				src = f
			}
			n, err := st.WriteFrom(ctx, args[0], src)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %d bytes to %s\n", n, args[0])
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a file or an empty directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			return st.Unlink(ctx, args[0])
		},
	}
	cmd.AddCommand(ls, cat, put, rm)
	return cmd
}
