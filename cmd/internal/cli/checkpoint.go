package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/session"
)

func newCheckpointCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "checkpoint", Short: "Snapshot a workspace and rewind it"}
	f := &checkpointFlags{}
	cmd.PersistentFlags().StringVar(&f.dir, "dir", ".", "workspace directory")
	cmd.PersistentFlags().StringVar(&f.session, "session", "", "the session whose checkpoints these are (kept in its sidecar; and those its hooks took, kept with the workspace's)")
	with := checkpointWith(a, f)
	cmd.AddCommand(newCheckpointCreateCmd(a, &f.dir, with), newCheckpointRewindCmd(a, with), newCheckpointDiffCmd(a, with))
	addCheckpointAdmin(a, cmd, with, checkpointLinked(a, f))
	for _, c := range cmd.Commands() {
		switch c.Name() {
		case "rewind", "diff", "show", "rm":
			c.ValidArgsFunction = completeCheckpoints(a, with, c.Name() == "rm")
		}
	}
	cmd.RegisterFlagCompletionFunc("session", completeSessions(a))
	return cmd
}

// withManager runs fn on a checkpoint manager for the workspace.
type withManager = func(cmd *cobra.Command, fn func(*checkpoint.Manager) error) error

// checkpointAbove is the nearest directory above dir holding checkpoint
// id, "" if none does: a hook checkpoints the project's root
// (CLAUDE_PROJECT_DIR) while its user may be in a subdirectory.
func (a *app) checkpointAbove(ctx context.Context, dir, id string) string {
	st, err := a.store(ctx)
	if err != nil {
		return ""
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if m, err := checkpoint.OpenDir(ctx, st, d); err == nil {
			_, err = m.LoadHeader(ctx, id)
			m.Close()
			if err == nil {
				return d
			}
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// workspaceDir is dir made absolute, its links resolved: checkpoints are
// kept by the workspace's path, a hook is given the agent's physical cwd
// and a shell's cwd may name the same directory through a link.
func workspaceDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// checkpointFlags are the checkpoint command's --dir and --session, read
// when a subcommand runs. The session is resolved once: ls reads its
// sidecar, then its workspaces.
type checkpointFlags struct {
	dir, session string
	resolved     bool
	scope        sessionScope
	scopeErr     error
}

// sessionScope is app.sessionScope of --session, resolved once.
func (f *checkpointFlags) sessionScope(ctx context.Context, a *app) (sessionScope, error) {
	if !f.resolved {
		f.scope, f.scopeErr = a.sessionScope(ctx, f.session)
		f.resolved = true
	}
	return f.scope, f.scopeErr
}

// checkpointWith returns what runs fn on a manager for the workspace
// --dir (of the session --session names, when set), closed after. A name
// the session's sidecar lacks is looked for among the workspace's
// checkpoints linked to the session (sessionWorkspaces).
func checkpointWith(a *app, f *checkpointFlags) withManager {
	return func(cmd *cobra.Command, fn func(m *checkpoint.Manager) error) error {
		ctx := cmd.Context()
		abs, err := workspaceDir(f.dir)
		if err != nil {
			return err
		}
		if f.session == "" {
			return a.withCheckpoints(ctx, abs, "", fn)
		}
		sc, err := f.sessionScope(ctx, a)
		if sc.ids == nil {
			return err
		}
		if err == nil {
			err = a.withCheckpoints(ctx, abs, backend.Join(session.SidecarDir(sc.meta.Path), session.CheckpointsDir), fn)
			if !errors.Is(err, checkpoint.ErrNotFound) {
				return err
			}
		}
		names := checkpointNames(cmd)
		undo := cmd.Name() == "rewind" && cmd.Flag("undo").Value.String() == "true"
		if len(names) == 0 && !undo {
			return err
		}
		// Not the session's own: one a hook took before a tool call of the
		// session is kept with the workspace's, linked to the session; so
		// is the undo of a rewind to such a checkpoint.
		for _, ws := range sessionWorkspaces(cmd, abs, sc.meta) {
			if undo && a.hasUndo(ctx, ws) || !undo && a.linkedIn(ctx, ws, sc.ids, names) {
				return a.withCheckpoints(ctx, ws, "", fn)
			}
		}
		return err
	}
}

// sessionScope is the session --session names: its metadata, when trove
// holds it, and the ids the checkpoints its hooks took are linked to.
type sessionScope struct {
	meta session.Metadata // zero while trove holds no such session
	ids  []string
}

// sessionScope resolves ref. A session trove holds no copy of yet (the
// hooks import it when the agent stops) still names the checkpoints they
// took: by the ids an import of an agent's session ref gives it. Then
// the error says the session is not found, and ids are set.
func (a *app) sessionScope(ctx context.Context, ref string) (sessionScope, error) {
	meta, err := a.sessionMeta(ctx, ref)
	switch {
	case err == nil:
		return sessionScope{meta: meta, ids: []string{meta.ID}}, nil
	case errors.Is(err, fs.ErrNotExist):
		return sessionScope{ids: agentSessionIDs(ref)}, err
	}
	return sessionScope{}, err
}

// withCheckpoints runs fn on a manager for the workspace abs, keeping its
// checkpoints in dir ("": the workspace's own), closed after.
func (a *app) withCheckpoints(ctx context.Context, abs, dir string, fn func(m *checkpoint.Manager) error) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	// One command, then the process ends: see WithMappedStatCache and
	// WithRawStats (not for the hooks, which keep a deadline).
	opts := []checkpoint.Option{checkpoint.WithLogger(a.log), checkpoint.WithMappedStatCache(), checkpoint.WithRawStats()}
	if dir != "" {
		opts = append(opts, checkpoint.WithDir(dir))
	}
	m, err := checkpoint.OpenDir(ctx, st, abs, opts...)
	if err != nil {
		return err
	}
	defer m.Close()
	return fn(m)
}

// linkedManager runs fn on the manager of each workspace whose
// checkpoints a hook of the --session session may have taken, with the
// workspace and the ids such a checkpoint is linked to (sessionScope);
// nothing without --session.
type linkedManager = func(cmd *cobra.Command, fn func(m *checkpoint.Manager, ws string, ids []string) error) error

// checkpointLinked returns the linkedManager of the flags f.
func checkpointLinked(a *app, f *checkpointFlags) linkedManager {
	return func(cmd *cobra.Command, fn func(m *checkpoint.Manager, ws string, ids []string) error) error {
		if f.session == "" {
			return nil
		}
		ctx := cmd.Context()
		abs, err := workspaceDir(f.dir)
		if err != nil {
			return err
		}
		sc, err := f.sessionScope(ctx, a)
		if sc.ids == nil {
			return err
		}
		for _, ws := range sessionWorkspaces(cmd, abs, sc.meta) {
			if _, err := os.Stat(ws); errors.Is(err, fs.ErrNotExist) {
				continue // a session's cwd on another machine
			}
			if err := a.withCheckpoints(ctx, ws, "", func(m *checkpoint.Manager) error { return fn(m, ws, sc.ids) }); err != nil {
				return err
			}
		}
		return nil
	}
}

// sessionMeta is the metadata of the session ref names.
func (a *app) sessionMeta(ctx context.Context, ref string) (session.Metadata, error) {
	s, err := a.sessionStore(ctx)
	if err != nil {
		return session.Metadata{}, err
	}
	meta, err := s.Metadata(ctx, ref)
	if id, ok := a.agentRef(ctx, ref, err); ok {
		meta, err = s.Metadata(ctx, id)
	}
	if err != nil {
		return session.Metadata{}, storeErr(err)
	}
	return meta, nil
}

// checkpointNames are the checkpoints cmd names, which a session's
// sidecar may lack: show's, diff's, rm's and rewind's (by name or
// --before).
func checkpointNames(cmd *cobra.Command) []string {
	switch cmd.Name() {
	case "show", "diff", "rm":
		return cmd.Flags().Args()
	case "rewind":
		if f := cmd.Flag("before"); f != nil && f.Value.String() != "" {
			return []string{f.Value.String()}
		}
		if f := cmd.Flag("undo"); f != nil && f.Value.String() == "true" {
			return nil
		}
		return cmd.Flags().Args()
	}
	return nil
}

// sessionWorkspaces are the workspaces whose checkpoints a session's
// hooks may have taken: --dir when given, else the current directory and
// the session's cwd.
func sessionWorkspaces(cmd *cobra.Command, abs string, meta session.Metadata) []string {
	out := []string{abs}
	if f := cmd.Flag("dir"); f != nil && f.Changed || meta.Cwd == "" {
		return out
	}
	if cwd, err := workspaceDir(meta.Cwd); err == nil && cwd != abs {
		out = append(out, cwd)
	}
	return out
}

// hasUndo reports whether workspace ws holds the undo of a rewind.
func (a *app) hasUndo(ctx context.Context, ws string) bool {
	ok := false
	a.withCheckpoints(ctx, ws, "", func(m *checkpoint.Manager) error {
		infos, err := m.List(ctx)
		ok = err == nil && slices.ContainsFunc(infos, func(in checkpoint.Info) bool { return strings.HasPrefix(in.ID, checkpoint.UndoPrefix) })
		return nil
	})
	return ok
}

// linkedIn reports whether workspace ws holds every checkpoint of names,
// each linked to one of the session ids.
func (a *app) linkedIn(ctx context.Context, ws string, ids, names []string) bool {
	ok := false
	a.withCheckpoints(ctx, ws, "", func(m *checkpoint.Manager) error {
		for _, name := range names {
			if man, err := m.LoadHeader(ctx, name); err != nil || !slices.Contains(ids, man.Session) {
				return nil
			}
		}
		ok = true
		return nil
	})
	return ok
}

// newCheckpointCreateCmd is trove checkpoint create.
func newCheckpointCreateCmd(a *app, dirFlag *string, with withManager) *cobra.Command {
	var maxSize string
	create := &cobra.Command{
		Use:   "create NAME [PATH...]",
		Short: "Snapshot the named paths (absent ones recorded as absent), or the whole tree",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := *dirFlag
			limit, err := parseSize(maxSize)
			if err != nil {
				return usageErr("--max-file-size %q: %v", maxSize, err)
			}
			return with(cmd, func(m *checkpoint.Manager) error {
				opts := []checkpoint.CreateOption{checkpoint.WithMaxFileSize(limit)}
				if ign := storeInside(a, dir); ign != "" {
					opts = append(opts, checkpoint.WithIgnore(ign))
				}
				var man *checkpoint.Manifest
				var err error
				b := a.progress(-1, "snapshotting "+dir)
				defer b.done()
				if len(args) == 1 {
					man, err = m.CreateTree(cmd.Context(), args[0], opts...)
				} else {
					paths, err := workspacePaths(dir, args[1:])
					if err != nil {
						return err
					}
					for i, p := range paths {
						if _, serr := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); serr != nil && !a.jsonOut {
							fmt.Fprintf(a.stderr, "trove: %s does not exist: recorded as absent (a rewind deletes it)\n", args[1+i])
						}
					}
					man, err = m.Create(cmd.Context(), args[0], paths, opts...)
					if err != nil {
						return err
					}
				}
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(man)
				}
				a.printf("checkpoint %s: %d files, %d skipped\n", args[0], len(man.Files), len(man.Skipped))
				return nil
			})
		},
	}
	create.Flags().StringVar(&maxSize, "max-file-size", "16MiB", "files bigger than this are listed as skipped, not kept (0: no limit)")
	return create
}

