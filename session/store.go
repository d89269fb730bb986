package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/session/tree"
)

// Sidecar files, in the directory named as the session file without
// ".jsonl" (DESIGN section 9).
const (
	MetaFile       = "meta.json"
	TranscriptFile = "transcript.jsonl"
	CheckpointsDir = "checkpoints"
	lockFile       = "writer.lock"  // flock, where the backend has locks
	leaseFile      = "writer.lease" // exclusive file, where it has none
)

// ErrLocked is returned when another writer (another process, or another
// handle in this one) has the session open for writing. It also matches
// backend.ErrLocked.
var ErrLocked = fmt.Errorf("session is being written by another writer: %w", backend.ErrLocked)

// Sessions is what an agent loop calls: Store persists, NoopStore (the session store API:
// persistSession: false) keeps everything in memory and touches no storage.
type Sessions interface {
	Create(ctx context.Context, o CreateOptions) (*Handle, error)
	Load(ctx context.Context, ref string) (*Handle, error)
	Resume(ctx context.Context, ref string) (*Handle, error)
	Continue(ctx context.Context, cwd string) (*Handle, error)
	ResumeAt(ctx context.Context, ref, messageID string) (*Handle, error)
	Fork(ctx context.Context, ref string, o ForkOptions) (*Handle, error)
	Delete(ctx context.Context, ref string) error
	List(ctx context.Context, cwd string) iter.Seq2[Metadata, error]
	UpdateMetadata(ctx context.Context, ref string, update func(*Metadata)) error
	LoadMessages(ctx context.Context, ref string) ([]*tree.Entry, error)
	LoadMessagesUpTo(ctx context.Context, ref, messageID string) ([]*tree.Entry, error)
	Transcript(ctx context.Context, ref string) iter.Seq2[json.RawMessage, error]
}

// CreateOptions describe a new session; empty fields get defaults (a uuid
// v7 id, the current time).
type CreateOptions struct {
	ID        string
	Cwd       string
	Model     string
	AgentName string
	Title     string
	ParentID  string
}

// ForkOptions choose what a fork copies: the whole conversation path (the
// zero value), the path up to and including the entry At, or only the last
// Last messages of it (as agent JSONL forks).
type ForkOptions struct {
	At   string
	Last int
	ID   string // the new session's id; a uuid v7 when empty
}

// Option configures a Store.
type Option func(*config)

type config struct {
	session   []tree.Option
	blobs     cas.Blobs
	toolMax   int
	log       *slog.Logger
	now       func() time.Time
	queue     int
	syncEvery time.Duration
	wait      bool
	inline    bool
	leaseTTL  time.Duration
	leaseSkew time.Duration
	host      string
	mono      func() time.Time // a lease's validity; tests step it
	noRenew   bool             // tests renew by hand
}

// WithSessionOptions passes file-level options (tree.WithReport,
// tree.WithRandom, ...) to every session the store opens.
func WithSessionOptions(opts ...tree.Option) Option {
	return func(c *config) { c.session = append(c.session, opts...) }
}

// WithBlobStore sets where images and long tool outputs go, instead of the
// root's own blob store.
func WithBlobStore(b cas.Blobs) Option { return func(c *config) { c.blobs = b } }

// WithToolResultThreshold sets the tool-result text size (bytes) above
// which it goes to the blob store (see tree.WithToolResultThreshold).
func WithToolResultThreshold(n int) Option { return func(c *config) { c.toolMax = n } }

// WithInlineBlobs keeps images and long tool outputs inline in the session
// files instead of in the root's blob store (what pi session v3 readers without
// a blob directory need). Sessions then grow with every image, and forks
// copy them.
func WithInlineBlobs() Option { return func(c *config) { c.inline = true } }

// WithLogger sets the logger for background trouble.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithClock sets the clock for metadata times.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithSyncInterval bounds how long an append may wait for its write and
// sync when no Flush asks for one (default 1 s): appends are held in
// memory and written together (one write, one sync) at a Flush, at 256 KiB
// or when the interval runs out, so a crash loses none older than the
// interval, and none a Flush returned for. 0 writes and syncs every
// append as the writer takes it.
func WithSyncInterval(d time.Duration) Option {
	return func(c *config) { c.syncEvery = max(d, 0) }
}

// WithQueue sets how many appends the background writer holds before an
// append waits (default 256, as the session store API suggests).
func WithQueue(n int) Option { return func(c *config) { c.queue = max(n, 1) } }

