package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
)

// mirrorJSON is `trove mirror --json`.
type mirrorJSON struct {
	troveapi.MirrorReport
	Files []troveapi.MirrorAction `json:"files"`
}

func newMirrorCmd(a *app) *cobra.Command {
	var dryRun, encrypt, redactOut bool
	var dstPasswordFile string
	cmd := &cobra.Command{
		Use:   "mirror SRC_URL DST_URL",
		Short: "Copy a whole store to another backend, incrementally",
		Long: "Copy every blob, session, checkpoint and run log of the store at SRC_URL to DST_URL\n" +
			"(local disk to a bucket and back). Blobs already present are skipped, other files when\n" +
			"identical; each file is written atomically, so an interrupted mirror can be rerun.\n" +
			"An encrypted store is copied as ciphertext, with its keys (the copy opens with the same\n" +
			"passphrases; the source's is needed to read its names). --encrypt makes DST_URL an encrypted\n" +
			"store (passphrase from $" + envDstPassword + ", --dst-password-file or a prompt) and re-encrypts.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if p, ok := localPath(args[0]); ok {
				// Opening a local store creates its directory; a typo must not.
				if _, err := os.Stat(p); err != nil {
					return fmt.Errorf("no store at %s: %w", args[0], err)
				}
			}
			src, err := openURL(ctx, args[0])
			if err != nil {
				return err
			}
			defer src.Close()
			srcView, err := a.unlockMirrorSource(ctx, src)
			if err != nil {
				return err
			}
			dst, err := openURL(ctx, args[1])
			if err != nil {
				return err
			}
			defer dst.Close()
			dstView := dst
			if encrypt {
				if dstView, err = a.encryptedDestination(ctx, dst, dstPasswordFile, dryRun); err != nil {
					return err
				}
			}
			out := mirrorJSON{Files: []troveapi.MirrorAction{}}
			var b *bar
			opts := []troveapi.MirrorOption{troveapi.MirrorProgress(func(act troveapi.MirrorAction) {
				if b == nil {
					b = a.progress(act.Total, "mirroring")
				}
				b.set(act.Done, act.Total)
				if act.Copied {
					out.Files = append(out.Files, act)
				}
			})}
			if dryRun {
				opts = append(opts, troveapi.MirrorDryRun())
			}
			if redactOut {
				cfg, err := troveapi.ReadConfig(ctx, srcView)
				if err != nil {
					return err
				}
				d, err := cfg.Redact.Detector()
				if err != nil {
					return err
				}
				opts = append(opts, troveapi.MirrorRedact(d))
			}
			rep, err := troveapi.Mirror(ctx, srcView, dstView, opts...)
			b.done()
			out.MirrorReport = rep
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			verb := "copied"
			if dryRun {
				verb = "would copy"
			}
			for _, f := range out.Files {
				a.printf("%s %s (%s, %s)\n", verb, f.Name, humanBytes(f.Size), f.Reason)
			}
			a.printf("%s %d files (%s), %d already present\n", verb, rep.Copied, humanBytes(rep.CopiedBytes), rep.Skipped)
			if rep.CheckpointsLeftOut > 0 {
				a.printf("left out %d checkpoint files: a redacted copy holds no workspace snapshots (their files may hold secrets, and a redacted snapshot would restore content the workspace never had)\n", rep.CheckpointsLeftOut)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be copied and change nothing")
	cmd.Flags().BoolVar(&encrypt, "encrypt", false, "make DST_URL an encrypted store (or open it as one) and re-encrypt into it")
	cmd.Flags().StringVar(&dstPasswordFile, "dst-password-file", "", "read the destination's passphrase from this file (else $"+envDstPassword+" or a prompt)")
	cmd.Flags().BoolVar(&redactOut, "redact", false, "write a redacted copy: secrets replaced in sessions, run logs and their text blobs; checkpoints left out")
	return cmd
}

// localPath is the directory a plain path or file:// URL names.
func localPath(raw string) (string, bool) {
	if !strings.Contains(raw, "://") {
		return raw, raw != ""
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme == "file" && u.Path != "" {
		return filepath.FromSlash(u.Path), true
	}
	return "", false
}
