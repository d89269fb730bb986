package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint/manifest"
	"github.com/trovekit/trove/checkpoint/statcache"
)

// DefaultMaxFileSize is the per-file cap of tree snapshots; bigger files are
// listed in the manifest as skipped.
const DefaultMaxFileSize = 16 << 20

// blobStore is what checkpoints need of the cas store.
type blobStore interface {
	newBatch() blobBatch
	// get returns the blob's bytes, verified against ref.
	get(ctx context.Context, ref string) ([]byte, error)
	// open streams the blob; its final Read reports a mismatch with ref.
	open(ctx context.Context, ref string) (io.ReadCloser, error)
	// has reports whether ref is stored, without reading it.
	has(ctx context.Context, ref string) (bool, error)
	// sumLike returns the ref data would have under like's algorithm.
	sumLike(like string, data []byte) (string, error)
	// sumLikeReader is sumLike of a stream.
	sumLikeReader(like string, r io.Reader) (string, error)
}

// blobBatch puts many blobs as packs. put is safe for concurrent use and
// costs nothing for content already stored; flush makes everything put so
// far durable.
type blobBatch interface {
	// put stores data; it does not keep data once it returns.
	put(ctx context.Context, data []byte) (string, error)
	// putReader stores a stream, returning its ref and length.
	putReader(ctx context.Context, r io.Reader) (string, int64, error)
	flush(ctx context.Context) error
	discard()
}

// Manager snapshots and rewinds one workspace, keeping manifests and the
// stat cache in a trove store and file content in its cas store. It is safe
// for concurrent use; operations on one Manager run one at a time.
type Manager struct {
	store backend.Storage
	blobs blobStore
	ws    Workspace
	cfg   config

	mu    sync.Mutex       // one operation at a time: the stat cache is shared
	cache *statcache.Cache // loaded on first use
	slots slotPool         // encodeDelta's tables, reused
}

type config struct {
	dir       string // store directory holding <id>.json
	cacheName string // store path of the stat cache
	log       *slog.Logger
	workers   int
	racy      time.Duration // 0: by timestamp granularity (see racy)
	now       func() time.Time
	sync      bool
	mapCache  bool // see WithMappedStatCache
	rawStats  bool // see WithRawStats
	err       error
}

// Option configures a Manager.
type Option func(*config)

// WithDir sets the store directory of the manifests, such as a session's
// sidecar "sessions/--<cwd>--/<ts>_<id>/checkpoints". The default is
// "checkpoints/<WorkspaceKey(workspace dir)>".
func WithDir(dir string) Option {
	return func(c *config) {
		if err := backend.ValidPath(dir); err != nil {
			c.err = fmt.Errorf("checkpoint: WithDir(%q): %w", dir, err)
			return
		}
		c.dir = dir
	}
}

// WithStatCache sets the store path of the stat cache; the default is
// "stat.cache" in the manifest directory. Several managers of one
// workspace may share one.
func WithStatCache(name string) Option {
	return func(c *config) {
		if err := backend.ValidPath(name); err != nil {
			c.err = fmt.Errorf("checkpoint: WithStatCache(%q): %w", name, err)
			return
		}
		c.cacheName = name
	}
}

// WithMappedStatCache has the stat cache mapped into memory, where the
// store can (a local disk), instead of read into a buffer: for a process
// that ends soon after its command, as the command line's do. Reading the
// 1 MB cache of a 6,640-file tree into fresh memory was a tenth of a dry
// run's CPU. A mapping that decoded is never released (the cache's names
// are shared by the walks and results built from it), so a long-lived
// process that opens managers again and again should not ask for it. Writers never
// change a cache file in place (see writeCache): a mapping keeps the
// bytes it was made with.
func WithMappedStatCache() Option {
	return func(c *config) { c.mapCache = true }
}

// WithRawStats has a directory workspace's walk make its stats as raw
// system calls while they prove quick (see rawEvery): a tenth less CPU a
// stat, for a process that runs one command and ends. A raw call keeps
// its thread's scheduler slot while it waits, and a garbage collection
// waits for it: a stat that never returns (a dead network or FUSE mount
// in the workspace) would stall the whole process, not only its walk, and
// with two such calls no timer of the process fires. Not for a long-lived
// process, nor for one that must keep a deadline (the hooks).
func WithRawStats() Option {
	return func(c *config) { c.rawStats = true }
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithWorkers sets how many files are read and stored at once (default:
// GOMAXPROCS, at least 2).
func WithWorkers(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.workers = n
		}
	}
}

