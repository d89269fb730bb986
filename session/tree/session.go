package tree

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/internal/jsonscan"
)

// Option tunes Open and Create.
type Option func(*config)

type config struct {
	blobs    cas.Blobs
	log      *slog.Logger
	report   func(Problem)
	now      func() time.Time
	rand     io.Reader
	toolMax  int
	readOnly bool
	inMemory bool
	lazy     bool
	fresh    bool
}

func newConfig(opts []Option) config {
	c := config{now: time.Now, rand: rand.Reader, toolMax: DefaultToolResultThreshold}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// WithBlobStore sets where images and long tool outputs go and come from.
// Without one they stay inline, and refs found on load become placeholders.
func WithBlobStore(b cas.Blobs) Option { return func(c *config) { c.blobs = b } }

// WithLogger sets the logger for problems no WithReport callback takes.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithReport receives every Problem a load finds (skipped lines, cycles,
// missing blobs, migrations) instead of the logger.
func WithReport(f func(Problem)) Option { return func(c *config) { c.report = f } }

// WithClock sets the clock for entry and header timestamps.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithRandom sets the source of random ids (tests use a fixed one).
func WithRandom(r io.Reader) Option { return func(c *config) { c.rand = r } }

// WithToolResultThreshold sets the tool-result text size in bytes above
// which the text goes to the blob store; 0 keeps tool output inline.
func WithToolResultThreshold(n int) Option { return func(c *config) { c.toolMax = n } }

// LazyBlobs leaves blob refs unresolved until the session's entries are
// first read (Entries, Context, Path, ...): a session opened to append to
// reads no blob it is not asked for.
func LazyBlobs() Option { return func(c *config) { c.lazy = true } }

// FreshName says that Create's name is new, made from a random id: its
// file is created without a look at its place (jsonl.CreateFresh).
func FreshName() Option { return func(c *config) { c.fresh = true } }

// ReadOnly opens a session that never writes: migrations happen in memory
// only and appends fail with ErrReadOnly.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// InMemory keeps a session in memory only: appends, branches and context
// work, and nothing is ever written (persistence off: the session
// store API's persistSession: false).
func InMemory() Option { return func(c *config) { c.inMemory = true } }

// Session is one conversation tree held in memory and persisted to one file
// through a backend.Storage. It is safe for concurrent use.
//
// Writes follow pi session v3 "Write pipeline": entries stay in memory until the
// session holds an assistant message, then the whole session is written and
// later entries are appended one line each. Flush makes them durable. The
// first write error is latched: every later write returns it.
type Session struct {
	st   backend.Storage
	name string
	cfg  config

	mu           sync.Mutex
	wbuf         []byte // persistLocked's, kept between writes
	header       Header
	headerRaw    []byte
	entries      []*Entry
	byID         map[string]*Entry
	leaf         *Entry // nil: the next entry is a root
	hasAssistant bool
	labels       map[string]string

	noHeader   bool            // loaded from a file without a header: never written
	fileExists bool            // the file holds at least the header
	persisted  int             // entries[:persisted] are in the file
	size       int64           // the file's bytes as read and written here
	batch      bool            // appends wait for commit (see setBatch)
	torn       bool            // the file does not end with a newline
	unresolved bool            // LazyBlobs: views hold refs until first read
	w          *jsonl.Appender // opened on the first write after load or rewrite
	err        error           // the first write error, latched
	closed     bool
	problems   []Problem // the first maxProblems reported
	seq        int       // ids minted without randomness
}

const maxProblems = 1000

// Create starts a new session to be stored as name. Nothing is written
// until the session holds an assistant message. Empty header fields get
// defaults: a random id, the current time, version 3.
func Create(st backend.Storage, name string, h Header, opts ...Option) (*Session, error) {
	if err := backend.ValidPath(name); err != nil {
		return nil, backend.PathErr("create", name, err)
	}
	s := &Session{st: st, name: name, cfg: newConfig(opts), byID: map[string]*Entry{}, labels: map[string]string{}}
	if h.ID == "" {
		h.ID = s.randomHex(8)
	}
	if h.Timestamp == "" {
		h.Timestamp = FormatTime(s.cfg.now())
	}
	h.Version = CurrentVersion
	s.header, s.headerRaw = h, EncodeHeader(h)
	return s, nil
}

// Open loads the session stored as name: lenient parse, migration to v3
// (and one atomic rewrite of the file when anything migrated), blob refs
// resolved, tree indexed, leaf at the last entry. Problems are reported, not
// returned. A file without a valid header loads as an empty session that
// refuses every write (Err wraps ErrNoHeader). A missing file is
// fs.ErrNotExist.
func Open(ctx context.Context, st backend.Storage, name string, opts ...Option) (*Session, error) {
	data, err := st.ReadFile(ctx, name)
	if err != nil {
		return nil, err
	}
	s := &Session{st: st, name: name, cfg: newConfig(opts), labels: map[string]string{}, size: int64(len(data))}
	dialect002 := isAgentJSONL(data)
	if dialect002 {
		data = fromAgentJSONL(data)
	}
	p := parseFile(data, s.report)
	if !p.headerOK {
		s.noHeader = true
		s.err = backend.PathErr("open", name, ErrNoHeader)
		if p.empty && len(data) > 0 {
			s.report(Problem{Err: fmt.Errorf("no line parsed: %w", ErrNoHeader)})
		}
		s.byID = map[string]*Entry{}
		return s, nil
	}
	from := p.header.Version
	migrated := migrate(p, func(taken map[string]bool) string { return s.newID(taken) }) || dialect002
	s.header, s.headerRaw = p.header, p.headerRaw
	s.entries = p.entries
	s.fileExists, s.persisted, s.torn = true, len(p.entries), p.torn

	for _, e := range s.entries {
		e.raw = e.view
	}
	if s.cfg.lazy {
		s.unresolved = true
	} else {
		s.resolveBlobs(ctx)
		if err := ctx.Err(); err != nil {
			// Blobs left unresolved for want of time are not worth a session.
			return nil, backend.PathErr("open", name, err)
		}
	}
	s.index()
	if migrated {
		what := fmt.Sprintf("version %g", from)
		if dialect002 {
			what = "the agent JSONL dialect"
		}
		s.report(Problem{Err: fmt.Errorf("from %s: %w", what, ErrMigrated)})
		if !s.cfg.readOnly {
			if err := s.rewriteLocked(ctx); err != nil {
				return nil, fmt.Errorf("rewrite migrated session: %w", err)
			}
		}
	}
	return s, nil
}

// resolveBlobs gives every loaded entry's view its blob refs resolved.
func (s *Session) resolveBlobs(ctx context.Context) {
	r := &resolver{ctx: ctx, blobs: s.cfg.blobs}
	for _, e := range s.entries {
		if e.line == 0 || !mayHoldRef(e.raw) {
			continue // new entries hold their content as given
		}
		r.report = func(ref string, err error) {
			s.report(Problem{Line: e.line, EntryID: e.id, Err: fmt.Errorf("%s: %w: %w", ref, ErrBlob, err)})
		}
		if v, ch := r.value(e.raw, "", 0); ch {
			e.setView(v)
		}
	}
}

// resolvedLocked resolves a lazily opened session's blobs on the first
// read of its entries.
func (s *Session) resolvedLocked() {
	if s.unresolved {
		s.unresolved = false
		s.resolveBlobs(context.Background())
	}
}

// index builds byID, labels, the leaf and the assistant flag from the
// loaded entries, and reports duplicates, dangling parents and cycles.
func (s *Session) index() {
	s.byID = make(map[string]*Entry, len(s.entries))
	for _, e := range s.entries {
		if e.typ == TypeSession {
			// A later header is never an entry (the reference skips it):
			// not indexed, not a leaf, not a parent. It stays in the file.
			s.report(Problem{Line: e.line, EntryID: e.id, Err: ErrExtraHeader})
			continue
		}
		if e.id == "" {
			continue
		}
		if old, dup := s.byID[e.id]; dup {
			s.report(Problem{Line: e.line, EntryID: e.id, Err: fmt.Errorf("also on line %d; the later entry wins: %w", old.line, ErrDuplicateID)})
		}
		s.byID[e.id] = e
		s.leaf = e
	}
	for _, e := range s.entries {
		if e.typ == TypeSession {
			continue
		}
		s.noteEntry(e)
		if e.parentID != "" && s.byID[e.parentID] == nil {
			s.report(Problem{Line: e.line, EntryID: e.id, Err: fmt.Errorf("%q; the entry acts as a root: %w", e.parentID, ErrDanglingParent)})
		}
	}
	s.findCycles()
}

// noteEntry updates what is derived from entries in file order.
func (s *Session) noteEntry(e *Entry) {
	switch e.typ {
	case TypeMessage:
		if e.role == "assistant" {
			s.hasAssistant = true
		}
	case TypeLabel:
		ms, _ := jsonscan.SplitObject(e.view)
		target, _ := ms.Str("targetId")
		if l := ms.Get("label"); jsonscan.Truthy(l) {
			s.labels[target] = jsonscan.Text(l)
		} else {
			delete(s.labels, target)
		}
	}
}

func (s *Session) findCycles() {
	const (
		walking = 1
		done    = 2
	)
	// The walk's state lives in the entries (no map): reset it first, as
	// a session indexes again after a reload.
	for _, e := range s.entries {
		e.walk = 0
	}
	for _, start := range s.entries {
		if start.id == "" || s.byID[start.id] != start || start.walk != 0 {
			continue
		}
		var chain []*Entry
		e := start
		for e != nil && e.walk == 0 {
			e.walk = walking
			chain = append(chain, e)
			e = s.byID[e.parentID]
		}
		if e != nil && e.walk == walking {
			s.report(Problem{Line: e.line, EntryID: e.id, Err: fmt.Errorf("the walk to the root stops at entry %s: %w", e.id, ErrCycle)})
		}
		for _, c := range chain {
			c.walk = done
		}
	}
}

func (s *Session) report(p Problem) {
	if len(s.problems) < maxProblems {
		s.problems = append(s.problems, p)
	}
	if s.cfg.report != nil {
		s.cfg.report(p)
		return
	}
	level := slog.LevelWarn
	if errors.Is(p.Err, ErrMigrated) {
		level = slog.LevelInfo
	}
	s.cfg.log.Log(context.Background(), level, "session load", "file", s.name, "problem", p.Error())
}

// Problems returns what the load found and worked around, in order (at most
// the first 1000).
func (s *Session) Problems() []Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	return append([]Problem(nil), s.problems...)
}