// WithLockWait makes opening a session for writing wait for another
// writer's lock instead of failing with ErrLocked (on backends with locks).
func WithLockWait() Option { return func(c *config) { c.wait = true } }

// Store keeps sessions on a trove root: the tree files of pi session v3 under
// sessions/, each with a sidecar directory holding meta.json,
// transcript.jsonl and checkpoints.
type Store struct {
	st  backend.Storage
	cfg config
}

// OpenStore opens the session store on a trove root. Images and tool
// outputs over the threshold go to the root's blob store (blobs/) unless a
// session option names another (WithBlobStore) or WithInlineBlobs is given.
func OpenStore(ctx context.Context, st backend.Storage, opts ...Option) (*Store, error) {
	if st == nil {
		return nil, fmt.Errorf("open session store: nil storage: %w", tree.ErrInvalid)
	}
	cfg := config{log: slog.Default(), now: time.Now, queue: 256, syncEvery: time.Second, leaseTTL: DefaultLeaseTTL, leaseSkew: DefaultLeaseSkew, mono: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if err := backend.CtxErr(ctx, "open", SessionsDir); err != nil {
		return nil, err
	}
	if !cfg.inline && cfg.blobs == nil {
		// Blobs by default: the root's one cas store, where checkpoints
		// and run logs keep theirs, so an image is stored once.
		cs, err := cas.Open(ctx, st)
		if err != nil {
			return nil, err
		}
		cfg.blobs = cs
	}
	base := []tree.Option{tree.WithLogger(cfg.log)}
	if cfg.blobs != nil && !cfg.inline {
		base = append(base, tree.WithBlobStore(cfg.blobs))
	}
	if cfg.toolMax != 0 {
		base = append(base, tree.WithToolResultThreshold(cfg.toolMax))
	}
	cfg.session = append(base, cfg.session...)
	return &Store{st: st, cfg: cfg}, nil
}

// SidecarDir is the sidecar directory of the session file path.
func SidecarDir(path string) string { return strings.TrimSuffix(path, ".jsonl") }

func (s *Store) sessionOpts(extra ...tree.Option) []tree.Option {
	return append(append([]tree.Option{tree.WithClock(s.cfg.now)}, s.cfg.session...), extra...)
}

// Create starts a new session and opens it for writing. As pi session v3 says,
// its file appears with the first assistant message; its sidecar at once.
func (s *Store) Create(ctx context.Context, o CreateOptions) (*Handle, error) {
	id := o.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		id = u.String()
	}
	if strings.ContainsAny(id, "/\\_") || backend.ValidPath(id) != nil {
		return nil, backend.PathErr("create", id, fmt.Errorf("%w: session id must be a plain name without '_'", tree.ErrInvalid))
	}
	if o.ID != "" {
		// A chosen id must be new: ids name sessions across every cwd.
		if name, err := s.Find(ctx, id); err == nil && idFromName(backend.Base(name)) == id {
			return nil, backend.PathErr("create", name, fs.ErrExist)
		}
	}
	now := s.cfg.now().UTC()
	path := SessionPath(o.Cwd, now, id)
	if o.ID != "" {
		// A generated id is new (uuid v7); a chosen one is checked above
		// and here, and the file's exclusive create checks again.
		if _, err := s.st.Stat(ctx, path); err == nil {
			return nil, backend.PathErr("create", path, fs.ErrExist)
		}
	}
	var fresh []tree.Option
	if o.ID == "" {
		// A name no file ever had, in the store's own tree: its file is
		// made without a look at its place (2 requests on a bucket, not 4).
		fresh = append(fresh, tree.FreshName())
	}
	sess, err := tree.Create(s.st, path, tree.Header{ID: id, Cwd: o.Cwd, Title: o.Title, ParentSession: o.ParentID, Timestamp: tree.FormatTime(now)}, s.sessionOpts(fresh...)...)
	if err != nil {
		return nil, err
	}
	wl, err := s.lock(ctx, path, true)
	if err != nil {
		return nil, err
	}
	meta := Metadata{ID: id, Path: path, ProjectHash: EncodeCwd(o.Cwd), Cwd: o.Cwd, Title: o.Title, Model: o.Model,
		CreatedAt: now, UpdatedAt: now, ParentID: o.ParentID, AgentName: o.AgentName}
	return s.open(ctx, sess, meta, true, wl)
}

