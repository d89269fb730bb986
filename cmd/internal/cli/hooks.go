package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/importer"
	"github.com/trovekit/trove/watch"
)

func newHooksCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "hooks", Short: "Checkpoint before every file-changing tool call of Claude Code or Codex (their hooks)"}
	var project, user bool
	// where is the settings file of ag that --project or --user names.
	where := func(ag agent) (string, error) {
		if project && user {
			return "", usageErr("--project or --user, not both")
		}
		if user {
			return ag.userFile()
		}
		wd, err := os.Getwd()
		return filepath.Join(wd, filepath.FromSlash(ag.project)), err
	}
	install := &cobra.Command{
		Use:   "install claude|codex [--project | --user]",
		Short: "Add trove's hooks to the agent's settings (kept: everything else in them)",
		Long: "Merge hook entries into the agent's settings: Claude Code's .claude/settings.json under the\n" +
			"current directory (--project, the default) or ~/.claude/settings.json (--user); Codex's\n" +
			".codex/hooks.json or ~/.codex/hooks.json. Before each file-changing tool call (Claude Code:\n" +
			"Write, Edit, MultiEdit, NotebookEdit, Bash; Codex: Bash, apply_patch) a checkpoint of the\n" +
			"workspace named after the call; when the agent stops, an import of the transcript. The entries\n" +
			"call this binary by its absolute path. Running it again changes nothing.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ag, err := agentNamed(args[0])
			if err != nil {
				return err
			}
			path, err := where(ag)
			if err != nil {
				return err
			}
			exe, err := lastingExecutable("the hooks")
			if err != nil {
				return err
			}
			command := shellQuote(exe)
			if a.storeURL != "" {
				store, err := absStore(a.storeURL)
				if err != nil {
					return err
				}
				command += " --store " + shellQuote(store)
			}
			if err := a.checkUnattendedKey(cmd.Context(), "hooks", true); err != nil {
				return err
			}
			return a.editSettings(ag, path, command+ag.marker(), "installed trove's hooks in")
		},
	}
	uninstall := &cobra.Command{
		Use:   "uninstall claude|codex [--project | --user]",
		Short: "Remove trove's hooks from the agent's settings, leaving the rest",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ag, err := agentNamed(args[0])
			if err != nil {
				return err
			}
			path, err := where(ag)
			if err != nil {
				return err
			}
			return a.editSettings(ag, path, "", "removed trove's hooks from")
		},
	}
	for _, c := range []*cobra.Command{install, uninstall} {
		c.Flags().BoolVar(&project, "project", false, "the project's settings under the current directory (default)")
		c.Flags().BoolVar(&user, "user", false, "the user's settings, for every project")
	}
	var budget time.Duration
	run := &cobra.Command{
		Use:   "run claude|codex",
		Short: "Run one hook: the hook's JSON on stdin (what the installed entries call)",
		Long: "Reads the hook's JSON on stdin. PreToolUse of a file-changing tool: a checkpoint of the\n" +
			"workspace (CLAUDE_PROJECT_DIR, else the hook's cwd) named after the tool_use_id, durable before\n" +
			"it returns. Stop, SubagentStop, SessionEnd: the transcript imported. It exits 0 whatever\n" +
			"happens, so the agent goes on; failures go to the log `trove hooks status` shows.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			ctx, cancel := context.WithTimeout(cmd.Context(), budget)
			defer cancel()
			var known struct {
				sync.Mutex
				h hookInput
			}
			if a.exits {
				// A call that never returns (a dead mount, a pipe nobody
				// writes) does not see the context: past the budget and
				// a grace, the process logs and ends, and the tool runs.
				watchdog := time.AfterFunc(budget+hookGrace, func() {
					known.Lock()
					h := known.h
					known.Unlock()
					hookLog(h, fmt.Errorf("gave up: still running %v after the budget: %w", hookGrace, context.DeadlineExceeded), time.Since(start))
					os.Exit(exitOK)
				})
				defer watchdog.Stop()
			}
			// Read whole: a Write's tool_input holds the file's content,
			// which may be any size, and a cut payload takes no checkpoint.
			var h hookInput
			err := json.NewDecoder(a.stdin).Decode(&h)
			known.Lock()
			known.h = h
			known.Unlock()
			ag, aerr := agentNamed(args[0])
			if err == nil {
				err = aerr
			}
			if err == nil {
				err = a.runHook(ctx, ag, h)
			}
			if err != nil {
				hookLog(h, err, time.Since(start))
			}
			return nil // a hook never stops the agent
		},
	}
	run.Flags().DurationVar(&budget, "budget", 20*time.Second, "give up (and let the tool run) after this long; the process ends 2s later whatever it waits for")
	status := &cobra.Command{
		Use:   "status",
		Short: "Where trove's hooks are installed, and the hooks' recent failures",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Whether a hook can open an encrypted store, first: a
			// missing key file fails every hook.
			if err := a.checkUnattendedKey(cmd.Context(), "hooks", true); err != nil {
				a.printf("store: %v\n", err)
			}
			return a.hooksStatus()
		},
	}
	cmd.AddCommand(install, uninstall, run, status)
	return cmd
}