// WithRacyWindow overrides how close to a snapshot a file's mtime must be
// for its cached stat to be distrusted (default: 100ms for sub-second
// timestamps, 2s for whole-second ones). Raise it on network file systems
// whose clock may differ from this machine's.
func WithRacyWindow(d time.Duration) Option {
	return func(c *config) { c.racy = d }
}

// WithClock sets the clock that dates checkpoints and snapshot starts.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithSync says whether rewind fsyncs the files and directories it writes
// (default true: a rewound file survives a crash whole or not at all).
func WithSync(on bool) Option {
	return func(c *config) { c.sync = on }
}

// New returns a Manager of the workspace ws that keeps manifests and the
// stat cache in store and file content in blobs, the root's one blob store
// (so content a session also holds is stored once). A *cas.Store packs the
// many small files of a snapshot; any other cas.Blobs stores each alone.
func New(store backend.Storage, blobs cas.Blobs, ws Workspace, opts ...Option) (*Manager, error) {
	if s, ok := blobs.(*cas.Store); blobs == nil || ok && s == nil {
		return nil, errors.New("checkpoint: New needs a cas store")
	}
	return newManager(store, casBlobs{blobs}, ws, opts...)
}

// OpenDir is New for the directory dir, with the cas store of store opened
// with its defaults: what the command line needs.
func OpenDir(ctx context.Context, store backend.Storage, dir string, opts ...Option) (*Manager, error) {
	blobs, err := cas.Open(ctx, store)
	if err != nil {
		return nil, err
	}
	ws, err := Dir(dir)
	if err != nil {
		return nil, err
	}
	m, err := New(store, blobs, ws, opts...)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return m, nil
}

