package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/checkpoint/ignore"
	"github.com/trovekit/trove/checkpoint/manifest"
)

// CreateOption configures one Create or CreateTree.
type CreateOption func(*createConfig)

type createConfig struct {
	// undo: the checkpoint a rewind takes of what it will overwrite; the
	// rewind rewrites those paths next, so their stat cache entries would
	// be stale at once and the cache is not saved.
	undo             bool
	session, message string
	note             string
	ignore           []string
	noDefaults       bool
	maxSize          int64
}

// WithSession links the checkpoint to a session id.
func WithSession(id string) CreateOption { return func(c *createConfig) { c.session = id } }

// WithMessage links the checkpoint to the user message it was taken for.
func WithMessage(id string) CreateOption { return func(c *createConfig) { c.message = id } }

// WithNote records what the checkpoint was taken before, such as the
// tool call about to change the workspace.
func WithNote(note string) CreateOption { return func(c *createConfig) { c.note = note } }

// WithIgnore adds .gitignore-syntax patterns, relative to the workspace
// root, that win over the defaults and every .gitignore (CreateTree only).
func WithIgnore(patterns ...string) CreateOption {
	return func(c *createConfig) { c.ignore = append(c.ignore, patterns...) }
}

// DefaultIgnores returns the patterns a tree snapshot skips unless told
// otherwise (ignore.Defaults): version control metadata, dependency caches
// and build outputs, which agents do not edit and which are large.
func DefaultIgnores() []string { return ignore.Defaults() }

// WithoutDefaultIgnores drops DefaultIgnores (CreateTree only).
func WithoutDefaultIgnores() CreateOption { return func(c *createConfig) { c.noDefaults = true } }

// WithMaxFileSize sets the per-file cap of CreateTree (default
// DefaultMaxFileSize); bigger files are listed as skipped. n <= 0: no cap.
func WithMaxFileSize(n int64) CreateOption { return func(c *createConfig) { c.maxSize = n } }

// Create snapshots the named paths (slash-separated, relative to the
// workspace root) as checkpoint id, replacing any checkpoint of that id. A
// path that does not exist is recorded as absent, so a rewind deletes what
// was created there later. A directory is an error (ErrIsDir), as is a path
// under a symlinked directory (ErrUnsafePath): name the real path instead.
func (m *Manager) Create(ctx context.Context, id string, paths []string, opts ...CreateOption) (*Manifest, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	var cc createConfig
	for _, o := range opts {
		o(&cc)
	}
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		if err := manifest.ValidPath(p); err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		clean = append(clean, p)
	}
	sort.Strings(clean)
	clean = slices.Compact(clean)

	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createLocked(ctx, id, clean, cc)
}