// newCheckpointRewindCmd is trove checkpoint rewind.
func newCheckpointRewindCmd(a *app, with withManager) *cobra.Command {
	var dryRun bool
	var undo bool
	var before string
	rewind := &cobra.Command{
		Use:   "rewind NAME | --before TOOL_USE_ID | --undo",
		Short: "Restore the workspace to a checkpoint (--dry-run: report only; --undo: undo the last rewind)",
		Args: func(cmd *cobra.Command, args []string) error {
			if n := len(args) + btoi(undo) + btoi(before != ""); n == 1 {
				return nil
			}
			return usageErr("rewind takes a checkpoint name, --before TOOL_USE_ID or --undo alone")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				name := ""
				if undo {
					infos, err := m.List(cmd.Context())
					if err != nil {
						return err
					}
					for _, in := range infos { // sorted by id: undo ids sort by time
						if strings.HasPrefix(in.ID, checkpoint.UndoPrefix) {
							name = in.ID
						}
					}
					if name == "" {
						return fmt.Errorf("no rewind to undo in this workspace: %w", checkpoint.ErrNotFound)
					}
				} else if before != "" {
					name = before // the hook named it after the tool call
				} else {
					name = args[0]
				}
				b := a.progress(-1, "rewinding to "+name)
				res, err := m.Rewind(cmd.Context(), name, dryRun)
				b.done()
				if before != "" && errors.Is(err, checkpoint.ErrNotFound) {
					ws, _ := workspaceDir(cmd.Flag("dir").Value.String())
					hint := "trove checkpoint ls lists them"
					if dir := a.checkpointAbove(cmd.Context(), ws, before); dir != "" {
						hint = "it is one of " + dir + ": add --dir " + shellQuote(dir)
					}
					err = fmt.Errorf("no checkpoint before tool call %s in %s (%s): %w", before, ws, hint, err)
				}
				if a.jsonOut && res != nil {
					if perr := a.printJSON(res); perr != nil {
						return perr
					}
				} else if res != nil && err == nil {
					verb := "rewound to " + name
					if dryRun {
						verb = "would rewind to " + name
					}
					a.printf("%s: %d files (+%d -%d)\n", verb, len(res.FilesChanged), res.Insertions, res.Deletions)
					for _, g := range []struct {
						what  string
						paths []string
					}{{"restored", res.Restored}, {"deleted", res.Deleted}, {"recreated", res.Recreated}} {
						if len(g.paths) > 0 {
							a.printf("  %-9s %s\n", g.what, sanitizeLine(strings.Join(g.paths, ", ")))
						}
					}
					if res.Undo != "" {
						a.printf("what it overwrote and deleted is checkpoint %s: trove checkpoint rewind --undo\n", res.Undo)
					}
				}
				return err
			})
		},
	}
	rewind.Flags().BoolVar(&undo, "undo", false, "undo the last rewind of this workspace (rewind to the checkpoint it took)")
	rewind.Flags().BoolVar(&dryRun, "dry-run", false, "compute the report and write nothing")
	rewind.Flags().StringVar(&before, "before", "", "rewind to the checkpoint trove's Claude Code hook took before this tool call")
	return rewind
}

