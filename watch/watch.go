package watch

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
)

// Root is a directory (or file) the watcher follows, and the format of its
// sessions ("" or "auto": told from each file's first lines).
type Root struct {
	Path   string
	Format string
}

// DefaultRoots are where Claude Code, Codex, pi and oh-my-pi keep their
// sessions, honouring CLAUDE_CONFIG_DIR, CODEX_HOME and
// PI_CODING_AGENT_DIR.
func DefaultRoots() []Root {
	home, _ := os.UserHomeDir()
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return filepath.Join(home, def)
	}
	return []Root{
		{Path: filepath.Join(env("CLAUDE_CONFIG_DIR", ".claude"), "projects"), Format: "claude"},
		{Path: filepath.Join(env("CODEX_HOME", ".codex"), "sessions"), Format: "codex"},
		{Path: env("PI_CODING_AGENT_DIR", filepath.Join(".pi", "agent")), Format: "pi"},
		{Path: filepath.Join(home, ".omp", "agent"), Format: "omp"},
	}
}

// Event is what a watcher reports after each pass over the sources that
// changed (tests and `trove watch -v` follow it).
type Event struct {
	Path   string
	From   int64 // where the source was read from (-1: it was not read)
	Offset int64 // bytes of the source imported
	Size   int64 // of the file when it was read
	Err    error
}

type config struct {
	debounce, rescan time.Duration
	idle             time.Duration
	stateFile        string
	log              *slog.Logger
	open             func(string) (File, error)
	onEvent          func(Event)
}

// Option tunes New.
type Option func(*config)

// WithDebounce sets how long the watcher waits after a notification for
// more before it reads (default 100 ms): a burst of lines is read at once.
func WithDebounce(d time.Duration) Option { return func(c *config) { c.debounce = d } }

// WithRescan sets how often every source is stat'ed for changes the
// notifications missed (default 30 s; 0 never).
func WithRescan(d time.Duration) Option { return func(c *config) { c.rescan = d } }

// WithIdle sets how long a source may go unwritten before the watcher
// lets go of its parse state (default 10 minutes): memory is kept for the
// sessions at work, and a source written again after is read whole once.
func WithIdle(d time.Duration) Option { return func(c *config) { c.idle = d } }

// WithStateFile keeps the offsets of the sources in path across runs, so a
// restarted watcher reads nothing of a source that did not change.
func WithStateFile(path string) Option { return func(c *config) { c.stateFile = path } }

// WithLogger sets where problems with sources are logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithOpen sets how source files are opened (tests count the bytes read).
func WithOpen(open func(string) (File, error)) Option { return func(c *config) { c.open = open } }

// WithEvents calls fn after each source is read, from the watcher's
// goroutine.
func WithEvents(fn func(Event)) Option { return func(c *config) { c.onEvent = fn } }

// Watcher imports the sessions under its roots into a store as they grow.
type Watcher struct {
	config
	st      *trove.Store
	roots   []Root
	sources map[string]*source
	dirty   map[string]bool
	fsw     *fsnotify.Watcher
	watched map[string]bool
	saved   bool                   // the state file is current
	index   *importer.SessionIndex // the store's sessions, for every Follower
}

// New makes a watcher of roots into st; Run starts it.
func New(st *trove.Store, roots []Root, opts ...Option) *Watcher {
	c := config{debounce: 100 * time.Millisecond, rescan: 30 * time.Second, idle: 10 * time.Minute, log: slog.Default(),
		open: func(p string) (File, error) { return os.Open(p) }}
	for _, o := range opts {
		o(&c)
	}
	return &Watcher{config: c, st: st, roots: roots, sources: map[string]*source{}, dirty: map[string]bool{}, watched: map[string]bool{},
		index: importer.NewSessionIndex(st)}
}

// ErrRunning is returned by Run when another watcher runs with the same
// state file.
var ErrRunning = errors.New("watch: another watcher runs with this state file")

