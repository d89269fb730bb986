package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/cas"
)

// Exit codes that mean something to scripts.
const (
	exitOK       = 0
	exitFailure  = 1 // the command could not do its work
	exitUsage    = 2 // bad flags or arguments
	exitProblems = 3 // the command ran and found problems (verify, fsck)
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// app is what every subcommand shares: the streams, the store URL and the
// store once opened.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	storeURL       string
	jsonOut        bool
	logLevel       string
	timeout        time.Duration
	log            *slog.Logger
	st             backend.Storage
	ts             *troveapi.Store
	mayCreate      bool // the command may create a missing local store
	passwordFile   string
	locked         bool // store opens without unlocking an encrypted store
	exits          bool // the process exits after the command (Main, not tests)
	// terminal says whether stderr is a terminal (progress bars); nil
	// asks the operating system.
	terminal func(io.Writer) bool
	barOn    atomic.Bool // a progress bar is on stderr's last line
	// indexBarFiles is how many files the catalog must index for a bar to
	// show (0: defaultIndexBarFiles).
	indexBarFiles int
}

// store opens the store on first use, so commands that need none stay cheap.
func (a *app) store(ctx context.Context) (backend.Storage, error) {
	if a.st != nil {
		return a.st, nil
	}
	if err := a.checkStoreExists(); err != nil {
		return nil, err
	}
	st, err := openURL(ctx, a.storeURL, open.WithTimeout(a.timeout))
	if err != nil {
		return nil, err
	}
	if !a.locked {
		cs, err := a.unlockStore(ctx, st)
		if err != nil {
			st.Close()
			return nil, err
		}
		st = cs
	}
	a.st = st
	return st, nil
}

// blobs opens the store and its one cas store.
func (a *app) blobs(ctx context.Context) (backend.Storage, *cas.Store, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, nil, err
	}
	bs, err := cas.Open(ctx, st, cas.WithLogger(a.log))
	if err != nil {
		return nil, nil, err
	}
	return st, bs, nil
}

// storeName says which store a command ran on, for humans.
func (a *app) storeName() string {
	if a.storeURL != "" {
		return a.storeURL
	}
	root, err := open.DefaultRoot()
	if err != nil {
		return "(default root)"
	}
	return root
}

// printJSON writes v as --json output, in its one naming scheme (see
// normalize).
func (a *app) printJSON(v any) error {
	b, err := marshalNormal(v, "  ")
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(append(b, '\n'))
	return err
}

// printRawJSON writes v as it marshals.
func (a *app) printRawJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// topCommand is a top-level command by name, so that a command line can
// build only the command it runs.
type topCommand struct {
	name  string
	build func(*app) *cobra.Command
}

// topCommands lists every top-level command but cobra's help and completion.
func topCommands() []topCommand {
	return []topCommand{
		{"demo", newDemoCmd}, {"files", newFilesCmd}, {"blob", newBlobCmd}, {"session", newSessionCmd},
		{"checkpoint", newCheckpointCmd}, {"runs", newRunsCmd}, {"ls", newLsCmd}, {"show", newShowCmd},
		{"fork", newForkCmd}, {"unlock", newUnlockCmd}, {"rm", newRmCmd}, {"gc", newGCCmd}, {"fsck", newFsckCmd},
		{"export", newExportCmd}, {"serve", newServeCmd}, {"mirror", newMirrorCmd}, {"import", newImportCmd},
		{"watch", newWatchCmd}, {"hooks", newHooksCmd}, {"doctor", newDoctorCmd}, {"search", newSearchCmd}, {"catalog", newCatalogCmd},
		{"stats", newStatsCmd}, {"init", newInitCmd}, {"key", newKeyCmd}, {"scan", newScanCmd},
		{"prune", newPruneCmd}, {"pin", newPinCmd}, {"unpin", newUnpinCmd},
	}
}

// newRoot builds the whole command tree.
func newRoot(a *app) *cobra.Command { return newRootFor(a, nil) }

// newRootFor builds the part of the command tree that args run: the one
// top-level command they name, or the bare root for a lone --version.
// Anything else (no command, help, completion, a misspelt name) gets the
// whole tree. Building all of it costs a process about 5% of `trove
// --version`, more than most of what a hook's command does.
func newRootFor(a *app, args []string) *cobra.Command {
	root := newBareRoot(a)
	name, only := pickCommand(root, args)
	if !only || name == "" {
		root.Version = version()
	}
	for _, c := range topCommands() {
		if !only || c.name == name {
			root.AddCommand(c.build(a))
		}
	}
	if only {
		root.CompletionOptions.DisableDefaultCmd = true
	} else {
		// cobra adds `completion` at Execute; added now, it behaves too.
		root.InitDefaultCompletionCmd()
	}
	behave(root)
	for _, c := range root.Commands() {
		switch c.Name() {
		case "show", "fork", "rm", "unlock", "export":
			c.ValidArgsFunction = completeSessions(a)
		}
	}
	return root
}

// pickCommand reads args as far as their first word that is no global
// flag's: the top-level command they run. only says that args need no
// other part of the tree: name is a command of topCommands, or "" when
// args ask for nothing but the version.
func pickCommand(root *cobra.Command, args []string) (name string, only bool) {
	pf := root.PersistentFlags()
	askVersion := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--version":
			askVersion = true
		case strings.HasPrefix(arg, "--") && len(arg) > 2:
			flag, _, inline := strings.Cut(arg[2:], "=")
			f := pf.Lookup(flag)
			if f == nil {
				return "", false
			}
			if !inline && f.NoOptDefVal == "" {
				i++ // the flag's value
			}
		case strings.HasPrefix(arg, "-"):
			return "", false // shorthands, "-" and "--": cobra's to read
		default:
			for _, c := range topCommands() {
				if c.name == arg {
					return arg, true
				}
			}
			return "", false
		}
	}
	return "", askVersion
}

// newBareRoot builds the root command with its global flags and no
// subcommand.
func newBareRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "trove",
		Short:         "Keep what AI coding agents must not lose",
		Long:          "trove stores conversation trees, content-addressed blobs, workspace checkpoints and run logs\non local disk, in memory, or in S3/GCS/Azure buckets.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
				return usageErr("--log-level: %v", err)
			}
			a.log = slog.New(slog.NewTextHandler(logWriter{a}, &slog.HandlerOptions{Level: level}))
			a.mayCreate = writers[cmd.CommandPath()]
			return nil
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.storeURL, "store", "", "store URL: file:///path, a path, mem://, s3://, gs://, azblob:// (default $TROVE_HOME, $XDG_DATA_HOME/trove or ~/.local/share/trove)")
	pf.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	pf.DurationVar(&a.timeout, "timeout", open.DefaultTimeout, "deadline of each bucket request (and of each chunk of a transfer); 0 for none")
	pf.StringVar(&a.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	addCryptFlags(pf, a)
	return root
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr}).run(ctx, args)
}

// run executes the command line with a and returns the process exit code.
func (a *app) run(ctx context.Context, args []string) int {
	return a.execute(ctx, newRootFor(a, args), args)
}

// execute runs args on the command tree root and returns the exit code.
func (a *app) execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if a.ts != nil {
		// Closes the catalog: SQLite folds its WAL back in.
		if cerr := a.ts.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if a.st != nil {
		if cerr := a.st.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	msg := err.Error()
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires ") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.HasPrefix(msg, "invalid argument"):
		// cobra reports unknown commands and arg-count errors as plain errors.
		code = exitUsage
	}
	a.reportError(err, code)
	return code
}

func itoa(n int) string { return fmt.Sprint(n) }
