package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/checkpoint/statcache"
)

// RewindFilesResult is the session store API's report of a rewind (sdk.d.ts
// RewindFilesResult). Insertions and deletions are line counts of the real
// diff from the workspace to the checkpoint: lines the rewind adds back and
// lines it removes. Binary files and symlinks count as changed files with no
// lines.
type RewindFilesResult struct {
	CanRewind    bool     `json:"canRewind"`
	Error        string   `json:"error,omitempty"`
	FilesChanged []string `json:"filesChanged,omitempty"`
	Insertions   int      `json:"insertions,omitempty"`
	Deletions    int      `json:"deletions,omitempty"`
	// What the rewind does to each changed path: restored (it exists in
	// the workspace and the checkpoint), deleted (created since the
	// checkpoint) or recreated (gone since).
	Restored  []string `json:"restored,omitempty"`
	Deleted   []string `json:"deleted,omitempty"`
	Recreated []string `json:"recreated,omitempty"`
	// Undo names the checkpoint a rewind took of every path it changed,
	// before changing any: rewinding to it undoes the rewind.
	Undo string `json:"undo,omitempty"`
}

// UndoPrefix starts the ids of the checkpoints a rewind takes of what it
// overwrites and deletes (see RewindFilesResult.Undo).
const UndoPrefix = "undo-"

// plan is everything a rewind would do, computed without writing.
type plan struct {
	man     *Manifest
	changes []*change // from the workspace (a) to the checkpoint (b), sorted by path
	// conflict is why the rewind cannot run (a Diff ignores it).
	conflict error

	deletes []string  // workspace paths to remove, any kind
	rmdirs  []string  // directories to remove if empty (named absent)
	unlinks []string  // symlinks in a parent's place (files checkpoints): replaced by directories
	mkdirs  []*Entry  // directories to create
	writes  []*change // files and symlinks to write: b holds the content
	chmods  map[string]fs.FileMode
	cache   *statcache.Cache
	loader  *loader
	touched map[string]bool // directories whose entries change
	temps   []treeEntry     // rewind's temporary files the walk found
	// pre (a real rewind) writes changed files to temporary names while
	// the plan goes on.
	pre *prewriter
}

// Rewind restores the workspace to checkpoint id: every file byte for byte
// and mode for mode, symlinks, files recorded as absent deleted and, for a
// tree checkpoint, files created since deleted (unless ignored or too big to
// have been snapshotted). Only paths that differ are written, each
// atomically; running it again changes nothing.
//
// Everything is checked before the first change: a missing checkpoint, a
// manifest that fails validation, a missing or corrupt blob, or something in
// the way that rewind must not remove gives CanRewind false, an Error
// message, an error wrapping ErrNotFound, ErrCorrupt, ErrUnsafePath or
// ErrConflict, and an untouched workspace. With dryRun it computes the same
// report and writes nothing at all, to the workspace or the store.
func (m *Manager) Rewind(ctx context.Context, id string, dryRun bool) (*RewindFilesResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) (*RewindFilesResult, error) {
		return &RewindFilesResult{CanRewind: false, Error: err.Error()}, err
	}
	defer m.warmBlobs(ctx, !dryRun)()
	man, loaded, err := m.loadForPlan(ctx, id)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	pre := newPrewriter(ctx, m, dryRun)
	// Whatever apply did not take (a failure, a conflict) goes.
	defer pre.discard()
	p, err := m.plan(ctx, man, loaded, pre)
	if err != nil {
		return fail(fmt.Errorf("checkpoint %q: %w", id, err))
	}
	m.cfg.log.Debug("checkpoint: planned", "id", id, "changes", len(p.changes), "took", time.Since(t0))
	if p.conflict != nil {
		return fail(fmt.Errorf("checkpoint %q: %w", id, p.conflict))
	}
	res := &RewindFilesResult{CanRewind: true}
	var changed []string
	for _, c := range p.changes {
		res.FilesChanged = append(res.FilesChanged, c.path)
		res.Insertions += c.ins
		res.Deletions += c.del
		switch {
		case c.a.exists() && c.b.exists():
			res.Restored = append(res.Restored, c.path)
		case c.a.exists():
			res.Deleted = append(res.Deleted, c.path)
		default:
			res.Recreated = append(res.Recreated, c.path)
		}
		if c.a.kind != TypeDir && c.b.kind != TypeDir {
			changed = append(changed, c.path)
		}
	}
	if dryRun {
		return res, nil
	}
	// Directories are no file change, but the undo must put them back as
	// they were too: one the rewind makes (absent now), removes, or
	// changes the mode of.
	for _, e := range p.mkdirs {
		changed = append(changed, e.Path)
	}
	changed = append(changed, p.deletes...)
	for path := range p.chmods {
		changed = append(changed, path)
	}
	// A path under a symlink that stands where a directory was: the link
	// itself is what the rewind replaces, so it is what the undo keeps.
	pc := parentCheck{ws: m.ws}
	for i, path := range changed {
		if state, dir, err := pc.check(path); err == nil && state == parentSymlink {
			changed[i] = dir
		}
	}
	if len(changed) > 0 {
		// Nothing is lost to a rewind: what it overwrites and deletes is
		// kept first, as a checkpoint of its own.
		undo := UndoPrefix + m.cfg.now().UTC().Format("20060102T150405.000000000")
		sort.Strings(changed)
		changed = slices.Compact(changed)
		if _, err := m.createLocked(ctx, undo, changed, createConfig{undo: true}); err != nil {
			return fail(fmt.Errorf("checkpoint %q: recording what the rewind would overwrite: %w", id, err))
		}
		res.Undo = undo
	}
	if err := m.apply(ctx, p); err != nil {
		err = fmt.Errorf("checkpoint %q: rewind stopped part way (run it again to finish): %w", id, err)
		res.Error = err.Error()
		return res, err
	}
	m.removeStaleTemps(p.temps)
	m.cfg.log.Debug("checkpoint: rewound", "id", id, "files", len(res.FilesChanged), "insertions", res.Insertions, "deletions", res.Deletions)
	return res, nil
}