// newCheckpointDiffCmd is trove checkpoint diff.
func newCheckpointDiffCmd(a *app, with withManager) *cobra.Command {
	return &cobra.Command{
		Use:   "diff NAME",
		Short: "Changes between a checkpoint and the workspace, with line stats",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				res, err := m.Diff(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(res)
				}
				for _, f := range res.Files {
					a.printf("%-9s +%-5d -%-5d %s\n", f.Status, f.Insertions, f.Deletions, f.Path)
				}
				a.printf("%d files, +%d -%d\n", len(res.Files), res.Insertions, res.Deletions)
				return nil
			})
		},
	}
}

// workspacePaths resolves paths as people type them: relative to the
// current directory, or absolute; either must lie inside the workspace.
func workspacePaths(dir string, args []string) ([]string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(args))
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, usageErr("%s is outside the workspace %s", arg, root)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// storeInside returns the store's path relative to dir when a local store
// lives inside the workspace, so snapshots never include (and rewinds never
// delete) the store's own files.
func storeInside(a *app, dir string) string {
	root := a.storeName()
	if after, ok := strings.CutPrefix(root, "file://"); ok {
		root = after
	}
	absDir, err1 := filepath.Abs(dir)
	absRoot, err2 := filepath.Abs(root)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(absDir, absRoot)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return ""
	}
	return fmt.Sprintf("/%s/", filepath.ToSlash(rel))
}