// repairEmpty gives an empty session file, left by a writer killed between
// creating it and its first write, the header its sidecar (or its name)
// records, so the session resumes; any other headerless file is left as
// it is.
func (s *Store) repairEmpty(ctx context.Context, name string, sess *tree.Session) (*tree.Session, error) {
	fi, err := s.st.Stat(ctx, name)
	if err != nil || fi.Size != 0 {
		return sess, err
	}
	h := tree.Header{Version: tree.CurrentVersion, ID: idFromName(backend.Base(name)), Timestamp: tree.FormatTime(fi.ModTime.UTC())}
	if data, err := s.st.ReadFile(ctx, backend.Join(SidecarDir(name), MetaFile)); err == nil {
		var m Metadata
		if json.Unmarshal(data, &m) == nil && m.ID != "" {
			h.ID, h.Cwd, h.Title, h.ParentSession = m.ID, m.Cwd, m.Title, m.ParentID
			if !m.CreatedAt.IsZero() {
				h.Timestamp = tree.FormatTime(m.CreatedAt.UTC())
			}
		}
	}
	s.cfg.log.Warn("trove/session: an empty session file (a writer killed before its first write) gets its header back", "file", name)
	if err := s.st.WriteFile(ctx, name, append(tree.EncodeHeader(h), '\n')); err != nil {
		return nil, err
	}
	return tree.Open(ctx, s.st, name, s.sessionOpts(tree.LazyBlobs())...)
}

// Find resolves ref (a full id, a unique abbreviation of one (see MatchID),
// or a session file name) to a session file, from the listing index. An
// abbreviation several sessions share is ErrAmbiguous (an *AmbiguousError
// naming them); none, fs.ErrNotExist.
func (s *Store) Find(ctx context.Context, ref string) (string, error) {
	if name, ok, err := findFile(ctx, s.st, ref); ok || err != nil {
		return name, err
	}
	all, err := s.collect(ctx, "", false)
	if err != nil {
		return "", err
	}
	ae := &AmbiguousError{Prefix: ref}
	var match []*idxRec
	for _, r := range all {
		if r.meta.ID == ref {
			return r.dir + "/" + r.base, nil
		}
		if MatchID(r.meta.ID, ref) {
			match = append(match, r)
		}
	}
	ae.Candidates = metadataOf(match)
	switch len(ae.Candidates) {
	case 0:
		return "", &fs.PathError{Op: "find", Path: ref, Err: fs.ErrNotExist}
	case 1:
		return ae.Candidates[0].Path, nil
	}
	slices.SortFunc(ae.Candidates, func(a, b Metadata) int { return newestFirst(&a, &b) })
	return "", ae
}

// AmbiguousError is a session id prefix that matches several sessions.
type AmbiguousError struct {
	Prefix     string
	Candidates []Metadata // newest first
}

func (e *AmbiguousError) Error() string {
	ids := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		ids[i] = c.ID
	}
	return fmt.Sprintf("session %q is ambiguous: %d sessions match (%s)", e.Prefix, len(ids), strings.Join(ids, ", "))
}

func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// Load opens the session ref (full id, unique id prefix or file name) for
// writing: appends go on from its leaf.
func (s *Store) Load(ctx context.Context, ref string) (*Handle, error) {
	// Lock first: the file may be mid-append by the lock's holder.
	name, wl, err := s.lockRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	// Opened to append to: blobs resolve only if its entries are read.
	sess, err := tree.Open(ctx, s.st, name, s.sessionOpts(tree.LazyBlobs())...)
	if err == nil && !sess.HasHeader() {
		if sess, err = s.repairEmpty(ctx, name, sess); err == nil && !sess.HasHeader() {
			err = sess.Err()
		}
	}
	var meta Metadata
	if err == nil {
		meta, err = s.readMeta(ctx, sess)
	}
	if err != nil {
		wl.unlock()
		return nil, err
	}
	side := meta
	recount(&meta, sess)
	meta.FileSize = fileSize(sess)
	h, err := s.open(ctx, sess, meta, false, wl)
	if err == nil && (!sameCounts(side, meta) || side.FileSize > 0 && side.FileSize != fileSize(sess)) {
		// The sidecar lags the file (its writer was killed after a sync):
		// a listing would trust it once Close takes the open marker when
		// its time says it is current (an old sidecar, its writer's clock
		// ahead of the bucket's), or recount it every time its recorded
		// size is not the file's, so Close writes it.
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
	}
	return h, err
}