func (s *Session) randomHex(n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.cfg.rand, b); err != nil {
		// A failing random source is a broken machine; the clock and a
		// counter keep ids unique enough to go on.
		s.seq++
		sum := sha256.Sum256([]byte(fmt.Sprint(s.cfg.now().UnixNano(), s.seq)))
		copy(b, sum[:])
	}
	return hex.EncodeToString(b)
}

// newID returns an 8-hex-char entry id not in taken (nor in the index).
func (s *Session) newID(taken map[string]bool) string {
	for range 100 {
		id := s.randomHex(4)
		if !taken[id] && s.byID[id] == nil {
			return id
		}
	}
	return s.randomHex(16)
}

// Name is the session's file name in its storage.
func (s *Session) Name() string { return s.name }

// Header returns the session header.
func (s *Session) Header() Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header
}

// Len is the number of entries (the header not counted).
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Entries returns every entry in insertion order.
func (s *Session) Entries() []*Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	out := make([]*Entry, 0, len(s.entries))
	for _, e := range s.entries {
		if e.typ != TypeSession { // a later header line is not an entry
			out = append(out, e)
		}
	}
	return out
}

// Entry returns the entry with id, or nil.
func (s *Session) Entry(id string) *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	return s.byID[id]
}

// Children returns the entries whose parent is id, in insertion order. For
// id "" they are the roots, entries whose parentId names no entry included
// (they act as roots in the context too).
func (s *Session) Children(id string) []*Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	var out []*Entry
	for _, e := range s.entries {
		if e.id == "" || s.byID[e.id] != e {
			continue
		}
		parent := e.parentID
		if s.byID[parent] == nil {
			parent = ""
		}
		if parent == id {
			out = append(out, e)
		}
	}
	return out
}