// parentsOf returns the ancestors of p, top down.
func parentsOf(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// likeRef is a digest of files whose algorithm workspace files are hashed
// with; sha256 when there is no file.
func likeRef(files []Entry) string {
	for _, e := range files {
		if e.Exists && e.EffectiveType() == TypeFile {
			return e.Digest
		}
	}
	return "blob:sha256:" + strings.Repeat("0", 64)
}

// manifestGitignore reads .gitignore files as the checkpoint holds them, so
// a rewind judges "created since" by the rules the snapshot used.
func (m *Manager) manifestGitignore(man *Manifest) gitignoreFunc {
	return func(ctx context.Context, dir string, _ []dirEntry) ([]byte, error) {
		name := ".gitignore"
		if dir != "." {
			name = dir + "/.gitignore"
		}
		e := man.Find(name)
		if e == nil || !e.Exists || e.EffectiveType() != TypeFile {
			return nil, nil
		}
		data, err := m.content(ctx, e.Digest, e.Base, e.Delta)
		if err != nil {
			return nil, fmt.Errorf("%w: content of %q (%s): %w", ErrCorrupt, name, e.Digest, err)
		}
		return data, nil
	}
}

// seenGitignores records the .gitignore content a walk used, by directory.
type seenGitignores struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (s *seenGitignores) record(gi gitignoreFunc) gitignoreFunc {
	return func(ctx context.Context, dir string, ents []dirEntry) ([]byte, error) {
		data, err := gi(ctx, dir, ents)
		if err == nil && data != nil {
			s.mu.Lock()
			s.files[dir] = data
			s.mu.Unlock()
		}
		return data, err
	}
}

// sameGitignores reports whether every directory the walk t read has the
// .gitignore in the checkpoint (its entries files, but for directories
// skip says are the same on both sides) that it had in the workspace
// (seen), so the walk's rules were the checkpoint's. A directory the walk
// did not read was ignored by rules that were the same, or is gone: the
// checkpoint's .gitignore there changes nothing.
func (m *Manager) sameGitignores(files []Entry, skip func(string) bool, t tree, seen map[string][]byte) (bool, error) {
	// Only a directory with a .gitignore on either side can differ: those
	// are asked about, not every directory the walk read.
	dirs := make([]string, 0, len(seen)+4)
	for dir := range seen {
		dirs = append(dirs, dir)
	}
	for i := range files {
		if dir, ok := gitignoreDir(files[i].Path); ok {
			dirs = append(dirs, dir)
		}
	}
	// A .gitignore on both sides, the usual case, is compared once.
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	man := Manifest{Files: files}
	for _, dir := range dirs {
		if !t.wasRead(dir) || skip(dir) {
			continue
		}
		name := ".gitignore"
		if dir != "." {
			name = dir + "/.gitignore"
		}
		e := man.Find(name)
		mine := e != nil && e.Exists && e.EffectiveType() == TypeFile
		ws := seen[dir]
		if mine != (ws != nil) {
			return false, nil
		}
		if !mine {
			continue
		}
		sum, err := m.blobs.sumLike(e.Digest, ws)
		if err != nil {
			return false, err
		}
		if sum != e.Digest {
			return false, nil
		}
	}
	return true, nil
}

// gitignoreDir returns the directory of p when p names a .gitignore file.
func gitignoreDir(p string) (string, bool) {
	const name = ".gitignore"
	switch {
	case p == name:
		return ".", true
	case strings.HasSuffix(p, "/"+name):
		return p[:len(p)-len(name)-1], true
	}
	return "", false
}

// apply carries out a plan. Before each change it checks again, with
// lstat, that every parent of the path is a real directory, so a symlink
// put in a directory's place since the plan is never written through.
func (m *Manager) apply(ctx context.Context, p *plan) error {
	sc := safeParents{ws: m.ws, ok: map[string]bool{}}
	touch := func(path string) { p.touched[dirOf(path)] = true }

	// Children before parents.
	sort.Sort(sort.Reverse(sort.StringSlice(p.deletes)))
	for _, d := range p.deletes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := sc.check(d); err != nil {
			return err
		}
		if err := m.ws.remove(d); err != nil && !isAbsent(err) {
			return err
		}
		touch(d)
		sc.forget(d)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(p.rmdirs)))
	for _, d := range p.rmdirs {
		if err := sc.check(d); err != nil {
			return err
		}
		if err := m.ws.remove(d); err == nil {
			touch(d)
			sc.forget(d)
		} else if !isAbsent(err) && !isNotEmpty(err) {
			return err
		}
	}
	for _, u := range p.unlinks {
		if err := sc.check(u); err != nil {
			return err
		}
		st, err := m.ws.lstat(u)
		if err == nil && st.IsSymlink() {
			if err := m.ws.remove(u); err != nil {
				return err
			}
		} else if err != nil && !isAbsent(err) {
			return err
		}
		touch(u)
		sc.forget(u)
	}
	sort.Slice(p.mkdirs, func(i, j int) bool { return p.mkdirs[i].Path < p.mkdirs[j].Path })
	for _, e := range p.mkdirs {
		// Owner-writable until the files inside are written; the exact mode
		// comes with the chmods at the end.
		if err := sc.ensure(e.Path, e.Mode.FileMode()|0o700); err != nil {
			return err
		}
		if e.Mode.FileMode()|0o700 != e.Mode.FileMode() {
			p.chmods[e.Path] = e.Mode.FileMode()
		}
		touch(e.Path)
	}
	// Parents first, one at a time (they share directories), then the files
	// themselves a few at a time: a rewind is bound by fsync latency, and
	// concurrent fsyncs share journal commits.
	for _, c := range p.writes {
		if err := sc.ensure(dirOf(c.path), 0o755); err != nil {
			return err
		}
		touch(c.path)
	}
	p.pre.done()
	err := parallel(ctx, p.writes, 8, func(c *change) error {
		switch c.b.kind {
		case TypeFile:
			if tmp, ok := p.pre.take(c.path); ok {
				return moveInto(m.ws, tmp, c.path)
			}
			// Streamed from the blob store, verified as it goes: a
			// mismatch fails the write and leaves the file as it was.
			rc, err := m.openContent(ctx, c.b.digest, c.b.base, c.b.delta)
			if err != nil {
				return err
			}
			defer rc.Close()
			return writeAtomic(m.ws, c.path, rc, c.b.mode, m.cfg.sync)
		case TypeSymlink:
			tmp := tempName(c.path)
			if err := m.ws.symlink(c.b.target, tmp); err != nil {
				return err
			}
			return moveInto(m.ws, tmp, c.path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	chmods := make([]string, 0, len(p.chmods))
	for path := range p.chmods {
		chmods = append(chmods, path)
	}
	sort.Strings(chmods)
	for _, path := range chmods {
		if err := sc.check(path); err != nil {
			return err
		}
		if err := m.ws.chmod(path, p.chmods[path]); err != nil {
			return err
		}
	}
	if m.cfg.sync {
		dirs := make([]string, 0, len(p.touched))
		for d := range p.touched {
			dirs = append(dirs, d)
		}
		sort.Strings(dirs)
		err := parallel(ctx, dirs, 8, func(d string) error {
			if err := m.ws.syncDir(d); err != nil && !isAbsent(err) {
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The stat cache is left alone: every file written here has an mtime
	// after the rewind started, so a cache entry for it would be racy.
	return nil
}

// parallel runs f on every item, n at a time, and returns the first error.
func parallel[T any](ctx context.Context, items []T, n int, f func(T) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range min(n, len(items)) {
		wg.Go(func() {
			for {
				mu.Lock()
				if first != nil || next == len(items) {
					mu.Unlock()
					return
				}
				it := items[next]
				next++
				mu.Unlock()
				err := ctx.Err()
				if err == nil {
					err = f(it)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

func dirOf(p string) string { return path.Dir(p) }

// safeParents checks, and creates, the directories above workspace paths
// with lstat, remembering what it verified during one apply.
type safeParents struct {
	ws Workspace
	ok map[string]bool // verified real directories
}

// present reports whether every parent of p is a real directory already.
func (s *safeParents) present(p string) (bool, error) {
	missing, notDir, err := s.scan(p)
	return !missing && notDir == "" && err == nil, err
}

// check fails unless every parent of p is a real directory (or missing:
// then there is nothing under it to touch).
func (s *safeParents) check(p string) error {
	_, notDir, err := s.scan(p)
	if err == nil && notDir != "" {
		err = errUnsafe("%q: parent %q is no longer a directory", p, notDir)
	}
	return err
}

// scan lstats the parents of p, top down, up to the first that is missing
// or is not a real directory (notDir).
func (s *safeParents) scan(p string) (missing bool, notDir string, err error) {
	for _, d := range parentsOf(p) {
		if s.ok[d] {
			continue
		}
		st, err := s.ws.lstat(d)
		switch {
		case isAbsent(err):
			return true, "", nil
		case err != nil:
			return false, "", err
		case !st.IsDir():
			return false, d, nil
		}
		s.ok[d] = true
	}
	return false, "", nil
}

// ensure makes dir and its parents real directories, creating missing ones;
// it refuses a symlink or a file in the way.
func (s *safeParents) ensure(dir string, mode fs.FileMode) error {
	if dir == "." {
		return nil
	}
	for _, d := range append(parentsOf(dir), dir) {
		if s.ok[d] {
			continue
		}
		perm := fs.FileMode(0o755)
		if d == dir {
			perm = mode
		}
		st, err := s.ws.lstat(d)
		switch {
		case isAbsent(err):
			if err := s.ws.mkdir(d, perm); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			// mkdir applies the umask; the recorded mode is exact.
			if err := s.ws.chmod(d, perm); err != nil {
				return err
			}
			st, err = s.ws.lstat(d)
			if err != nil {
				return err
			}
			if !st.IsDir() {
				return errUnsafe("%q is not a directory after mkdir", d)
			}
		case err != nil:
			return err
		case !st.IsDir():
			return errUnsafe("%q is in the way of a directory", d)
		}
		s.ok[d] = true
	}
	return nil
}

// forget drops what is known about p and below after it was removed.
func (s *safeParents) forget(p string) {
	delete(s.ok, p)
	prefix := p + "/"
	for d := range s.ok {
		if strings.HasPrefix(d, prefix) {
			delete(s.ok, d)
		}
	}
}
