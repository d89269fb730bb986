package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/cas"
)

func newBlobCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "blob", Short: "Content-addressed blobs: put, get, verify"}
	put := &cobra.Command{
		Use:   "put FILE",
		Short: "Store a file (- for standard input) and print its blob:sha256: ref",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			bs, err := cas.Open(ctx, st)
			if err != nil {
				return err
			}
			var src io.Reader = a.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				src = f
			}
			ref, err := bs.PutReader(ctx, src)
			if err != nil {
				return err
			}
			a.printf("%s\n", ref)
			return nil
		},
	}
	get := &cobra.Command{
		Use:   "get REF",
		Short: "Write a blob's bytes, verified, to standard output",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ref, err := cas.ParseRef(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			bs, err := cas.Open(ctx, st)
			if err != nil {
				return err
			}
			rc, err := bs.Open(ctx, ref)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(a.stdout, rc)
			return err
		},
	}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Re-hash every blob; report each bad one and exit 3 if any",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			bs, err := cas.Open(ctx, st)
			if err != nil {
				return err
			}
			good, bad := 0, 0
			for ref, err := range bs.Verify(ctx) {
				if err != nil {
					bad++
					if ref.IsZero() {
						a.printf("BAD %v\n", err)
					} else {
						a.printf("BAD %s: %v\n", ref, err)
					}
					continue
				}
				good++
			}
			a.printf("%d good, %d bad\n", good, bad)
			if bad > 0 {
				return &exitError{code: exitProblems, err: errProblems(bad)}
			}
			return nil
		},
	}
	cmd.AddCommand(put, get, verify)
	return cmd
}

type errProblems int

func (n errProblems) Error() string {
	if n == 1 {
		return "1 bad blob"
	}
	return itoa(int(n)) + " bad blobs"
}
