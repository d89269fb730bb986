package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/session/tree"
)

// Handle is a session open for writing. An append is checked in the
// caller's goroutine and queued; it returns without waiting for the disk.
// A background writer takes the whole queue when it must (a Flush, an
// entry whose id is asked for, 256 KiB held, the sync interval, a full
// queue), appends it as one batch and makes it durable with one sync
// (group commit): a message costs no wake-up of its own. Flush waits until
// everything queued before it is durable. The first write error is
// latched: every later call returns it. A Handle is safe for concurrent
// use.
type Handle struct {
	store  *Store // nil for a NoopStore handle
	sess   *tree.Session
	unlock func()
	ctx    context.Context // the writer's: the opener's values, never cancelled
	limit  int             // ops queued before a sender waits
	timer  *time.Timer     // wakes the writer when held appends are due
	wake   chan struct{}   // one pending wake-up of the writer
	done   chan struct{}

	qmu    sync.Mutex // guards the queue and what follows; taken before mu
	queue  []op
	spare  []op // the writer's last batch, reused
	qbytes int  // message and transcript bytes queued
	closed bool
	armed  bool          // the timer runs
	due    bool          // the timer fired: sync what is held
	taken  chan struct{} // closed when the writer takes the queue

	synced   time.Time // the writer's last sync (the writer's own)
	pending  int       // bytes appended and not yet written (the writer's own)
	unsynced bool      // written and not yet synced (the writer's own)

	mu       sync.Mutex // guards what follows
	meta     Metadata
	dirty    bool // meta changed since it was written
	edited   bool // UpdateMetadata changed it: written at the next Flush
	err      error
	trans    *jsonl.Appender // transcript.jsonl, only the writer goroutine writes
	closeErr error
}

type opKind int

const (
	opMessage opKind = iota
	opEntry
	opTranscript
	opFlush
	opClose
)

type op struct {
	kind   opKind
	data   json.RawMessage // a transcript line
	prep   *tree.Prepared  // a message
	entry  tree.EntryData
	reply  chan error
	result chan entryResult // opEntry: the new entry's id, or why not
}

type entryResult struct {
	id  string
	err error
}

