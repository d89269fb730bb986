package tree

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// ReadOnly opens a session that never writes: migrations happen in memory
// only and appends fail with ErrReadOnly.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// InMemory keeps a session in memory only: appends, branches and context
// work, and nothing is ever written (persistence off, spec 001
// persistSession: false).
func InMemory() Option { return func(c *config) { c.inMemory = true } }

// Session is one conversation tree held in memory and persisted to one file
// through a backend.Storage. It is safe for concurrent use.
//
// Writes follow spec 003 "Write pipeline": entries stay in memory until the
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
	s := &Session{st: st, name: name, cfg: newConfig(opts), labels: map[string]string{}}
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
			what = "the spec 002 dialect"
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

// Append adds an entry as a child of the leaf and makes it the leaf. The
// entry is kept in memory even when persisting it fails; the error (then
// latched) is returned with it.
func (s *Session) Append(ctx context.Context, d EntryData) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(ctx, d)
}

// AppendMessage appends a message entry holding msg, an AgentMessage JSON
// object with a role.
func (s *Session) AppendMessage(ctx context.Context, msg json.RawMessage) (*Entry, error) {
	return s.Append(ctx, &Message{Message: msg})
}

// SetLabel appends a label entry for the entry targetID; an empty label
// clears it.
func (s *Session) SetLabel(ctx context.Context, targetID, label string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[targetID] == nil {
		return nil, fmt.Errorf("label %q: %w", targetID, ErrNotFound)
	}
	return s.appendLocked(ctx, &Label{TargetID: targetID, Label: label})
}

// BranchWithSummary moves the leaf to fromID ("" for before the first
// entry) and appends a branch_summary there describing the abandoned path.
func (s *Session) BranchWithSummary(ctx context.Context, fromID string, bs BranchSummary) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromID == "" {
		s.leaf = nil
		bs.FromID = "root"
	} else {
		e := s.byID[fromID]
		if e == nil {
			return nil, fmt.Errorf("branch to %q: %w", fromID, ErrNotFound)
		}
		s.leaf = e
		bs.FromID = fromID
	}
	return s.appendLocked(ctx, &bs)
}

func (s *Session) appendLocked(ctx context.Context, d EntryData) (*Entry, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	parent := ""
	if s.leaf != nil {
		parent = s.leaf.id
	}
	if err := s.checkRefsLocked(d); err != nil {
		return nil, err
	}
	id := s.newID(nil)
	ts := FormatTime(s.cfg.now())
	var e *Entry
	p, ok := d.(*Prepared)
	if m, isMsg := d.(*Message); isMsg {
		var err error
		if p, err = PrepareMessage(m.Message); err != nil {
			return nil, err
		}
		ok = true
	}
	if ok {
		// Built as it is framed: the line is not split again.
		b, msg := frameMessage(p, id, parent, ts)
		e = &Entry{typ: TypeMessage, id: id, parentID: parent, timestamp: ts, role: p.role, object: true, view: b, msg: msg, usage: &p.usage, keys: p.keys}
	} else {
		b, err := encodeEntry(d, id, parent, ts)
		if err != nil {
			return nil, err
		}
		e = newEntry(b, 0)
	}
	s.entries = append(s.entries, e)
	s.byID[id] = e
	s.leaf = e
	s.noteEntry(e)
	if s.batch {
		return e, s.err // written by commit, with the rest of the batch
	}
	return e, s.persistLocked(ctx, false)
}

// Hold holds appends in memory until commit: the background writer
// writes a batch with one write and one sync.
func (s *Session) Hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = on
}

// Commit writes what appends held and, with sync, makes the file durable;
// force also writes what spec 003's deferral holds back (Flush).
func (s *Session) Commit(ctx context.Context, force, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.writable() == nil {
		if err := s.persistLocked(ctx, force); err != nil {
			return err
		}
	}
	if !sync {
		return nil
	}
	return s.syncLocked()
}

// checkRefsLocked refuses an entry whose reference names no entry of the
// session: a strict reader could not follow it (the writing contract).
func (s *Session) checkRefsLocked(d EntryData) error {
	var key, id string
	switch v := d.(type) {
	case *Compaction:
		key, id = "firstKeptEntryId", v.FirstKeptEntryID
	case *Label:
		key, id = "targetId", v.TargetID
	case *BranchSummary:
		if v.FromID == "root" {
			return nil
		}
		key, id = "fromId", v.FromID
	default:
		return nil
	}
	if e := s.byID[id]; e == nil {
		return fmt.Errorf("%s %q names no entry of the session: %w", key, id, ErrInvalid)
	}
	return nil
}

// writable says why the session takes no writes at all (not counting a
// latched write error, which still lets entries into memory).
func (s *Session) writable() error {
	switch {
	case s.closed:
		return backend.PathErr("append", s.name, ErrClosed)
	case s.cfg.readOnly:
		return backend.PathErr("append", s.name, ErrReadOnly)
	case s.noHeader:
		return s.err
	}
	return nil
}