// createLocked is Create of clean, sorted paths, under m.mu.
func (m *Manager) createLocked(ctx context.Context, id string, clean []string, cc createConfig) (*Manifest, error) {
	start := m.cfg.now()
	man := m.newManifest(id, KindFiles, cc, start)
	var files []int // indexes into man.Files of regular files
	var sts []fileStat
	pc := parentCheck{ws: m.ws}
	for _, p := range clean {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		state, parent, err := pc.check(p)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		if state == parentSymlink {
			return nil, fmt.Errorf("checkpoint %q: %w: %q: parent %q is a symlink", id, ErrUnsafePath, p, parent)
		}
		e := Entry{Path: p}
		var st fileStat
		if state == parentsOK {
			st, err = m.ws.lstat(p)
			switch {
			case isAbsent(err):
			case err != nil:
				return nil, fmt.Errorf("checkpoint %q: %w", id, err)
			case st.IsDir() && cc.undo:
				// A rewind's undo keeps a directory it makes, removes or
				// changes the mode of as it is: there, with its mode.
				e = Entry{Path: p, Exists: true, Type: TypeDir, Mode: Mode(st.Mode.Perm())}
			case st.IsDir():
				return nil, fmt.Errorf("checkpoint %q: %q: %w", id, p, ErrIsDir)
			case st.IsSymlink():
				target, err := m.ws.readlink(p)
				if err != nil {
					return nil, fmt.Errorf("checkpoint %q: %w", id, err)
				}
				if !utf8.ValidString(target) {
					return nil, fmt.Errorf("checkpoint %q: %w: symlink %q has a target that is not UTF-8", id, backend.ErrNotSupported, p)
				}
				e = Entry{Path: p, Exists: true, Type: TypeSymlink, Target: target}
			case st.IsRegular():
				e = fileEntry(p, st)
				files = append(files, len(man.Files))
			default:
				return nil, fmt.Errorf("checkpoint %q: %q is not a file, symlink or directory: %w", id, p, backend.ErrNotSupported)
			}
		}
		man.Files = append(man.Files, e)
		sts = append(sts, st)
	}
	batch := m.blobs.newBatch()
	if err := m.storeFiles(ctx, batch, man, files, sts, -1, start.UnixNano(), nil, m.lastKept(ctx)); err != nil {
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	if cc.undo {
		m.cache.CompactAdded() // an agent may take thousands of these in one process
	}
	err := m.writeManifest(ctx, batch, man, manifestWrite{save: !cc.undo, start: start.UnixNano()})
	if err == nil {
		m.autoPack(ctx)
	}
	return man, err
}

// CreateTree snapshots the whole workspace as checkpoint id, minus what the
// ignore rules exclude: DefaultIgnores (unless WithoutDefaultIgnores), every
// .gitignore in the tree, then WithIgnore patterns. Files over the size cap
// and names a manifest cannot hold are listed in Manifest.Skipped. Only
// files whose stat changed since the last snapshot are read.
func (m *Manager) CreateTree(ctx context.Context, id string, opts ...CreateOption) (*Manifest, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	cc := createConfig{maxSize: DefaultMaxFileSize}
	for _, o := range opts {
		o(&cc)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The batch before the indexes load: it takes their loading for its
	// own refresh (cas.Batch), not listing them again for its first blob.
	batch := m.blobs.newBatch()
	defer m.warmBlobs(ctx, true)()
	start := m.cfg.now()
	man := m.newManifest(id, KindTree, cc, start)
	if !cc.noDefaults {
		man.DefaultIgnore = DefaultIgnores()
	}
	man.Ignore = cc.ignore
	if cc.maxSize > 0 {
		man.MaxFileSize = cc.maxSize
	}
	limit := man.MaxFileSize
	if limit == 0 {
		limit = -1
	}

	pf := m.newPrefetcher(ctx, batch, limit)
	tree, err := m.walkTree(ctx, baseIgnorer(man), m.workspaceGitignore, walkOptions{dirty: true, found: pf.found, byDir: true})
	if err != nil {
		pf.wait()
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	last := m.keptHeader(ctx)
	lastKept := last != nil
	ru := m.newReuser(man, &tree, last)
	m.cfg.log.Debug("checkpoint: walked", "id", id, "entries", tree.size(), "took", time.Since(start))
	m.removeStaleTemps(tree.temps)
	man.Skipped = tree.skipped
	files := make([]int, 0, tree.size())
	sts := make([]fileStat, 0, tree.size()) // parallel to man.Files
	man.Files = make([]Entry, 0, tree.size())
	for te := range tree.ordered() {
		st := te.st
		switch {
		case st.IsDir():
			man.Files = append(man.Files, Entry{Path: te.path, Exists: true, Type: TypeDir, Mode: Mode(st.Mode.Perm())})
			sts = append(sts, st)
		case st.IsSymlink():
			target, err := m.ws.readlink(te.path)
			if isAbsent(err) {
				continue // gone since the walk
			}
			if err != nil {
				pf.wait()
				batch.discard()
				return nil, fmt.Errorf("checkpoint %q: %w", id, err)
			}
			if !utf8.ValidString(target) {
				// JSON cannot carry it byte for byte.
				man.Skipped = append(man.Skipped, Skipped{Path: te.path, Reason: "target"})
				continue
			}
			man.Files = append(man.Files, Entry{Path: te.path, Exists: true, Type: TypeSymlink, Target: target})
			sts = append(sts, st)
		case st.IsRegular():
			if limit >= 0 && st.Size > limit {
				man.Skipped = append(man.Skipped, Skipped{Path: te.path, Size: st.Size, Reason: "size"})
				continue
			}
			files = append(files, len(man.Files))
			man.Files = append(man.Files, fileEntry(te.path, st))
			sts = append(sts, st)
		default:
			man.Skipped = append(man.Skipped, Skipped{Path: te.path, Reason: "type"})
		}
	}
	// The prefetch stores the files the walk found last while the
	// entries are listed (1.2 ms on the cpbench tree): it was waited for
	// first, 0.3-1.7 ms after the walk.
	prefetched := pf.wait()
	if err := m.storeFiles(ctx, batch, man, files, sts, limit, start.UnixNano(), prefetched, lastKept); err != nil {
		batch.discard()
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	m.cfg.log.Debug("checkpoint: stored", "id", id, "took", time.Since(start))
	// Drop files that vanished or grew past the cap while we read.
	kept := man.Files[:0]
	for _, e := range man.Files {
		if e.Exists {
			kept = append(kept, e)
		}
	}
	man.Files = kept
	sortSkipped(man.Skipped)
	if err := m.writeManifest(ctx, batch, man, manifestWrite{keep: true, save: true, start: start.UnixNano(), ru: ru, listings: tree.listings, kept: &lastKept}); err != nil {
		return man, err
	}
	m.autoPack(ctx)
	return man, nil
}

func (m *Manager) newManifest(id, kind string, cc createConfig, start time.Time) *Manifest {
	return &Manifest{
		Version: ManifestVersion, ID: id, Kind: kind, CreatedAt: start.UTC(),
		Session: cc.session, Message: cc.message, Note: cc.note, Root: m.ws.abs(), Files: []Entry{},
	}
}

// fileEntry records no mtime: a rewind does not restore it, and with it a
// directory whose files were rewound (same bytes, new mtimes) would get a
// new tree object instead of sharing the one it had.
func fileEntry(p string, st fileStat) Entry {
	return Entry{Path: p, Exists: true, Size: st.Size, Mode: Mode(st.Mode.Perm())}
}

func sortSkipped(s []Skipped) {
	sort.Slice(s, func(i, j int) bool { return s[i].Path < s[j].Path })
}
