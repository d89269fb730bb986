package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/watch"
)

func newWatchCmd(a *app) *cobra.Command {
	var from, state string
	var debounce, rescan, idle time.Duration
	var install, write bool
	cmd := &cobra.Command{
		Use:   "watch [PATH...]",
		Short: "Import agents' sessions as they are written (Claude Code, Codex, pi)",
		Long: "Follow session directories (by default ~/.claude/projects, ~/.codex/sessions, ~/.pi/agent and\n" +
			"~/.omp/agent) and import each session as it grows: only the bytes appended are read, a rewritten\n" +
			"source updates its session, a deleted one leaves trove as it is. Runs until interrupted.\n" +
			"--install prints a systemd user unit (Linux) or launchd agent (macOS) running it; --write installs it.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if write && !install {
				return usageErr("--write goes with --install")
			}
			if install {
				if err := a.checkUnattendedKey(cmd.Context(), "the watch service", false); err != nil {
					return err
				}
				return a.installWatch(args, write)
			}
			roots := watch.DefaultRoots()
			if len(args) > 0 {
				roots = nil
				for _, p := range args {
					abs, err := filepath.Abs(p)
					if err != nil {
						return err
					}
					roots = append(roots, watch.Root{Path: abs, Format: from})
				}
			}
			if state == "" {
				state = a.watchState()
			}
			ts, err := a.troveStore(cmd.Context())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var names []string
			for _, r := range roots {
				names = append(names, r.Path)
			}
			a.log.Info("trove watch: following", "roots", strings.Join(names, ", "), "state", state)
			w := watch.New(ts, roots, watch.WithDebounce(debounce), watch.WithRescan(rescan), watch.WithIdle(idle), watch.WithStateFile(state), watch.WithLogger(a.log))
			return w.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "auto", "format of the sessions under PATH: claude, codex, pi, omp, agent-jsonl or auto")
	f.StringVar(&state, "state", "", "file keeping what was read of each source (default under the user cache directory, one per store)")
	f.DurationVar(&debounce, "debounce", 100*time.Millisecond, "wait after a change for more before reading")
	f.DurationVar(&rescan, "rescan", 30*time.Second, "how often every source is stat'ed for changes notifications missed")
	f.DurationVar(&idle, "idle", 10*time.Minute, "let go of the parse state of a source unwritten this long (read whole once if it grows again)")
	f.BoolVar(&install, "install", false, "print a systemd user unit (Linux) or launchd agent (macOS) running trove watch")
	f.BoolVar(&write, "write", false, "with --install: write it where the service manager looks")
	return cmd
}

// watchState is the default state file of the store's watcher.
func (a *app) watchState() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	sum := sha256.Sum256([]byte(a.storeName()))
	return filepath.Join(dir, "trove", "watch-"+hex.EncodeToString(sum[:6])+".json")
}

// installWatch prints, or writes, the service definition running this
// binary's `trove watch`.
func (a *app) installWatch(args []string, write bool) error {
	exe, err := lastingExecutable("the service")
	if err != nil {
		return err
	}
	argv := []string{exe}
	if a.storeURL != "" {
		store, err := absStore(a.storeURL)
		if err != nil {
			return err
		}
		argv = append(argv, "--store", store)
	}
	argv = append(argv, "watch")
	for _, p := range args {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		argv = append(argv, abs)
	}
	path, err := watchService()
	if err != nil {
		return err
	}
	var text, enable string
	switch runtime.GOOS {
	case "darwin":
		text, enable = launchdAgent(argv), "launchctl load -w "+path
	case "linux":
		text, enable = systemdUnit(argv), "systemctl --user daemon-reload && systemctl --user enable --now trove-watch"
	}
	if !write {
		a.printf("# %s\n%s", path, text)
		a.printf("# install with: trove watch --install --write, then: %s\n", enable)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	a.printf("wrote %s\nstart it with: %s\n", path, enable)
	return nil
}

// watchService is the file where this system's service manager looks
// for trove watch's service: a launchd agent on macOS, a systemd user
// unit on Linux.
func watchService() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "LaunchAgents", "dev.trove.watch.plist"), nil
	case "linux":
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".config")
		}
		return filepath.Join(dir, "systemd", "user", "trove-watch.service"), nil
	}
	return "", fmt.Errorf("trove watch --install: no service manager known on %s: run `trove watch` at login", runtime.GOOS)
}

// serviceBinary is the program a service file written by installWatch
// runs ("" when it names none).
func serviceBinary(text string) string {
	if _, args, ok := strings.Cut(text, "<key>ProgramArguments</key>"); ok { // launchd
		if _, v, ok := strings.Cut(args, "<string>"); ok {
			v, _, _ = strings.Cut(v, "</string>")
			return html.UnescapeString(v)
		}
		return ""
	}
	for line := range strings.Lines(text) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart=")
		if !ok {
			continue
		}
		if q, ok := strings.CutPrefix(v, `"`); ok {
			var b strings.Builder
			for i := 0; i < len(q) && q[i] != '"'; i++ {
				if q[i] == '\\' && i+1 < len(q) {
					i++
				}
				b.WriteByte(q[i])
			}
			return strings.ReplaceAll(strings.ReplaceAll(b.String(), "$$", "$"), "%%", "%")
		}
		w, _, _ := strings.Cut(v, " ")
		return w
	}
	return ""
}

// systemdUnit is a user unit running argv, restarted if it fails.
func systemdUnit(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = systemdQuote(s)
	}
	return "[Unit]\nDescription=trove watch: import coding agents' sessions as they are written\n\n" +
		"[Service]\nExecStart=" + strings.Join(q, " ") + "\nRestart=on-failure\nRestartSec=5\n\n" +
		"[Install]\nWantedBy=default.target\n"
}

// systemdQuote quotes s for an Exec line where it needs it.
func systemdQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\$%;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%")
	return `"` + r.Replace(s) + `"`
}

// launchdAgent is a launch agent running argv at login, kept alive.
func launchdAgent(argv []string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key><string>dev.trove.watch</string>
	<key>ProgramArguments</key>
	<array>
`)
	for _, s := range argv {
		b.WriteString("\t\t<string>" + xmlEscape(s) + "</string>\n")
	}
	b.WriteString(`	</array>
	<key>RunAtLoad</key><true/>
	<key>KeepAlive</key><true/>
</dict>
</plist>
`)
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}
