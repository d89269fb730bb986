package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/internal/jsonscan"
)

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
// force also writes what pi session v3's deferral holds back (Flush).
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
// an assistant message (pi session v3's deferral), or at once with force: a
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
		case !s.fileExists && s.cfg.fresh:
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.CreateFresh)
		case !s.fileExists:
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.Create)
		case s.torn:
			// A torn last line was never acknowledged (a line is only
			// once it and its newline are synced): the appender drops
			// it, so the new entry is not glued to it and no damaged
			// line stays behind.
			s.w = jsonl.NewAppender(s.st, s.name, jsonl.Append)
			s.w.Dropped = func(n int) {
				s.size -= int64(n)
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
	s.size += int64(buf.Len())
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
// what pi session v3's deferral held back: after Flush a session holding only a
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
	s.size = int64(buf.Len())
	s.fileExists, s.torn, s.persisted = true, false, n
	return nil
}

// Close flushes and releases the session's writer. Entries held back for
// want of an assistant message are dropped, as pi session v3 intends. Later
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