// checkUnattendedKey makes sure that what runs unattended (who: hooks,
// which the agent runs, or the watch service), and so cannot ask for a
// passphrase, can open the --store when it is encrypted (storeKey.judge),
// and prints what it notes.
func (a *app) checkUnattendedKey(ctx context.Context, who string, perCall bool) error {
	note, err := a.probeKey(ctx).judge(a.storeName(), who, perCall)
	if note != "" {
		a.printf("%s\n", note)
	}
	return err
}

// storeKey is what a process that cannot ask for a passphrase meets
// opening the --store: found once (probeKey), for a verdict on each
// unattended part (judge).
type storeKey struct {
	encrypted bool
	keyFile   bool          // the user's key file is there
	key       crypt.KeyInfo // the key object it opens
	err       error         // the storage failed, or the key file (others may read it, it opens nothing)
}

// probeKey reads what an unattended process would: whether the store is
// encrypted, and if so the user's key file and which key object it opens.
func (a *app) probeKey(ctx context.Context) storeKey {
	if err := a.checkStoreExists(); errors.Is(err, fs.ErrNotExist) {
		return storeKey{} // the first write makes a plain store
	}
	st, err := a.rawStore(ctx)
	if err != nil {
		return storeKey{err: err}
	}
	if enc, err := crypt.IsEncrypted(ctx, st); err != nil || !enc {
		return storeKey{err: err}
	}
	secret, ok, err := readKeyFile()
	if err != nil || !ok {
		return storeKey{encrypted: true, err: err}
	}
	k, err := crypt.KeyFor(ctx, st, secret)
	if err != nil {
		err = fmt.Errorf("the key file %s does not open %s: %w", keyFileHint(), a.storeName(), err)
	}
	return storeKey{encrypted: true, keyFile: true, key: k, err: err}
}

// judge says whether who can open store: a plain one, or an encrypted one
// through the user's key file, or for hooks $TROVE_PASSWORD in the
// agent's environment (then the note says so). A key file wrapped with
// scrypt works, but costs each process about 80 ms: perCall notes it for
// hooks, one process a call.
func (k storeKey) judge(store, who string, perCall bool) (note string, err error) {
	switch {
	case k.err != nil || !k.encrypted:
		return "", k.err
	case !k.keyFile && perCall && os.Getenv(envPassword) != "":
		return fmt.Sprintf("%s is encrypted: %s need $%s in the agent's environment too (or a key file: trove key add --generate-key-file)", store, who, envPassword), nil
	case !k.keyFile:
		return "", fmt.Errorf("%s is encrypted, and %s cannot ask for its passphrase: write a key file first (trove key add --generate-key-file): %w", store, who, crypt.ErrEncrypted)
	case perCall && k.key.KDF != crypt.KDFHKDF:
		// Its key object may be the user's own passphrase's: the way
		// out keeps it.
		kf := keyFileHint()
		return fmt.Sprintf("warning: the key file %s is wrapped with %s (key %s): %s spend about 80 ms each opening the store.\n"+
			"A generated one opens it in microseconds: mv %s %s.old; trove key add --generate-key-file\n"+
			"(then trove key remove %s, unless that key is a passphrase someone types)", kf, k.key.KDF, k.key.ID, who, kf, kf, k.key.ID), nil
	}
	return "", nil
}

// editSettings rewrites the agent's settings at path with trove's
// entries calling command ("": none).
func (a *app) editSettings(ag agent, path, command, did string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if command == "" && errors.Is(err, fs.ErrNotExist) {
		a.printf("no %s: nothing to remove\n", path)
		return nil
	}
	out, err := ag.editHooks(data, command)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(out) == string(data) {
		a.printf("%s: already as wanted\n", path)
		return nil
	}
	if err := writeAtomic(path, out); err != nil {
		return err
	}
	a.printf("%s %s\n", did, path)
	return nil
}

// absStore is a store URL that names the same store from any directory:
// a hook runs in the agent's cwd, not where it was installed. What is a
// URL is open.URL's rule ("://"): anything else it opens as a path.
func absStore(u string) (string, error) {
	if strings.Contains(u, "://") {
		return u, nil // file:///abs, mem://, s3://...
	}
	return filepath.Abs(u)
}