// open starts the writer of a loaded or created session, whose writer
// lock unlock releases. fresh sessions get their sidecar written at once.
func (s *Store) open(ctx context.Context, sess *tree.Session, meta Metadata, fresh bool, unlock func()) (*Handle, error) {
	h := newHandle(ctx, s, sess, meta, s.cfg.queue)
	h.unlock = unlock
	if fresh {
		if err := s.writeMeta(ctx, meta, true); err != nil {
			h.Close(ctx)
			return nil, err
		}
	}
	if err := s.markOpen(ctx, sess.Name(), fresh); err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

func newHandle(ctx context.Context, s *Store, sess *tree.Session, meta Metadata, queue int) *Handle {
	h := &Handle{store: s, sess: sess, meta: meta, ctx: context.WithoutCancel(ctx), limit: max(queue, 1),
		wake: make(chan struct{}, 1), done: make(chan struct{}), taken: make(chan struct{})}
	h.timer = time.AfterFunc(time.Hour, func() {
		h.qmu.Lock()
		h.armed, h.due = false, true
		h.qmu.Unlock()
		h.signal()
	})
	h.timer.Stop()
	go h.run()
	return h
}

// signal wakes the writer (once, however often it is called meanwhile).
func (h *Handle) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// armLocked starts the timer for what is held, unless it runs (qmu held).
func (h *Handle) armLocked(d time.Duration) {
	if !h.armed {
		h.armed = true
		h.timer.Reset(max(d, 0))
	}
}

// ID is the session id.
func (h *Handle) ID() string { return h.sess.Header().ID }

// Path is the session file in the store.
func (h *Handle) Path() string { return h.sess.Name() }

// CheckpointDir is where this session's checkpoints belong (pass it to
// checkpoint.WithDir); Delete removes them with the session.
func (h *Handle) CheckpointDir() string { return backend.Join(SidecarDir(h.Path()), CheckpointsDir) }

// Session is the conversation tree, for reading (Context, Entries, Path):
// it holds what the writer has appended, so Flush first to see every
// queued message.
func (h *Handle) Session() *tree.Session { return h.sess }

// Metadata returns the current metadata, counting what was appended.
func (h *Handle) Metadata() Metadata {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.meta
}

// UpdateMetadata changes the metadata (model, title, exit reason, agent
// name); it is written with the next Flush or Close.
func (h *Handle) UpdateMetadata(update func(*Metadata)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, path := h.meta.ID, h.meta.Path
	update(&h.meta)
	h.meta.ID, h.meta.Path = id, path
	h.dirty, h.edited = true, true
}

// writeEvery is how many appended bytes the writer holds before it writes
// them without a Flush.
const writeEvery = 256 << 10

// commit writes what the session holds, syncing with sync (the writer's).
func (h *Handle) commit(ctx context.Context, force, sync bool) {
	if err := h.sess.Commit(ctx, force, sync); err != nil {
		h.latch(err)
	}
	h.pending = 0
	h.unsynced = !sync
	if sync {
		h.synced = time.Now()
	}
}

func (h *Handle) syncEvery() time.Duration {
	if h.store == nil {
		return 0
	}
	return h.store.cfg.syncEvery
}

// Err returns the latched write error, or nil.
func (h *Handle) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// AppendMessage queues msg, an AgentMessage JSON object with a role, to be
// appended at the leaf. A message that is not one (tree.ErrInvalid) is
// refused here, the handle unharmed. It waits only while the queue is full.
func (h *Handle) AppendMessage(ctx context.Context, msg json.RawMessage) error {
	p, err := tree.PrepareMessage(msg)
	if err != nil {
		return backend.PathErr("append", h.Path(), err)
	}
	return h.send(ctx, op{kind: opMessage, prep: p})
}

// Append appends an entry other than a message at the leaf (a compaction,
// a label, a model or thinking-level change, a custom entry, ...) and
// returns its id once the writer has taken it; it is durable with the next
// Flush. An entry the tree refuses (tree.ErrInvalid: a compaction or label
// naming no entry) is returned without stopping later appends.
func (h *Handle) Append(ctx context.Context, d tree.EntryData) (string, error) {
	if d == nil {
		return "", backend.PathErr("append", h.Path(), fmt.Errorf("%w: nil entry", tree.ErrInvalid))
	}
	res := make(chan entryResult, 1)
	if err := h.send(ctx, op{kind: opEntry, entry: d, result: res}); err != nil {
		return "", err
	}
	select {
	case r := <-res:
		return r.id, r.err
	case <-h.done:
		// The writer stopped (a latched error): no result comes.
		select {
		case r := <-res:
			return r.id, r.err
		default:
		}
		if err := h.Err(); err != nil {
			return "", err
		}
		return "", backend.PathErr("append", h.Path(), tree.ErrClosed)
	case <-ctx.Done():
		return "", backend.PathErr("append", h.Path(), ctx.Err())
	}
}

// AppendTranscript queues one SDK message for the transcript stream beside
// the tree (spec 001 section 7).
func (h *Handle) AppendTranscript(ctx context.Context, msg json.RawMessage) error {
	if !json.Valid(msg) {
		return backend.PathErr("append", h.Path(), fmt.Errorf("%w: transcript message is not JSON", tree.ErrInvalid))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, msg); err != nil {
		return backend.PathErr("append", h.Path(), fmt.Errorf("%w: %w", tree.ErrInvalid, err))
	}
	return h.send(ctx, op{kind: opTranscript, data: buf.Bytes()})
}

// send queues o. Messages and transcript lines are held for the writer;
// anything else wakes it. It waits while the queue is full.
func (h *Handle) send(ctx context.Context, o op) error {
	if err := h.Err(); err != nil {
		return err
	}
	size := len(o.data)
	if o.prep != nil {
		size = o.prep.Size()
	}
	for {
		h.qmu.Lock()
		if h.closed {
			h.qmu.Unlock()
			return backend.PathErr("append", h.Path(), tree.ErrClosed)
		}
		if len(h.queue) < h.limit {
			h.queue = append(h.queue, o)
			h.qbytes += size
			if o.prep != nil {
				// Counted as queued, in queue order: Metadata is current.
				h.mu.Lock()
				h.meta.add(o.prep.Role(), o.prep.Usage(), o.prep.Message)
				h.dirty = true
				h.mu.Unlock()
			}
			every := h.syncEvery()
			// The writer takes every 32nd message at once, framing
			// what is queued while the caller goes on.
			now := o.kind != opMessage && o.kind != opTranscript || h.qbytes >= writeEvery || every == 0 || len(h.queue)%32 == 0
			if !now {
				h.armLocked(every)
			}
			h.qmu.Unlock()
			if now {
				h.signal()
			}
			return nil
		}
		taken := h.taken
		h.qmu.Unlock()
		h.signal()
		select {
		case <-taken:
		case <-h.done:
			if err := h.Err(); err != nil {
				return err
			}
		case <-ctx.Done():
			return backend.PathErr("append", h.Path(), ctx.Err())
		}
	}
}

// Flush waits until everything queued before it is appended and durable.
// The sidecar's counts are written at Close (listings count on from the
// file meanwhile); what UpdateMetadata changed is written here too.
func (h *Handle) Flush(ctx context.Context) error {
	reply := make(chan error, 1)
	if err := h.send(ctx, op{kind: opFlush, reply: reply}); err != nil {
		return err
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return backend.PathErr("flush", h.Path(), ctx.Err())
	}
}

// Close drains the queue, makes it durable, writes the metadata, closes
// the files and releases the writer lock. It returns the latched error.
func (h *Handle) Close(ctx context.Context) error {
	h.qmu.Lock()
	if !h.closed {
		h.queue = append(h.queue, op{kind: opClose}) // past the limit: never waits
	}
	h.closed = true
	h.qmu.Unlock()
	h.signal()
	select {
	case <-h.done:
	case <-ctx.Done():
		return backend.PathErr("close", h.Path(), ctx.Err())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closeErr
}

// run is the background writer: it takes the whole queue each time it is
// woken.
func (h *Handle) run() {
	defer close(h.done)
	for range h.wake {
		h.qmu.Lock()
		batch := h.queue
		h.queue, h.spare = h.spare[:0], nil
		h.qbytes = 0
		due := h.due
		h.due = false
		close(h.taken)
		h.taken = make(chan struct{})
		h.qmu.Unlock()
		if h.process(batch, due) {
			h.timer.Stop()
			return
		}
		clear(batch)
		h.qmu.Lock()
		h.spare = batch
		if h.pending > 0 || h.unsynced {
			h.armLocked(h.syncEvery() - time.Since(h.synced))
		}
		h.qmu.Unlock()
	}
}

// process appends a batch, syncs once, and answers its flushes; due: the
// sync interval ran out. It reports whether the batch closed the handle.
func (h *Handle) process(batch []op, due bool) (closed bool) {
	ctx := h.ctx
	var trans bytes.Buffer
	appended, added := false, 0
	h.sess.Hold(true)
	for _, o := range batch {
		switch o.kind {
		case opMessage, opEntry:
			if err := h.Err(); err != nil {
				if o.result != nil {
					o.result <- entryResult{err: err}
				}
				continue
			}
			var e *tree.Entry
			var err error
			if o.kind == opMessage {
				e, err = h.sess.Append(ctx, o.prep)
			} else {
				e, err = h.sess.Append(ctx, o.entry)
			}
			h.mu.Lock()
			switch {
			case err != nil && o.kind == opEntry && errors.Is(err, tree.ErrInvalid):
				// Refused before anything was written: the caller
				// hears of it, later appends go on.
				o.result <- entryResult{err: err}
			case err != nil:
				h.latchLocked(err)
				if o.result != nil {
					o.result <- entryResult{err: h.err}
				}
			default:
				if o.kind == opEntry {
					h.meta.count(e) // messages were counted as queued
				}
				h.dirty, appended = true, true
				added += len(e.JSON()) + 1
				if o.result != nil {
					o.result <- entryResult{id: e.ID()}
				}
			}
			h.mu.Unlock()
		case opTranscript:
			trans.Write(o.data)
			trans.WriteByte('\n')
		case opFlush, opClose:
			if o.kind == opClose {
				closed = true
			}
		}
	}
	h.sess.Hold(false)
	if trans.Len() > 0 && h.Err() == nil {
		h.writeTranscript(ctx, trans.Bytes())
	}
	flushed := closed
	for _, o := range batch {
		if o.kind == opFlush {
			flushed = true
		}
	}
	switch {
	case h.Err() != nil:
	case flushed:
		// A Flush or Close promises durability for everything before
		// it, a prompt awaiting its first reply included.
		h.commit(ctx, true, true)
	case appended || h.pending > 0 || h.unsynced:
		// Held until a Flush, writeEvery bytes, or the sync interval
		// (then written and synced): appends cost what the disk costs.
		h.pending += added
		if sync := due || time.Since(h.synced) >= h.syncEvery(); sync || h.pending >= writeEvery {
			h.commit(ctx, false, sync)
		}
	}
	h.mu.Lock()
	needMeta := closed || flushed && h.edited
	h.mu.Unlock()
	if needMeta {
		h.syncMeta(ctx)
	}
	if closed {
		h.finish(ctx)
	}
	for _, o := range batch {
		if o.reply != nil {
			o.reply <- h.Err()
		}
	}
	return closed
}

func (h *Handle) writeTranscript(ctx context.Context, lines []byte) {
	if h.store == nil {
		return // persistence off
	}
	h.mu.Lock()
	w := h.trans
	if w == nil {
		name := backend.Join(SidecarDir(h.Path()), TranscriptFile)
		// A line a killed writer tore was never acknowledged: the
		// appender drops it so the next one is not glued to it.
		w = jsonl.NewAppender(h.store.st, name, jsonl.Append)
		w.Dropped = func(n int) {
			h.store.cfg.log.Warn("trove/session: dropped a torn last transcript line", "file", name, "bytes", n)
		}
		h.trans = w
	}
	h.mu.Unlock()
	if err := w.Write(ctx, lines); err != nil {
		h.latch(err)
		return
	}
	if err := w.Sync(); err != nil {
		h.latch(err)
	}
}

// syncMeta writes meta.json when it changed.
func (h *Handle) syncMeta(ctx context.Context) {
	h.mu.Lock()
	if !h.dirty || h.err != nil || h.store == nil {
		h.mu.Unlock()
		return
	}
	h.meta.UpdatedAt = h.store.cfg.now().UTC()
	m := h.meta
	edited := h.edited
	h.dirty, h.edited = false, false
	h.mu.Unlock()
	if err := h.store.writeMeta(ctx, m, false); err != nil {
		h.latch(err)
		return
	}
	if edited {
		h.store.forget(ctx, m.Path) // its file may not have moved
	}
}

// finish closes the files and releases the lock.
func (h *Handle) finish(ctx context.Context) {
	h.mu.Lock()
	w := h.trans
	h.trans = nil
	h.mu.Unlock()
	if w != nil {
		if err := w.Close(); err != nil {
			h.latch(err)
		}
	}
	if err := h.sess.Close(ctx); err != nil {
		h.latch(err)
	}
	if h.store != nil && h.Err() == nil {
		// Kept after a failure: listings then count from the file.
		if err := h.store.unmarkOpen(ctx, h.Path()); err != nil {
			h.store.cfg.log.Warn("trove/session: could not remove the open marker", "session", h.Path(), "err", err)
		}
	}
	if h.unlock != nil {
		h.unlock()
	}
	h.mu.Lock()
	h.closeErr = h.err
	h.mu.Unlock()
}

func (h *Handle) latch(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latchLocked(err)
}

func (h *Handle) latchLocked(err error) {
	if h.err == nil {
		h.err = err
	}
}