// Resume is Load, under the session store API's name.
func (s *Store) Resume(ctx context.Context, ref string) (*Handle, error) { return s.Load(ctx, ref) }

// ResumeAt opens the session ref at the message messageID (the session store API:
// resumeSessionAt): its context is the conversation up to and including
// that message, and new messages branch from there; nothing is deleted.
func (s *Store) ResumeAt(ctx context.Context, ref, messageID string) (*Handle, error) {
	h, err := s.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := h.sess.Branch(messageID); err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// Continue opens the most recently updated session of cwd for writing.
func (s *Store) Continue(ctx context.Context, cwd string) (*Handle, error) {
	for m, err := range s.List(ctx, cwd) {
		if err != nil {
			return nil, err
		}
		return s.Load(ctx, m.Path)
	}
	return nil, backend.PathErr("continue", CwdDir(cwd), fs.ErrNotExist)
}

// Fork writes a fork of the session ref (see ForkSession: whole, up to
// o.At, or the last o.Last messages, entries as stored) and opens it for
// writing. The source is not changed.
func (s *Store) Fork(ctx context.Context, ref string, o ForkOptions) (*Handle, error) {
	meta, err := s.ForkSession(ctx, ref, o)
	if err != nil {
		return nil, err
	}
	return s.Load(ctx, meta.Path)
}

// Delete removes the session ref: its file and its sidecar (metadata,
// transcript, checkpoints). Blobs it referenced are left to cas GC.
func (s *Store) Delete(ctx context.Context, ref string) error {
	name, wl, err := s.lockRef(ctx, ref)
	if err != nil {
		return err
	}
	err = s.st.Unlink(ctx, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		wl.unlock()
		return err
	}
	wl.unlock()
	if err := backend.RemoveAll(ctx, s.st, SidecarDir(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.forget(ctx, name)
	return nil
}

// List yields the metadata of the sessions of cwd ("" for every cwd),
// most recently updated first (ties by id), from the listing index (see
// Query). Sessions without a sidecar (written by another implementation)
// are listed from their file.
func (s *Store) List(ctx context.Context, cwd string) iter.Seq2[Metadata, error] {
	return s.Query(ctx, Query{Cwd: cwd})
}

// LoadMessages returns the message entries on the path to the session's
// leaf, oldest first.
func (s *Store) LoadMessages(ctx context.Context, ref string) ([]*tree.Entry, error) {
	return s.LoadMessagesUpTo(ctx, ref, "")
}

// LoadMessagesUpTo returns the message entries on the path to messageID
// (the leaf when ""), oldest first, that one included.
func (s *Store) LoadMessagesUpTo(ctx context.Context, ref, messageID string) ([]*tree.Entry, error) {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return nil, err
	}
	sess, err := tree.Open(ctx, s.st, name, s.sessionOpts(tree.ReadOnly())...)
	if err != nil {
		return nil, err
	}
	return messagesTo(sess, messageID)
}

func messagesTo(sess *tree.Session, messageID string) ([]*tree.Entry, error) {
	if messageID == "" {
		if sess.Leaf() == nil {
			return nil, nil
		}
		messageID = sess.Leaf().ID()
	}
	path, err := sess.Path(messageID)
	if err != nil {
		return nil, err
	}
	var out []*tree.Entry
	for _, e := range path {
		if e.Type() == tree.TypeMessage {
			out = append(out, e)
		}
	}
	return out, nil
}

// maxTranscriptLine bounds one transcript line a reader holds.
const maxTranscriptLine = 256 << 20

// Transcript yields the session's SDK transcript stream, one JSON value per
// line, in the order appended. A torn last line is skipped.
func (s *Store) Transcript(ctx context.Context, ref string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		name, err := s.Find(ctx, ref)
		if err != nil {
			yield(nil, err)
			return
		}
		rc, err := s.st.Open(ctx, backend.Join(SidecarDir(name), TranscriptFile))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(nil, err)
			return
		}
		defer rc.Close()
		// Lenient as the tree: blank, damaged, torn and oversized lines
		// are skipped.
		r := jsonl.NewReader(rc, maxTranscriptLine)
		for {
			line, _, err := r.Next()
			switch {
			case err == io.EOF:
				return
			case errors.Is(err, jsonl.ErrLineTooLong):
				continue
			case err != nil:
				yield(nil, err)
				return
			case len(line) == 0 || !json.Valid(line):
				continue
			}
			if !yield(json.RawMessage(line), nil) {
				return
			}
		}
	}
}