// Leaf returns the current leaf, nil when the next entry will be a root.
func (s *Session) Leaf() *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	return s.leaf
}

// Branch moves the leaf to the entry id; entries are not changed.
func (s *Session) Branch(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return fmt.Errorf("branch to %q: %w", id, ErrNotFound)
	}
	s.leaf = e
	return nil
}

// ResetLeaf sets the leaf to null: the next entry is a new root.
func (s *Session) ResetLeaf() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaf = nil
}

// Label returns the label of the entry id, "" when none.
func (s *Session) Label(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.labels[id]
}

// Labels returns every current label by entry id.
func (s *Session) Labels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.labels))
	for k, v := range s.labels {
		out[k] = v
	}
	return out
}

// Context rebuilds the model context at the current leaf.
func (s *Session) Context() *Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	return buildContext(s.byID, s.leaf)
}

// ContextAt rebuilds the model context at the entry id.
func (s *Session) ContextAt(id string) (*Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	e := s.byID[id]
	if e == nil {
		return nil, fmt.Errorf("context at %q: %w", id, ErrNotFound)
	}
	return buildContext(s.byID, e), nil
}

// Path returns the entries from the root to the entry id.
func (s *Session) Path(id string) ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolvedLocked()
	e := s.byID[id]
	if e == nil {
		return nil, fmt.Errorf("path to %q: %w", id, ErrNotFound)
	}
	return path(s.byID, e), nil
}

// Size is the file's size as this session read and wrote it, once the file
// exists and while no write failed: a listing that finds the file at
// another size knows someone else changed it.
func (s *Session) Size() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size, s.fileExists && s.err == nil && !s.noHeader && !s.cfg.inMemory
}

// HasHeader reports whether the file loaded with a valid header; a session
// without one refuses writes and its Err wraps ErrNoHeader.
func (s *Session) HasHeader() bool { return !s.noHeader }

// Stored returns the entries as the file holds them, later header lines
// included and blob refs not resolved: what counting needs, at no blob read.
func (s *Session) Stored() []*Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entries)
}