// hookInput is what Claude Code and Codex give a hook on stdin (the
// fields trove reads; the rest is ignored).
type hookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	Event          string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// UnmarshalJSON reads each field leniently: a field of another type than
// trove expects (a number for tool_use_id, null for session_id: a newer
// or odd agent) is read as its JSON number's text, or empty, rather than
// failing the payload and losing the checkpoint the tool call is owed.
func (h *hookInput) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	str := func(key string) string {
		var s string
		var n json.Number
		switch raw := m[key]; {
		case json.Unmarshal(raw, &s) == nil:
			return s
		case json.Unmarshal(raw, &n) == nil:
			return n.String()
		}
		return ""
	}
	*h = hookInput{SessionID: str("session_id"), TranscriptPath: str("transcript_path"), Cwd: str("cwd"),
		Event: str("hook_event_name"), ToolName: str("tool_name"), ToolInput: m["tool_input"], ToolUseID: str("tool_use_id")}
	return nil
}

func (a *app) runHook(ctx context.Context, ag agent, h hookInput) error {
	switch h.Event {
	case "PreToolUse":
		if !ag.tools[h.ToolName] {
			return nil
		}
		return a.hookCheckpoint(ctx, ag, h)
	case "Stop", "SubagentStop", "SessionEnd":
		if h.TranscriptPath == "" {
			return nil
		}
		ts, err := a.troveStore(ctx)
		if err != nil {
			return err
		}
		path, err := filepath.Abs(h.TranscriptPath)
		if err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("transcript: %w", err) // Once would find nothing to read, and say nothing
		}
		if err := importer.NotRegular(path, fi); err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
		paths := []string{path}
		if sub := strings.TrimSuffix(path, ".jsonl") + "/subagents"; isDir(sub) {
			paths = append(paths, sub)
		}
		// As trove watch reads them, with its state: a transcript that
		// grew since costs its new bytes, not a parse of the whole file
		// at every turn.
		var roots []watch.Root
		for _, p := range paths {
			roots = append(roots, watch.Root{Path: p, Format: ag.format})
		}
		err = watch.New(ts, roots, watch.WithStateFile(a.watchState()), watch.WithLogger(a.log)).Once(ctx)
		if !errors.Is(err, watch.ErrRunning) {
			return err
		}
		// A watcher runs, but may follow other roots.
		_, err = importer.Import(ctx, ts, paths, importer.Options{From: ag.format})
		return err
	}
	return nil
}

// hookCheckpoint takes the checkpoint before a tool call: the workspace
// as it is, named after the call, linked to the session.
func (a *app) hookCheckpoint(ctx context.Context, ag agent, h hookInput) error {
	dir := os.Getenv("CLAUDE_PROJECT_DIR")
	if dir == "" {
		dir = h.Cwd
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("no workspace: cwd %q: %w", dir, fs.ErrInvalid)
	}
	dir, err := workspaceDir(dir)
	if err != nil {
		return err
	}
	if h.ToolUseID == "" {
		// A payload without the call's id (an older agent) still gets its
		// checkpoint, named by the time: rewind takes it by name.
		h.ToolUseID = "pre-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	}
	if err := checkpoint.ValidID(h.ToolUseID); err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	m, err := checkpoint.OpenDir(ctx, st, dir, checkpoint.WithLogger(a.log), checkpoint.WithMappedStatCache())
	if err != nil {
		return err
	}
	defer m.Close()
	// A payload delivered again (the hooks installed twice, a retry) may
	// come after the tool ran: the first checkpoint is the one before it.
	if _, err := m.LoadHeader(ctx, h.ToolUseID); err == nil {
		return nil
	}
	opts := []checkpoint.CreateOption{checkpoint.WithNote(toolNote(h)), checkpoint.WithMessage(h.ToolUseID)}
	if h.SessionID != "" {
		opts = append(opts, checkpoint.WithSession(importer.SessionID(ag.format, h.SessionID)))
	}
	if ign := storeInside(a, dir); ign != "" {
		opts = append(opts, checkpoint.WithIgnore(ign))
	}
	_, err = m.CreateTree(ctx, h.ToolUseID, opts...)
	return err
}

// toolNote says which call a checkpoint precedes: the tool and what it
// was about to change.
func toolNote(h hookInput) string {
	var in struct {
		Command      json.RawMessage `json:"command"`
		FilePath     string          `json:"file_path"`
		NotebookPath string          `json:"notebook_path"`
	}
	json.Unmarshal(h.ToolInput, &in)
	var command string
	if json.Unmarshal(in.Command, &command) != nil {
		var argv []string // Codex's shell call: ["bash", "-lc", "..."]
		json.Unmarshal(in.Command, &argv)
		command = strings.Join(argv, " ")
	}
	what := command + in.FilePath + in.NotebookPath
	what, _, _ = strings.Cut(what, "\n")
	if len(what) > 100 {
		what = what[:100] + "..."
	}
	return strings.TrimSpace(h.ToolName + ": " + what)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// hookGrace is how long a hook's process may outlive its budget, finishing
// what the cancelled context stops, before it ends regardless.
const hookGrace = 2 * time.Second

// hookLogPath is where hooks log their failures: $XDG_STATE_HOME/trove,
// else ~/.local/state/trove.
func hookLogPath() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "trove-hooks.log")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "trove", "hooks.log")
}