// parseSize reads a size: bytes, or a number with a unit (KB, MB, GB in
// powers of 1000; KiB, MiB, GiB in powers of 1024; case does not matter).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1e3, "kib": 1 << 10, "m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1e9, "gib": 1 << 30}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult > math.MaxInt64/2 {
		return 0, errors.New("want bytes or a number with KB, MB, GB, KiB, MiB or GiB")
	}
	return int64(v * mult), nil
}

// checkpointRows appends m's checkpoints to out; with ids set, only those
// linked to one of them, marked as workspace ws's.
func checkpointRows(ctx context.Context, m *checkpoint.Manager, out []checkpointJSON, ws string, ids []string) ([]checkpointJSON, error) {
	infos, err := m.List(ctx)
	if err != nil {
		return out, err
	}
	for _, in := range infos {
		c := checkpointJSON{ID: in.ID, Size: in.Size, Workspace: ws}
		man, n, err := listed(ctx, m, in.ID)
		if err == nil {
			c.Kind, c.CreatedAt, c.Files, c.Session, c.Note = man.Kind, man.CreatedAt.UTC(), n, man.Session, man.Note
		}
		if ids == nil || err == nil && slices.Contains(ids, man.Session) {
			out = append(out, c)
		}
	}
	return out, nil
}

