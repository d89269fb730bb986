package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// writers are the commands that may create the store; every other command
// only reads, and fails on a local store that does not exist instead of
// creating an empty one where a typo pointed.
var writers = map[string]bool{
	"trove demo": true, "trove blob put": true, "trove files put": true, "trove files rm": true,
	"trove checkpoint create": true, "trove checkpoint rewind": true, "trove checkpoint rm": true,
	"trove fork": true, "trove rm": true, "trove unlock": true, "trove gc": true,
	"trove import": true, "trove mirror": true, "trove watch": true, "trove hooks run": true,
	"trove init": true,
}

// localRoot returns the directory a store URL names on local disk, if it
// names one.
func localRoot(raw string) (string, bool) {
	if raw == "" {
		root, err := open.DefaultRoot()
		return root, err == nil
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		abs, err := filepath.Abs(raw)
		return abs, err == nil
	}
	if scheme != "file" {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

// checkStoreExists refuses to open a missing local store for a command
// that only reads.
func (a *app) checkStoreExists() error {
	if a.mayCreate {
		return nil
	}
	root, ok := localRoot(a.storeURL)
	if !ok {
		return nil
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no store at %s: %w", root, fs.ErrNotExist)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("no store at %s: not a directory: %w", root, fs.ErrInvalid)
	}
	return nil
}

// behave makes every command that groups others refuse what it does not
// know: an unknown subcommand is a usage error (exit 2), not help and 0.
func behave(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		behave(c)
	}
	if !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr("unknown command %q for %q (see '%s --help')", args[0], c.CommandPath(), c.CommandPath())
		}
		return c.Help()
	}
}

// version is the module version the binary was built from.
func version() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if !cas.BLAKE3.Linked() {
		v += " (without BLAKE3: trove-cloud reads blob:blake3 refs)"
	}
	return v
}

// errorJSON is an error under --json, on stderr.
type errorJSON struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// reportError writes err for humans or, under --json, as one JSON object.
func (a *app) reportError(err error, code int) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if a.jsonOut {
		b, _ := json.Marshal(errorJSON{Error: msg, Code: code})
		fmt.Fprintf(a.stderr, "%s\n", b)
		return
	}
	fmt.Fprintf(a.stderr, "trove: %s\n", msg)
}

// completeSessions completes session ids from the store.
func completeSessions(a *app) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		if err := a.checkStoreExists(); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := a.sessionStore(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for m, err := range s.List(ctx, "") {
			if err != nil {
				break
			}
			if strings.HasPrefix(m.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(m.ID, cmp.Or(m.Title, m.FirstMessage, m.Cwd)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCheckpoints completes checkpoint names of the workspace (--dir,
// --session) through with; many says the command takes several names.
func completeCheckpoints(a *app, with func(*cobra.Command, func(*checkpoint.Manager) error) error, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many || a.checkStoreExists() != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if cmd.Context() == nil {
			cmd.SetContext(context.Background())
		}
		given := map[string]bool{}
		for _, g := range args {
			given[g] = true
		}
		var out []cobra.Completion
		with(cmd, func(m *checkpoint.Manager) error {
			infos, err := m.List(cmd.Context())
			for _, in := range infos {
				if !strings.HasPrefix(in.ID, toComplete) || given[in.ID] {
					continue
				}
				desc := in.ModTime.Local().Format(time.DateTime)
				if man, n, err := listed(cmd.Context(), m, in.ID); err == nil {
					desc = fmt.Sprintf("%s %s, %d files", man.CreatedAt.Local().Format(time.DateTime), man.Kind, n)
				}
				out = append(out, cobra.CompletionWithDesc(in.ID, desc))
			}
			return err
		})
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