// hookLog appends one failure to the hooks' log, trimmed to its last
// half when it passes 1 MiB.
func hookLog(h hookInput, err error, took time.Duration) {
	path := hookLogPath()
	if os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	if fi, serr := os.Stat(path); serr == nil && fi.Size() > 1<<20 {
		if data, rerr := os.ReadFile(path); rerr == nil {
			os.WriteFile(path, data[len(data)/2:], 0o600)
		}
	}
	f, ferr := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if ferr != nil {
		return
	}
	defer f.Close()
	line := fmt.Sprintf("%s %s %s %s %s: %v\n", time.Now().UTC().Format(time.RFC3339), h.Event, h.ToolName, h.ToolUseID, took.Round(time.Millisecond),
		sanitizeLine(err.Error()))
	f.WriteString(line)
}

func (a *app) hooksStatus() error {
	for ag, p := range settingsFiles() {
		a.settingsStatus(ag, p)
	}
	return a.hooksLog()
}

// settingsFiles yields each agent's settings files where trove's hooks
// may be: the project's under the current directory, then the user's
// (once, where the two are one).
func settingsFiles() iter.Seq2[agent, string] {
	return func(yield func(agent, string) bool) {
		wd, _ := os.Getwd()
		for _, ag := range []agent{claudeAgent(), codexAgent()} {
			project := filepath.Join(wd, filepath.FromSlash(ag.project))
			if !yield(ag, project) {
				return
			}
			if user, err := ag.userFile(); err == nil && user != project && !yield(ag, user) {
				return
			}
		}
	}
}

// settingsStatus says whether trove's hooks are in the settings at p,
// and whether the binary they call is still there.
func (a *app) settingsStatus(ag agent, p string) {
	command, err := ag.installedCommand(p)
	switch {
	case err != nil:
		a.printf("%s: %v\n", p, err)
	case command == "":
		a.printf("%s: no trove hooks\n", p)
	default:
		a.printf("%s: installed: %s\n", p, command)
		if bin := goneBinary(command); bin != "" {
			a.printf("  but %s is gone: every hook fails before trove can log why (install them again: trove hooks install %s)\n", bin, ag.name)
		}
	}
}

// lastingExecutable is this binary's path, for what calls it later (the
// agent's hooks, a service). It refuses `go run`'s temporary build, which
// is removed when that run ends: every later call would fail before
// trove could log why.
func lastingExecutable(who string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if goRunBuild(exe) {
		return "", fmt.Errorf("%s would call %s, a temporary build that go run removes when it ends: install trove first (make install, or go install ./cmd/trove) and use that binary", who, exe)
	}
	return exe, nil
}

// goRunBuild reports whether exe is where go run builds a command:
// .../go-buildNNN/bNNN/exe/NAME.
func goRunBuild(exe string) bool {
	parts := strings.Split(filepath.ToSlash(exe), "/")
	n := len(parts)
	return n >= 4 && parts[n-2] == "exe" && strings.HasPrefix(parts[n-4], "go-build")
}

// firstWord is the first word of a command as shellQuote writes words.
func firstWord(command string) string {
	if !strings.HasPrefix(command, "'") {
		w, _, _ := strings.Cut(command, " ")
		return w
	}
	var b strings.Builder
	for rest := command[1:]; ; {
		i := strings.IndexByte(rest, '\'')
		if i < 0 {
			return b.String() + rest
		}
		b.WriteString(rest[:i])
		if !strings.HasPrefix(rest[i:], `'\''`) {
			return b.String()
		}
		b.WriteByte('\'')
		rest = rest[i+4:]
	}
}

// goneBinary is the program command (as shellQuote writes it) calls by
// its absolute path, when no such program is there any more; else "".
func goneBinary(command string) string {
	if bin := firstWord(command); programGone(bin) {
		return bin
	}
	return ""
}

// programGone reports whether bin, a program named by its absolute path,
// is no longer a file someone may execute.
func programGone(bin string) bool {
	if !filepath.IsAbs(bin) {
		return false
	}
	fi, err := os.Stat(bin)
	return err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0
}

// hooksLog prints the hooks' recent failures.
func (a *app) hooksLog() error {
	path := hookLogPath()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		a.printf("no hook failures logged (%s)\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 20 {
			lines = lines[1:]
		}
	}
	a.printf("recent hook failures (%s):\n", path)
	for _, l := range lines {
		a.printf("  %s\n", l)
	}
	return sc.Err()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