// Run imports everything under the roots, then follows them until ctx is
// done. It returns nil when ctx is cancelled, and an error wrapping
// ErrRunning at once if another watcher (in this process or another)
// runs with the same state file: two would take turns at each session's
// lock, each losing turn costing a whole read of the source, and remove
// each other's temporary state files. One started during a pass of Once
// (a hook's) waits for it to end.
func (w *Watcher) Run(ctx context.Context) error {
	unlock, err := w.begin(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return nil // cancelled while a hook's pass held the state
		}
		return err
	}
	defer unlock()
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	w.fsw = fsw
	w.load()
	defer w.save()
	w.scan(ctx)
	var tick <-chan time.Time
	if w.rescan > 0 {
		t := time.NewTicker(w.rescan)
		defer t.Stop()
		tick = t.C
	}
	// The timer starts at the first notification and is not pushed back by
	// later ones: a steady stream of lines is read every debounce.
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return nil
			}
			if w.notified(ev) && !pending {
				pending = true
				debounce.Reset(w.debounce)
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return nil
			}
			// An overflowed queue loses events: look at everything.
			w.log.Warn("trove watch: notifications", "err", err)
			w.scan(ctx)
		case <-debounce.C:
			pending = false
			w.drain(ctx)
		case <-tick:
			w.scan(ctx)
		}
	}
}

// Once reads the sources under the roots as Run's first scan does, from
// where the state file says the last run stopped, and returns: a hook
// importing a transcript that grew reads only the new bytes. It returns
// an error wrapping ErrRunning if a watcher runs with the state file
// (that one reads the sources), else the sources' errors.
func (w *Watcher) Once(ctx context.Context) error {
	unlock, err := w.begin(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	on := w.onEvent
	w.onEvent = func(e Event) {
		errs = append(errs, e.Err)
		if on != nil {
			on(e)
		}
	}
	w.load()
	w.scan(ctx)
	w.save()
	return errors.Join(append(errs, ctx.Err())...)
}

// begin takes the state file's lock, if there is a state file.
func (w *Watcher) begin(ctx context.Context, run bool) (unlock func(), err error) {
	if w.stateFile == "" {
		return func() {}, nil
	}
	return lockState(ctx, w.stateFile, run)
}

// notified records what an event touched, reporting whether a source
// waits to be read.
func (w *Watcher) notified(ev fsnotify.Event) bool {
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		delete(w.watched, ev.Name) // a directory's watch goes with it
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			// Files may have been written before the watch was added.
			mark := func(p string) { w.dirty[p] = true }
			if w.formatOf(ev.Name) == "" {
				w.walkRoots(mark) // a directory on the way to a root
			} else {
				w.walk(ev.Name, w.formatOf(ev.Name), mark)
			}
			return true
		}
	}
	if filepath.Base(filepath.Dir(ev.Name)) == "blobs" || strings.HasSuffix(ev.Name, ".jsonl") {
		w.dirty[ev.Name] = true
		return true
	}
	return false
}

// drain reads the sources notifications named.
func (w *Watcher) drain(ctx context.Context) {
	paths := make([]string, 0, len(w.dirty))
	for p := range w.dirty {
		paths = append(paths, p)
	}
	clear(w.dirty)
	w.process(ctx, paths)
}

// scan stats every source under the roots (and adds watches on
// directories new since), reading those that changed.
func (w *Watcher) scan(ctx context.Context) {
	var paths []string
	w.walkRoots(func(p string) { paths = append(paths, p) })
	w.process(ctx, paths)
}

// walkRoots walks the roots that exist, and watches the nearest existing
// directory above each that does not, so its creation is noticed.
func (w *Watcher) walkRoots(fn func(string)) {
	for _, r := range w.roots {
		if _, err := os.Stat(r.Path); err == nil {
			w.walk(r.Path, r.Format, fn)
			continue
		}
		for dir := filepath.Dir(r.Path); ; dir = filepath.Dir(dir) {
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				w.watch(dir)
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
}

// watch adds a watch on dir, once (none for Once).
func (w *Watcher) watch(dir string) {
	if w.watched[dir] || w.fsw == nil {
		return
	}
	if err := w.fsw.Add(dir); err != nil {
		w.log.Warn("trove watch: cannot watch", "dir", dir, "err", err)
		return
	}
	w.watched[dir] = true
}

// walk adds watches on the directories under root and calls fn with each
// source file (and blob) under it.
func (w *Watcher) walk(root, format string, fn func(string)) {
	start := importer.WalkRoot(root)
	filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // gone, or not there yet: a later scan looks again
		case p == start && d.IsDir():
			w.watch(root)
		case d.IsDir():
			w.watch(p)
		case strings.HasSuffix(p, ".jsonl") || filepath.Base(filepath.Dir(p)) == "blobs":
			if _, ok := w.sources[p]; !ok {
				w.sources[p] = &source{Path: p, Format: format}
			}
			fn(p)
		}
		return nil
	})
}

// formatOf is the format of the root holding p.
func (w *Watcher) formatOf(p string) string {
	for _, r := range w.roots {
		if p == r.Path || strings.HasPrefix(p, r.Path+string(filepath.Separator)) {
			return r.Format
		}
	}
	return ""
}

