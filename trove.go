package trove

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/backend/crypt"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/catalog"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// Store is one trove root with its layers wired to one blob store. It is
// safe for concurrent use.
type Store struct {
	st       backend.Storage // the encrypted storage over base, or base
	base     backend.Storage
	owned    bool // Close closes base
	cfg      config
	blobs    *cas.Store
	sessions *session.Store
	runs     *runlog.Store

	catMu   sync.Mutex
	cat     *catalog.Catalog
	catTemp string // a temporary catalog directory, removed at Close
}

// Option configures Open and New.
type Option func(*config)

type config struct {
	log        *slog.Logger
	now        func() time.Time
	toolOutput int // bytes; <= 0: the layers' default
	inline     bool
	cas        []cas.Option
	session    []session.Option
	runlog     []runlog.Option
	checkpoint []checkpoint.Option
	open       []open.Option
	catalogDir string
	catalog    []catalog.Option
	key        []byte
	crypt      []crypt.Option
}

// WithLogger sets the logger of every layer (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock sets the clock of every layer: entry and metadata times, run
// record times, checkpoint dates and GC's grace period.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithToolOutputThreshold sets the size in bytes above which a tool output
// (a session's tool result text, a run log's tool.output) goes to the blob
// store as a ref; the default is 64 KiB.
func WithToolOutputThreshold(n int) Option { return func(c *config) { c.toolOutput = n } }

// WithInlineBlobs keeps images and tool outputs inline in session files, as
// pi session v3 readers without a blob directory need. Forks then copy them.
func WithInlineBlobs() Option { return func(c *config) { c.inline = true } }

// WithTimeout bounds each bucket request of a store Open opens (see
// open.WithTimeout; cloud.DefaultTimeout unless given).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.open = append(c.open, open.WithTimeout(d)) }
}

// WithBlobOptions passes options to the blob store (algorithm, grace,
// limits). Its directory stays blobs/: one per root.
func WithBlobOptions(opts ...cas.Option) Option {
	return func(c *config) { c.cas = append(c.cas, opts...) }
}

// WithSessionOptions passes options to the session store.
func WithSessionOptions(opts ...session.Option) Option {
	return func(c *config) { c.session = append(c.session, opts...) }
}

// WithRunlogOptions passes options to the run log store.
func WithRunlogOptions(opts ...runlog.Option) Option {
	return func(c *config) { c.runlog = append(c.runlog, opts...) }
}

// WithCheckpointOptions passes options to every checkpoint manager.
func WithCheckpointOptions(opts ...checkpoint.Option) Option {
	return func(c *config) { c.checkpoint = append(c.checkpoint, opts...) }
}

// Open opens the store at url (see backend/open: file:///path or a path,
// mem://, s3://, gs://, azblob://, memblob://, fileblob:///path; "" is the
// default local root) and wires its layers. Close closes the storage.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	st, err := open.URL(ctx, url, c.open...)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, st, opts...)
	if err != nil {
		st.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New wires the layers on a storage the caller opened; Close leaves st
// open.
func New(ctx context.Context, st backend.Storage, opts ...Option) (*Store, error) {
	if st == nil {
		return nil, errors.New("trove: nil storage")
	}
	cfg := config{log: slog.Default(), now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	base := st
	st, err := unlock(ctx, st, &cfg)
	if err != nil {
		return nil, err
	}
	casOpts := append([]cas.Option{cas.WithLogger(cfg.log), cas.WithClock(cfg.now)}, cfg.cas...)
	casOpts = append(casOpts, cas.WithDir("blobs"))
	blobs, err := cas.Open(ctx, st, casOpts...)
	if err != nil {
		return nil, fmt.Errorf("trove: %w", err)
	}
	storeOpts := []session.Option{session.WithLogger(cfg.log), session.WithClock(cfg.now), session.WithBlobStore(blobs)}
	if cfg.toolOutput > 0 {
		storeOpts = append(storeOpts, session.WithToolResultThreshold(cfg.toolOutput))
	}
	if cfg.inline {
		storeOpts = append(storeOpts, session.WithInlineBlobs())
	}
	sessions, err := session.OpenStore(ctx, st, append(storeOpts, cfg.session...)...)
	if err != nil {
		return nil, fmt.Errorf("trove: %w", err)
	}
	runOpts := []runlog.Option{runlog.WithBlobs(blobs), runlog.WithLogger(cfg.log), runlog.WithClock(cfg.now)}
	if cfg.toolOutput > 0 {
		runOpts = append(runOpts, runlog.WithOutputThreshold(int64(cfg.toolOutput)))
	}
	runs, err := runlog.New(st, append(runOpts, cfg.runlog...)...)
	if err != nil {
		return nil, fmt.Errorf("trove: %w", err)
	}
	return &Store{st: st, base: base, cfg: cfg, blobs: blobs, sessions: sessions, runs: runs}, nil
}

// Storage is the store's backend: on an encrypted store, the plaintext
// view (the ciphertext is in Raw).
func (s *Store) Storage() backend.Storage { return s.st }

// Raw is the storage the store's objects are in: Storage itself on a plain
// store, the ciphertext under it on an encrypted one.
func (s *Store) Raw() backend.Storage { return s.base }

// Blobs is the root's one blob store, shared by every layer.
func (s *Store) Blobs() *cas.Store { return s.blobs }

// Sessions is the session store (create, continue, resume, fork, list...).
func (s *Store) Sessions() *session.Store { return s.sessions }

// Runs is the run log store.
func (s *Store) Runs() *runlog.Store { return s.runs }

// Checkpoints returns a checkpoint manager of the workspace directory dir
// on local disk, keeping its file content in the root's blob store. Close
// it when done.
func (s *Store) Checkpoints(dir string, opts ...checkpoint.Option) (*checkpoint.Manager, error) {
	ws, err := checkpoint.Dir(dir)
	if err != nil {
		return nil, err
	}
	m, err := s.CheckpointsOf(ws, opts...)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return m, nil
}

// CheckpointsOf is Checkpoints for any workspace (checkpoint.FS over an
// afero file system, say).
func (s *Store) CheckpointsOf(ws checkpoint.Workspace, opts ...checkpoint.Option) (*checkpoint.Manager, error) {
	base := []checkpoint.Option{checkpoint.WithLogger(s.cfg.log), checkpoint.WithClock(s.cfg.now)}
	return checkpoint.New(s.st, s.blobs, ws, append(append(base, s.cfg.checkpoint...), opts...)...)
}

// SessionCheckpoints returns a checkpoint manager of dir whose manifests
// live in the session's sidecar, so deleting the session deletes them.
func (s *Store) SessionCheckpoints(h *session.Handle, dir string, opts ...checkpoint.Option) (*checkpoint.Manager, error) {
	return s.Checkpoints(dir, append([]checkpoint.Option{checkpoint.WithDir(h.CheckpointDir())}, opts...)...)
}

// Close closes the catalog, and the storage if Open opened it.
func (s *Store) Close() error {
	err := s.closeCatalog()
	if s.owned {
		if cerr := s.base.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