func newManager(store backend.Storage, blobs blobStore, ws Workspace, opts ...Option) (*Manager, error) {
	if store == nil || blobs == nil || ws == nil {
		return nil, errors.New("checkpoint: New needs a store, a blob store and a workspace")
	}
	cfg := config{
		log:     slog.Default(),
		workers: max(2, runtime.GOMAXPROCS(0)),
		now:     time.Now,
		sync:    true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if cfg.dir == "" {
		key := "--workspace--"
		if abs := ws.abs(); abs != "" {
			key = WorkspaceKey(abs)
		}
		cfg.dir = "checkpoints/" + key
	}
	if cfg.cacheName == "" {
		// Not "statcache.bin": versions before WithMappedStatCache write
		// that file in place, which a mapped reader must never meet (a
		// cut file faults it). Theirs is left to them.
		cfg.cacheName = cfg.dir + "/stat.cache"
	}
	if d, ok := ws.(*dirWorkspace); ok && cfg.rawStats {
		d.rawOK.Store(true)
	}
	return &Manager{store: store, blobs: blobs, ws: ws, cfg: cfg}, nil
}

// Dir returns the store directory holding this manager's manifests.
func (m *Manager) Dir() string { return m.cfg.dir }

// Close closes the workspace.
func (m *Manager) Close() error { return m.ws.Close() }

func (m *Manager) manifestName(id string) string { return m.cfg.dir + "/" + id + ".json" }

// Load reads and validates the manifest of checkpoint id. A missing one is
// ErrNotFound; one that does not parse or validate is ErrCorrupt.
func (m *Manager) Load(ctx context.Context, id string) (*Manifest, error) {
	return m.load(ctx, id, nil)
}

// loadCached is Load taking the trees the stat cache holds from cache,
// under m.mu.
func (m *Manager) loadCached(ctx context.Context, id string) (*Manifest, error) {
	return m.load(ctx, id, m.loadCache(ctx).Tree)
}

func (m *Manager) load(ctx context.Context, id string, known treeSource) (*Manifest, error) {
	man, err := m.loadHeader(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := m.loadBody(ctx, man, known); err != nil {
		return nil, err
	}
	return man, nil
}

// loadBody fills in the entries of a manifest loadHeader read (from its
// trees, version 2) and validates it.
func (m *Manager) loadBody(ctx context.Context, man *Manifest, known treeSource) error {
	t0 := time.Now()
	if man.Version == ManifestVersion {
		var err error
		var trees []string
		if man.Files, trees, err = loadTrees(ctx, m.blobs, man.Tree, known); err != nil {
			return fmt.Errorf("checkpoint %q: %w", man.ID, err)
		}
		man.SetTrees(trees)
		man.SetDecodedFromTrees()
		if man.Entries != 0 && man.Entries != len(man.Files) {
			return fmt.Errorf("checkpoint %q: %w: the manifest counts %d entries, its trees hold %d", man.ID, ErrCorrupt, man.Entries, len(man.Files))
		}
	}
	if err := man.Validate(man.ID); err != nil {
		return fmt.Errorf("checkpoint %q: %w", man.ID, err)
	}
	m.cfg.log.Debug("checkpoint: manifest loaded", "id", man.ID, "trees", len(man.TreeRefs()), "took", time.Since(t0))
	return nil
}

// loadForPlan reads the header of checkpoint id and returns it with a
// function that waits for its entries, loaded in the background meanwhile
// (from the stat cache's trees, under m.mu): a plan walks the workspace
// while they load.
func (m *Manager) loadForPlan(ctx context.Context, id string) (*Manifest, func() error, error) {
	man, err := m.loadHeader(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if man.ID != id {
		return nil, nil, fmt.Errorf("checkpoint %q: %w: manifest names checkpoint %q", id, ErrCorrupt, manifest.Clip(man.ID))
	}
	known := m.loadCache(ctx).Tree
	if last := m.cache.Last.Tree; last != "" && m.cache.TreeRef(".") == last && man.Kind == KindTree && man.Version == ManifestVersion {
		// The plan will most likely need only the trees that differ from
		// the last snapshot's (see changedEntries): all are loaded only
		// when asked.
		return man, sync.OnceValue(func() error { return m.loadBody(ctx, man, known) }), nil
	}
	done := make(chan error, 1)
	go func() { done <- m.loadBody(ctx, man, known) }()
	return man, sync.OnceValue(func() error { return <-done }), nil
}

// warmBlobs has a cas store load its pack indexes in the background (a
// process's first lookup reads them all) while the caller reads the stat
// cache and walks the workspace, and, when the caller will put blobs
// (puts), ready an encoder (see cas.Store.Warm); the returned function
// waits for the indexes.
func (m *Manager) warmBlobs(ctx context.Context, puts bool) func() {
	cb, _ := m.blobs.(casBlobs)
	s, ok := cb.s.(*cas.Store)
	if !ok {
		return func() {}
	}
	if puts {
		s.Warm()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.LoadIndexes(ctx) // a failure shows again where a blob is read
	}()
	return func() { <-done }
}

// autoPack merges the blob store's small packs once a snapshot leaves too
// many (cas.Store.AutoPack): one per snapshot otherwise, and every command
// lists them all. The snapshot is durable already: a failure is logged,
// and the next snapshot tries again.
func (m *Manager) autoPack(ctx context.Context) {
	cb, _ := m.blobs.(casBlobs)
	if s, ok := cb.s.(*cas.Store); ok {
		if _, err := s.AutoPack(ctx); err != nil {
			m.cfg.log.Warn("checkpoint: merging small packs", "err", err)
		}
	}
}

// loadHeader reads the manifest file of id: all of a version 1 manifest,
// the header and tree ref of a version 2 one.
func (m *Manager) loadHeader(ctx context.Context, id string) (*Manifest, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	data, err := m.store.ReadFile(ctx, m.manifestName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	var man Manifest
	if err := man.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w: %v", id, ErrCorrupt, err)
	}
	if man.Version == ManifestVersion && !manifest.ValidRef(man.Tree) {
		return nil, fmt.Errorf("checkpoint %q: %w: bad tree %q", id, ErrCorrupt, manifest.Clip(man.Tree))
	}
	return &man, nil
}

// LoadHeader reads checkpoint id's manifest without the entries its trees
// hold: what a listing shows (Entries counts them, where recorded) at the
// cost of one small file, not of every tree. Files is nil for a version 2
// manifest; Load reads them.
func (m *Manager) LoadHeader(ctx context.Context, id string) (*Manifest, error) {
	man, err := m.loadHeader(ctx, id)
	if err != nil {
		return nil, err
	}
	if man.Version != ManifestVersion {
		// Version 1 holds its entries inline: validated as Load does.
		if err := m.loadBody(ctx, man, nil); err != nil {
			return nil, err
		}
	} else if err := man.Validate(id); err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	return man, nil
}

// Info summarises a stored checkpoint.
type Info struct {
	ID      string
	Size    int64 // bytes of the manifest
	ModTime time.Time
}

// List returns the checkpoints in the manifest directory, sorted by id.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	var out []Info
	for fi, err := range m.store.List(ctx, m.cfg.dir) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(fi.Base(), ".json")
		if fi.IsDir || !ok || ValidID(id) != nil {
			continue
		}
		out = append(out, Info{ID: id, Size: fi.Size, ModTime: fi.ModTime})
	}
	return out, nil
}

// Delete removes checkpoint id's manifest. Its blobs stay until a cas GC
// finds no manifest using them (see Refs).
func (m *Manager) Delete(ctx context.Context, id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	err := m.store.Unlink(ctx, m.manifestName(id))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint %q: %w", id, ErrNotFound)
	}
	return err
}