// process reads the sources at paths: blobs first (a session never lands
// before the blobs it names), then sessions in name order.
func (w *Watcher) process(ctx context.Context, paths []string) {
	sort.Slice(paths, func(i, j int) bool {
		bi, bj := filepath.Base(filepath.Dir(paths[i])) == "blobs", filepath.Base(filepath.Dir(paths[j])) == "blobs"
		if bi != bj {
			return bi
		}
		return paths[i] < paths[j]
	})
	blobDirs := map[string]bool{}
	for _, p := range paths {
		if ctx.Err() != nil {
			return
		}
		if dir := filepath.Dir(p); filepath.Base(dir) == "blobs" {
			if !blobDirs[dir] {
				blobDirs[dir] = true
				if _, err := importer.PutPiBlobs(ctx, w.st, dir); err != nil {
					w.log.Warn("trove watch: blobs", "dir", dir, "err", err)
				}
			}
			continue
		}
		s := w.sources[p]
		if s == nil {
			s = &source{Path: p, Format: w.formatOf(p)}
			w.sources[p] = s
		}
		changed, err := w.step(ctx, s)
		if err != nil {
			w.log.Warn("trove watch: cannot import", "source", p, "err", err)
		}
		if changed {
			w.saved = false
			w.retitle(ctx, p)
		}
		if changed || err != nil {
			w.log.Debug("trove watch: read", "source", p, "from", s.from, "offset", s.Offset, "size", s.Size)
			if w.onEvent != nil {
				w.onEvent(Event{Path: p, From: s.from, Offset: s.Offset, Size: s.Size, Err: err})
			}
		}
	}
	// Parse state is kept for the sessions at work only.
	for _, s := range w.sources {
		if s.f != nil && time.Since(s.Mod) > w.idle {
			s.f = nil
		}
	}
	w.save()
}

// retitle tells the Followers of the Claude Code subagent files of the
// main session file p that it changed: a Task call their titles wait for
// may be in it now.
func (w *Watcher) retitle(ctx context.Context, p string) {
	dir := strings.TrimSuffix(p, ".jsonl") + string(filepath.Separator) + "subagents"
	for sp, s := range w.sources {
		if filepath.Dir(sp) != dir || s.Gone != "" {
			continue
		}
		if s.f == nil {
			// Let go of (idle, or before a restart): its kept state says
			// whether it waits for a title, once.
			if s.titled || s.Offset == 0 {
				continue
			}
			s.titled = true
			f, err := w.resume(ctx, s)
			if err != nil || f == nil {
				continue // read whole at its next change
			}
			s.f = f
		}
		did, err := s.f.Retitle(ctx)
		if err != nil {
			w.log.Warn("trove watch: cannot retitle", "source", sp, "err", err)
			continue
		}
		s.titled = !s.f.Untitled()
		if did {
			if err := w.keepState(s); err != nil {
				w.log.Warn("trove watch: cannot keep state", "source", sp, "err", err)
			}
		}
	}
}

func (w *Watcher) forget(p string) {
	delete(w.sources, p)
	w.dropState(p)
}

// load reads the state file, if any.
func (w *Watcher) load() {
	if w.stateFile == "" {
		return
	}
	defer w.loadStates()
	data, err := os.ReadFile(w.stateFile)
	if err != nil {
		return
	}
	var list []*source
	if err := json.Unmarshal(data, &list); err != nil {
		w.log.Warn("trove watch: unreadable state file, starting afresh", "file", w.stateFile, "err", err)
		return
	}
	for _, s := range list {
		w.sources[s.Path] = s
	}
	w.saved = true
}

// save writes the state file when it changed: to a temporary file renamed
// over it, so a crash leaves the old state or the new (either is safe: a
// stale offset only makes the next run read a source again).
func (w *Watcher) save() {
	if w.stateFile == "" || w.saved {
		return
	}
	list := make([]*source, 0, len(w.sources))
	for _, s := range w.sources {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	data, err := json.Marshal(list)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(w.stateFile), 0o700)
	}
	if err == nil {
		tmp := w.stateFile + ".tmp"
		if err = os.WriteFile(tmp, data, 0o600); err == nil {
			err = os.Rename(tmp, w.stateFile)
		}
	}
	if err != nil {
		w.log.Warn("trove watch: cannot save state", "file", w.stateFile, "err", err)
		return
	}
	w.saved = true
}