// listed is what a listing shows of checkpoint id: its manifest's header
// and how many entries it has, its trees read only where the header does
// not count them (written before manifests did).
func listed(ctx context.Context, m *checkpoint.Manager, id string) (*checkpoint.Manifest, int, error) {
	man, err := m.LoadHeader(ctx, id)
	if err == nil && man.Tree != "" && man.Entries == 0 {
		man, err = m.Load(ctx, id)
	}
	if err != nil {
		return nil, 0, err
	}
	return man, max(len(man.Files), man.Entries), nil
}

// addCheckpointAdmin adds ls, show and rm to the checkpoint command; with
// runs a function on the workspace's manager, linked on those holding the
// checkpoints a session's hooks took.
func addCheckpointAdmin(a *app, cmd *cobra.Command, with withManager, linked linkedManager) {
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the workspace's checkpoints (with --session, the session's and those its hooks took)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := []checkpointJSON{}
			missing := with(cmd, func(m *checkpoint.Manager) error {
				var err error
				out, err = checkpointRows(ctx, m, out, "", nil)
				return err
			})
			if missing != nil && !errors.Is(missing, fs.ErrNotExist) {
				return missing
			}
			// A session not imported yet: only what its hooks took.
			err := linked(cmd, func(m *checkpoint.Manager, ws string, ids []string) error {
				var err error
				out, err = checkpointRows(ctx, m, out, ws, ids)
				return err
			})
			if err != nil {
				return err
			}
			if missing != nil && len(out) == 0 {
				return missing
			}
			// Oldest first: hooks name checkpoints after tool_use_ids,
			// whose order says nothing of when they were taken.
			slices.SortStableFunc(out, func(x, y checkpointJSON) int {
				return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), strings.Compare(x.ID, y.ID))
			})
			if a.jsonOut {
				return a.printJSON(out)
			}
			w := 24
			for _, c := range out {
				w = max(w, len(c.ID))
			}
			for _, c := range out {
				a.printf("%-*s  %s  %-5s  %6d files", w, c.ID, c.CreatedAt.Local().Format(time.DateTime), c.Kind, c.Files)
				if c.Note != "" {
					a.printf("  before %s", sanitizeLine(c.Note))
				}
				if c.Workspace != "" {
					a.printf("  (%s's)", sanitizeLine(c.Workspace))
				}
				a.printf("\n")
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a checkpoint: its files, sizes and modes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				man, err := m.Load(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(man)
				}
				a.printf("checkpoint %s (%s) taken %s", man.ID, man.Kind, man.CreatedAt.Local().Format(time.DateTime))
				if man.Session != "" {
					a.printf(", session %s", man.Session)
				}
				a.printf("\n")
				for _, f := range man.Files {
					switch {
					case !f.Exists:
						a.printf("  absent            %s\n", sanitizeLine(f.Path))
					case f.Type == checkpoint.TypeSymlink:
						a.printf("  link              %s -> %s\n", sanitizeLine(f.Path), sanitizeLine(f.Target))
					default:
						a.printf("  %04o %10d  %s\n", uint32(f.Mode), f.Size, sanitizeLine(f.Path))
					}
				}
				for _, s := range man.Skipped {
					a.printf("  skipped (%s)  %s\n", s.Reason, sanitizeLine(s.Path))
				}
				return nil
			})
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete checkpoints (their blobs go at the next gc)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(m *checkpoint.Manager) error {
				for _, id := range args {
					if err := m.Delete(cmd.Context(), id); err != nil {
						return err
					}
					if !a.jsonOut {
						a.printf("removed checkpoint %s\n", id)
					}
				}
				if a.jsonOut {
					return a.printJSON(map[string]any{"removed": args})
				}
				return nil
			})
		},
	}
	cmd.AddCommand(ls, show, rm)
}

// checkpointJSON is one checkpoint of `trove checkpoint ls --json`.
type checkpointJSON struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	Files     int       `json:"files"`
	Session   string    `json:"session,omitempty"`
	Note      string    `json:"note,omitempty"` // the tool call it was taken before
	Size      int64     `json:"manifest_bytes"`
	// Workspace, in a session's listing, is the workspace directory whose
	// checkpoint this is, linked to the session (a hook's), not one of
	// the session's own.
	Workspace string `json:"workspace,omitempty"`
}