// Refs yields every blob ref the stored checkpoints use: the roots a cas
// GC must keep. A manifest that does not load is an error, not skipped, so a
// GC never sweeps blobs of a checkpoint it could not read.
func (m *Manager) Refs(ctx context.Context) ([]string, error) {
	infos, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	var out []string
	for _, in := range infos {
		man, err := m.Load(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range man.Refs() {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// loadCache returns the stat cache, reading it on first use. A damaged or
// unreadable cache is replaced by an empty one: it only saves time.
func (m *Manager) loadCache(ctx context.Context) *statcache.Cache {
	if m.cache != nil {
		return m.cache
	}
	t0 := time.Now()
	defer func() {
		m.cfg.log.Debug("checkpoint: stat cache loaded", "directories", m.cache.NumDirs(), "took", time.Since(t0))
	}()
	data, release, err := m.readCacheFile(ctx, m.cfg.cacheName)
	if errors.Is(err, fs.ErrNotExist) && m.cacheBeingWritten(ctx) {
		// A writer replaces the file: between its unlink and its
		// create there is none.
		data, release, err = m.rereadCacheFile(ctx)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m.cache = statcache.New()
	case err != nil:
		m.cfg.log.Warn("checkpoint: stat cache unreadable, rehashing", "name", m.cfg.cacheName, "err", err)
		m.cache = statcache.New()
	default:
		c, err := decodeCache(data, release)
		if errors.Is(err, statcache.ErrDamaged) {
			// Most likely read while another snapshot wrote it: read it
			// again once that writer is done.
			c, err = m.rereadCache(ctx, err)
		}
		switch {
		case errors.Is(err, statcache.ErrVersion):
			m.cfg.log.Info("checkpoint: stat cache written by another version of trove, rebuilding", "name", m.cfg.cacheName)
			c = statcache.New()
		case err != nil:
			m.cfg.log.Warn("checkpoint: stat cache damaged, rehashing", "name", m.cfg.cacheName, "err", err)
			c = statcache.New()
		default:
			m.overlayCache(ctx, c)
		}
		m.cache = c
	}
	return m.cache
}

// sideName is the stat cache's sidecar (statcache.Cache.Overlay).
func (m *Manager) sideName() string { return m.cfg.cacheName + ".side" }

// overlayCache reads the sidecar, if any, over c. One of another base
// (written before the cache was written whole, or read as a writer
// replaced them) or damaged is left: c is then as the base has it, older
// but as true.
func (m *Manager) overlayCache(ctx context.Context, c *statcache.Cache) {
	data, release, err := m.readCacheFile(ctx, m.sideName())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			m.cfg.log.Debug("checkpoint: stat cache sidecar unreadable", "name", m.sideName(), "err", err)
		}
		return
	}
	if err := c.Overlay(data); err != nil {
		_ = release()
		m.cfg.log.Debug("checkpoint: stat cache sidecar left", "name", m.sideName(), "err", err)
	}
}

// cacheLockName is the lock writers of the stat cache take (writeCache).
func (m *Manager) cacheLockName() string { return m.cfg.cacheName + ".lock" }

// readCacheFile returns the stat cache's bytes, mapped with
// WithMappedStatCache where the store can, else read, and what unmaps
// them: only for a copy that did not decode (see WithMappedStatCache).
func (m *Manager) readCacheFile(ctx context.Context, name string) ([]byte, func() error, error) {
	if !m.cfg.mapCache {
		data, err := m.store.ReadFile(ctx, name)
		return data, func() error { return nil }, err
	}
	return backend.MapFile(ctx, m.store, name)
}

// decodeCache decodes the stat cache's bytes; nothing is kept of a copy
// that does not decode, so its mapping goes.
func decodeCache(data []byte, release func() error) (*statcache.Cache, error) {
	c, err := statcache.Decode(data)
	if err != nil {
		_ = release()
	}
	return c, err
}

// cacheBeingWritten reports whether a writer holds the stat cache's lock
// (asked only when its lock file is there: a read creates nothing).
func (m *Manager) cacheBeingWritten(ctx context.Context) bool {
	if _, err := m.store.Stat(ctx, m.cacheLockName()); err != nil {
		return false
	}
	u, err := m.store.Lock(ctx, m.cacheLockName(), false)
	if err == nil {
		_ = u.Unlock()
	}
	return errors.Is(err, backend.ErrLocked)
}

// rereadCacheFile reads the stat cache's file again under its writers'
// lock, once the writer holding it is done: a read that overlapped a
// write found parts of two copies, or none. Without locks, or when the
// lock cannot be had soon, it fails.
func (m *Manager) rereadCacheFile(ctx context.Context) ([]byte, func() error, error) {
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	u, err := m.store.Lock(lctx, m.cacheLockName(), true)
	if err != nil {
		return nil, nil, err
	}
	defer u.Unlock()
	return m.readCacheFile(ctx, m.cfg.cacheName)
}

// rereadCache reads the stat cache again under its writers' lock, after a
// read found it damaged (first). Without locks, or when the lock cannot
// be had soon, first stands.
func (m *Manager) rereadCache(ctx context.Context, first error) (*statcache.Cache, error) {
	data, release, err := m.rereadCacheFile(ctx)
	if err != nil {
		return nil, first
	}
	return decodeCache(data, release)
}

// writeCache writes the stat cache. It is advisory and carries its own
// checksum, so it is written in place without fsync: a torn or lost copy
// is detected on load and only costs a rehash. It is written over the
// old copy (Overwrite), not emptied first: on ext4 a file emptied at open
// is written out at its close, and the fsyncs of the snapshot it is
// written beside waited for its 1.1 MB (cpbench tree).
//
// encode writes the file in parts (see statcache.Cache.WriteParts).
//
// Snapshots of one workspace at once (parallel tool calls, each with its
// hook) take turns at cacheLockName: a second writer leaves the file to
// the first (whose cache serves as well: an entry it lacks costs a hash),
// instead of writing over it at the same time and leaving a damaged copy
// that makes the next snapshot rehash the whole tree.
//
// With side, encode writes the sidecar (statcache.Cache.Overlay), which
// is replaced the same way; else the cache, and a sidecar of the one
// before is removed first.
func (m *Manager) writeCache(ctx context.Context, side bool, encode func(io.Writer) error) error {
	u, err := m.store.Lock(ctx, m.cacheLockName(), false)
	switch {
	case errors.Is(err, backend.ErrLocked):
		m.cfg.log.Debug("checkpoint: stat cache left to the snapshot writing it", "name", m.cfg.cacheName)
		return err
	case err == nil:
		defer u.Unlock()
	case !errors.Is(err, backend.ErrNotSupported):
		m.cfg.log.Debug("checkpoint: stat cache written without its lock", "name", m.cfg.cacheName, "err", err)
	}
	names := []string{m.sideName(), m.cfg.cacheName}
	if side {
		names = names[:1]
	}
	// A new file, not the old one written over: a reader may have the
	// old one mapped (WithMappedStatCache), and it keeps those bytes.
	// Unlinked, not renamed over: ext4 writes a file renamed over another
	// out at once, which the snapshot's fsyncs would wait for. A reader
	// that finds no file meanwhile waits for the lock (loadCache).
	for _, name := range names {
		if err := m.store.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.cfg.log.Warn("checkpoint: stat cache not saved", "name", name, "err", err)
			return err
		}
	}
	name := names[len(names)-1]
	w, err := m.store.OpenWriter(ctx, name, backend.WriterOptions{Truncate: true, Overwrite: true})
	if err == nil {
		err = encode(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		m.cfg.log.Warn("checkpoint: stat cache not saved", "name", name, "err", err)
	}
	return err
}
