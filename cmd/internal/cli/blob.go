package cli

import (
	"context"
	"errors"
	"fmt"
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
			_, bs, err := a.blobs(ctx)
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
			if a.jsonOut {
				return a.printJSON(map[string]string{"ref": ref.String()})
			}
			a.printf("%s\n", ref)
			return nil
		},
	}
	var outFile string
	get := &cobra.Command{
		Use:   "get REF [-o FILE]",
		Short: "Write a blob's bytes to standard output or FILE, only once they are verified",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ref, err := cas.ParseRef(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			_, bs, err := a.blobs(ctx)
			if err != nil {
				return err
			}
			if outFile != "" {
				return getToFile(ctx, bs, ref, outFile)
			}
			return getToWriter(ctx, bs, ref, a.stdout)
		},
	}
	get.Flags().StringVarP(&outFile, "output", "o", "", "write to FILE (a temp file, verified, then renamed)")
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Re-hash every blob; report each bad one and exit 3 if any",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, bs, err := a.blobs(ctx)
			if err != nil {
				return err
			}
			good := 0
			bad := []map[string]string{}
			var unverified []string // blake3 refs this build cannot hash
			b := a.progress(-1, "verifying blobs")
			for ref, err := range bs.Verify(ctx) {
				b.add(1)
				if errors.Is(err, cas.ErrAlgorithmUnavailable) && !ref.IsZero() {
					unverified = append(unverified, ref.String())
					if !a.jsonOut {
						a.printf("NOT VERIFIED %s: %v\n", ref, cas.ErrAlgorithmUnavailable)
					}
					continue
				}
				if err != nil {
					r := ""
					if !ref.IsZero() {
						r = ref.String()
					}
					bad = append(bad, map[string]string{"ref": r, "error": err.Error()})
					if !a.jsonOut {
						if r == "" {
							a.printf("BAD %v\n", err)
						} else {
							a.printf("BAD %s: %v\n", r, err)
						}
					}
					continue
				}
				good++
			}
			b.done()
			if a.jsonOut {
				out := map[string]any{"good": good, "bad": bad}
				if len(unverified) > 0 {
					out["not_verified"] = unverified
				}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else if len(unverified) > 0 {
				a.printf("%d good, %d bad, %d not verified\n", good, len(bad), len(unverified))
			} else {
				a.printf("%d good, %d bad\n", good, len(bad))
			}
			if len(bad) > 0 {
				return &exitError{code: exitProblems, err: errProblems(len(bad))}
			}
			if len(unverified) > 0 {
				// Not bad, but not checked: this trove has no BLAKE3.
				return fmt.Errorf("%d blake3 blobs not verified: %w; trove-cloud blob verify checks them", len(unverified), cas.ErrAlgorithmUnavailable)
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

// spoolLimit is the largest blob get verifies in memory; bigger ones are
// verified through a temporary file.
const spoolLimit = 64 << 20

// getToWriter writes the blob to w only after every byte is verified, so a
// corrupt blob never leaves part of itself in w.
func getToWriter(ctx context.Context, bs *cas.Store, ref cas.Ref, w io.Writer) error {
	info, err := bs.Stat(ctx, ref)
	if err != nil {
		return err
	}
	if info.Size <= spoolLimit {
		data, err := bs.Get(ctx, ref)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	tmp, err := os.CreateTemp("", "trove-blob-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := copyBlob(ctx, bs, ref, tmp); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, tmp)
	return err
}

// getToFile writes the blob to a temporary file beside name and renames it
// into place once verified and synced (see writeFileAtomic).
func getToFile(ctx context.Context, bs *cas.Store, ref cas.Ref, name string) error {
	return writeFileAtomic(name, func(w io.Writer) error { return copyBlob(ctx, bs, ref, w) })
}

// copyBlob streams the blob into w; the error at its end says whether the
// bytes matched the digest.
func copyBlob(ctx context.Context, bs *cas.Store, ref cas.Ref, w io.Writer) error {
	rc, err := bs.Open(ctx, ref)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return err
}