// persistLocked writes what is not in the file yet, once the session holds
// an assistant message (spec 003's deferral), or at once with force: a
// caller asking for durability gets it, prompt-only sessions included.
func (s *Session) persistLocked(ctx context.Context, force bool) error {
	if s.err != nil {
		return s.err
	}
	if s.cfg.inMemory {
		s.persisted = len(s.entries)
		return nil
	}
	if !s.hasAssistant && !(force && len(s.entries) > 0) || s.persisted == len(s.entries) && s.fileExists {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return backend.PathErr("append", s.name, err)
	}
	buf := bytes.NewBuffer(s.wbuf[:0]) // io.Writers keep nothing: reused
	defer func() {
		if s.wbuf = nil; buf.Cap() <= 1<<20 {
			s.wbuf = buf.Bytes()[:0]
		}
	}()
	if s.w == nil {
		switch {
		case !s.fileExists:
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.Create)
		case s.torn:
			// A torn last line was never acknowledged (a line is only
			// once it and its newline are synced): the appender drops
			// it, so the new entry is not glued to it and no damaged
			// line stays behind.
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.Append)
			s.w.Dropped = func(n int) {
				s.report(Problem{Err: fmt.Errorf("dropped a torn last line of %d bytes before appending: %w", n, ErrCorrupt)})
			}
		default:
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.AppendWhole)
		}
	}
	if !s.fileExists {
		buf.Write(s.headerRaw)
		buf.WriteByte('\n')
	}
	size := 0
	for _, e := range s.entries[s.persisted:] {
		size += len(e.view) + 1
	}
	buf.Grow(size + len(s.headerRaw) + 2)
	for _, e := range s.entries[s.persisted:] {
		raw, err := s.rawLocked(ctx, e)
		if err != nil {
			return s.latch(err)
		}
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	if err := s.w.Write(ctx, buf.Bytes()); err != nil {
		return s.latch(err)
	}
	s.fileExists, s.torn, s.persisted = true, false, len(s.entries)
	return nil
}

// rawLocked returns the stored form of e, preparing it on first use.
func (s *Session) rawLocked(ctx context.Context, e *Entry) ([]byte, error) {
	if e.raw != nil {
		return e.raw, nil
	}
	if e.keys == keysNone && !tooLong(e.view, s.cfg.toolMax) {
		e.raw = e.view // nothing to store apart, drop or cut
		return e.raw, nil
	}
	p := preparer{ctx: ctx, blobs: s.cfg.blobs, toolMax: s.cfg.toolMax}
	raw, err := p.entry(e.view, e.keys == keysSome)
	if err != nil {
		return nil, err
	}
	e.raw = raw
	return raw, nil
}

func (s *Session) latch(err error) error {
	if s.err == nil {
		s.err = backend.PathErr("write", s.name, err)
		s.cfg.log.Error("session persistence failed; later writes return this error", "file", s.name, "err", err)
	}
	return s.err
}

// Err returns the latched write error, or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Persisted reports whether the session's file exists (it does not until
// the first assistant message for a new session).
func (s *Session) Persisted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fileExists
}

// Flush makes every entry appended so far durable (fsync), writing first
// what spec 003's deferral held back: after Flush a session holding only a
// user prompt is on the store, listed and resumable.
func (s *Session) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return backend.PathErr("flush", s.name, err)
	}
	return s.Commit(ctx, true, true)
}

func (s *Session) syncLocked() error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Sync(); err != nil {
		return s.latch(err)
	}
	return nil
}

// SetTitle sets the header's title. A persisted session is rewritten
// atomically, as the reference does for a session name.
func (s *Session) SetTitle(ctx context.Context, title string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	ms, _ := jsonscan.SplitObject(s.headerRaw)
	val := jsonscan.Quote(title)
	if title == "" {
		val = nil
	}
	s.headerRaw = jsonscan.EditObject(ms, jsonscan.Edit{Key: "title", Val: val})
	s.header.Title = title
	if !s.fileExists {
		return s.err
	}
	return s.rewriteLocked(ctx)
}

// Rewrite replaces the file with the session as held in memory, atomically
// and durably (temp file, fsync, rename). Lines that did not parse on load
// are not kept.
func (s *Session) Rewrite(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if !s.fileExists && !s.hasAssistant {
		return s.err
	}
	return s.rewriteLocked(ctx)
}

func (s *Session) rewriteLocked(ctx context.Context) error {
	if s.cfg.inMemory {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	n := len(s.entries)
	if !s.hasAssistant {
		n = s.persisted
	}
	var buf bytes.Buffer
	buf.Write(s.headerRaw)
	buf.WriteByte('\n')
	for _, e := range s.entries[:n] {
		raw, err := s.rawLocked(ctx, e)
		if err != nil {
			return s.latch(err)
		}
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	if s.w != nil {
		// The rename replaces the file under the append writer.
		err := s.w.Close()
		s.w = nil
		if err != nil {
			return s.latch(err)
		}
	}
	if err := s.st.WriteFile(ctx, s.name, buf.Bytes()); err != nil {
		return s.latch(err)
	}
	s.fileExists, s.torn, s.persisted = true, false, n
	return nil
}

// Close flushes and releases the session's writer. Entries held back for
// want of an assistant message are dropped, as spec 003 intends. Later
// writes fail with ErrClosed.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.noHeader {
		return nil // nothing was written, nothing to release
	}
	if s.w == nil {
		return s.err
	}
	w := s.w
	s.w = nil
	if err := w.Close(); err != nil && s.err == nil {
		s.latch(err)
	}
	return s.err
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
