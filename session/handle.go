package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonl"
	"github.com/trovekit/trove/session/tree"
)

// Handle is a session open for writing. An append is checked in the
// caller's goroutine and queued; it returns without waiting for the disk,
// and without waking anything. The queue is taken whole, framed into entry
// lines, written with one write and made durable with one sync (group
// commit) by whoever needs it: Flush, Append and Close in their caller's
// goroutine (no hand-off to wait for), a background writer when 256 KiB
// are held, the queue is full or the sync interval runs out. Flush returns
// once everything queued before it is durable. The first write error is
// latched: every later call returns it. A Handle is safe for concurrent
// use.
type Handle struct {
	store  *Store // nil for a NoopStore handle
	sess   *tree.Session
	unlock func()
	lease  *lease          // the writer lease on a store without locks
	prev   *LockHolder     // the expired lease it took over
	ctx    context.Context // for writes: the opener's values, never cancelled
	limit  int             // ops queued before a sender waits
	timer  *time.Timer     // wakes the writer when held appends are due
	wake   chan struct{}   // one pending wake-up of the background writer
	done   chan struct{}   // closed at Close: senders stop waiting, the writer ends

	qmu    sync.Mutex // guards the queue and what follows; taken before mu
	queue  []op
	spare  []op // the last batch, reused
	qbytes int  // message and transcript bytes queued
	closed bool
	armed  bool          // the timer runs
	due    bool          // the timer fired: sync what is held
	taken  chan struct{} // closed when the queue is taken

	wmu      sync.Mutex // held to take and write the queue; taken before qmu
	finished bool       // Close ran
	closing  bool       // Close runs: it writes the metadata itself
	synced   time.Time  // the last sync
	pending  int        // bytes appended and not yet written
	unsynced bool       // written and not yet synced

	mu       sync.Mutex // guards what follows
	meta     Metadata
	dirty    bool // meta changed since it was written
	edited   bool // UpdateMetadata changed it: written at the next Flush
	err      error
	trans    *jsonl.Appender // transcript.jsonl, written under wmu
	closeErr error
}

type opKind int

const (
	opMessage opKind = iota
	opTranscript
)

type op struct {
	kind opKind
	data json.RawMessage // a transcript line
	prep *tree.Prepared  // a message
}

// open starts the writer of a loaded or created session, whose writer
// lock unlock releases. fresh sessions get their sidecar written at once.
func (s *Store) open(ctx context.Context, sess *tree.Session, meta Metadata, fresh bool, wl *writerLock) (*Handle, error) {
	h := newHandle(ctx, s, sess, meta, s.cfg.queue)
	h.unlock, h.lease, h.prev = wl.unlock, wl.lease, wl.prev
	if fresh {
		if err := s.writeMeta(ctx, meta, fileSize(sess), true); err != nil {
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

// TookOver reports the holder whose expired lease this handle's took
// over (a writer that died, or was cut off, without closing), if any.
func (h *Handle) TookOver() (LockHolder, bool) {
	if h.prev == nil {
		return LockHolder{}, false
	}
	return *h.prev, true
}

// fence latches ErrLeaseLost once the writer lease ran out: a write that
// returned after it is not acknowledged, since another machine may hold
// the session by now.
func (h *Handle) fence() {
	if h.lease != nil {
		if err := h.lease.check(); err != nil {
			h.latch(err)
		}
	}
}

// commit writes what the session holds, syncing with sync (the writer's).
func (h *Handle) commit(ctx context.Context, force, sync bool) {
	if err := h.sess.Commit(ctx, force, sync); err != nil {
		h.latch(err)
	}
	h.fence()
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
// appended at the leaf; msg is copied, so the caller may reuse it. A
// message that is not one (tree.ErrInvalid) is refused here, the handle
// unharmed. It waits only while the queue is full.
func (h *Handle) AppendMessage(ctx context.Context, msg json.RawMessage) error {
	// Held until written: the caller may reuse its buffer at once.
	p, err := tree.PrepareMessageCopy(msg)
	if err != nil {
		return backend.PathErr("append", h.Path(), err)
	}
	return h.send(ctx, op{kind: opMessage, prep: p})
}

// Append appends an entry other than a message at the leaf (a compaction,
// a label, a model or thinking-level change, a custom entry, ...), after
// the messages queued before it, and returns its id; it is durable with
// the next Flush. An entry the tree refuses (tree.ErrInvalid: a
// compaction or label naming no entry) is returned without stopping later
// appends.
func (h *Handle) Append(ctx context.Context, d tree.EntryData) (string, error) {
	if d == nil {
		return "", backend.PathErr("append", h.Path(), fmt.Errorf("%w: nil entry", tree.ErrInvalid))
	}
	if err := ctx.Err(); err != nil {
		return "", backend.PathErr("append", h.Path(), err)
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.finished {
		return "", backend.PathErr("append", h.Path(), tree.ErrClosed)
	}
	h.drainLocked(false)
	if err := h.Err(); err != nil {
		return "", err
	}
	h.sess.Hold(true) // written with the next batch, as messages are
	e, err := h.sess.Append(h.ctx, d)
	h.sess.Hold(false)
	switch {
	case errors.Is(err, tree.ErrInvalid):
		// Refused before anything was written: later appends go on.
		return "", err
	case err != nil:
		h.latch(err)
		return "", h.Err()
	}
	h.mu.Lock()
	h.meta.count(e)
	h.dirty = true
	h.mu.Unlock()
	h.pending += len(e.JSON()) + 1
	h.armHeld()
	return e.ID(), nil
}

// AppendTranscript queues one SDK message for the transcript stream beside
// the tree (the session store API, section 7).
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

// send queues o, held for a Flush or the writer. It waits while the queue
// is full.
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
			now := h.qbytes >= writeEvery || every == 0
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
		case <-ctx.Done():
			return backend.PathErr("append", h.Path(), ctx.Err())
		}
		if err := h.Err(); err != nil {
			return err
		}
	}
}

// Flush waits until everything queued before it is appended and durable.
// The sidecar's counts are written at Close (listings count on from the
// file meanwhile); what UpdateMetadata changed is written here too.
func (h *Handle) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return backend.PathErr("flush", h.Path(), err)
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.finished {
		if err := h.Err(); err != nil {
			return err
		}
		return backend.PathErr("flush", h.Path(), tree.ErrClosed)
	}
	h.drainLocked(true)
	return h.Err()
}

// Close writes what is queued, makes it durable, writes the metadata,
// closes the files and releases the writer lock. It returns the latched
// error.
func (h *Handle) Close(ctx context.Context) error {
	h.qmu.Lock()
	h.closed = true
	h.qmu.Unlock()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if !h.finished {
		h.closing = true
		h.drainLocked(true)
		h.timer.Stop()
		m, wrote := h.syncMeta(h.ctx, true)
		h.finish(h.ctx, m, wrote)
		h.finished = true
		close(h.done)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closeErr
}

// run is the background writer: it takes the queue when woken (the sync
// interval, 256 KiB held, a full queue).
func (h *Handle) run() {
	for {
		select {
		case <-h.wake:
		case <-h.done:
			return
		}
		h.wmu.Lock()
		if !h.finished {
			h.drainLocked(false)
		}
		h.wmu.Unlock()
	}
}

// drainLocked takes the queue, appends it to the tree and writes it: with
// flush, written and synced, a prompt awaiting its first reply included;
// else when the interval ran out (synced) or 256 KiB are held (wmu held).
func (h *Handle) drainLocked(flush bool) {
	h.qmu.Lock()
	batch := h.queue
	h.queue, h.spare = h.spare[:0], nil
	h.qbytes = 0
	due := h.due
	h.due = false
	close(h.taken)
	h.taken = make(chan struct{})
	h.qmu.Unlock()

	ctx := h.ctx
	var trans bytes.Buffer
	h.sess.Hold(true)
	for _, o := range batch {
		switch o.kind {
		case opMessage:
			if h.Err() != nil {
				continue
			}
			e, err := h.sess.Append(ctx, o.prep)
			if err != nil {
				h.latch(err)
				continue
			}
			h.pending += len(e.JSON()) + 1
		case opTranscript:
			trans.Write(o.data)
			trans.WriteByte('\n')
		}
	}
	h.sess.Hold(false)
	if trans.Len() > 0 && h.Err() == nil {
		h.writeTranscript(ctx, trans.Bytes())
	}
	switch {
	case h.Err() != nil:
	case flush:
		h.commit(ctx, true, true)
		h.mu.Lock()
		edited := h.edited
		h.mu.Unlock()
		if edited && !h.closing {
			h.syncMeta(ctx, false)
		}
	case h.pending > 0 || h.unsynced:
		// Held until a Flush, writeEvery bytes, or the sync interval
		// (then written and synced): appends cost what the disk costs.
		if sync := due || time.Since(h.synced) >= h.syncEvery(); sync || h.pending >= writeEvery {
			h.commit(ctx, false, sync)
		}
	}
	clear(batch)
	h.qmu.Lock()
	h.spare = batch
	h.qmu.Unlock()
	h.armHeld()
}

// armHeld starts the timer when appends are held unwritten or unsynced
// (wmu held), so the sync interval bounds them.
func (h *Handle) armHeld() {
	if h.pending > 0 || h.unsynced {
		h.qmu.Lock()
		h.armLocked(h.syncEvery() - time.Since(h.synced))
		h.qmu.Unlock()
	}
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
	h.fence()
}

// syncMeta writes meta.json when it changed, and returns what it wrote.
// What UpdateMetadata changed leaves the listing index's record stale
// (the file need not move): dropped, or at Close on a store whose writers
// keep the index, replaced by finish.
func (h *Handle) syncMeta(ctx context.Context, closing bool) (Metadata, bool) {
	// Messages are counted as queued: the file's size (written and
	// synced, the queue drained before; wmu held) goes with the counts
	// only while none is queued (a Flush's caller may append meanwhile).
	size := fileSize(h.sess)
	h.qmu.Lock()
	queued := slices.ContainsFunc(h.queue, func(o op) bool { return o.prep != nil })
	h.mu.Lock()
	h.qmu.Unlock()
	if !h.dirty || h.err != nil || h.store == nil {
		h.mu.Unlock()
		return Metadata{}, false
	}
	h.meta.UpdatedAt = h.store.cfg.now().UTC()
	h.meta.FileSize = 0
	if !queued {
		h.meta.FileSize = size
	}
	m := h.meta
	edited := h.edited
	h.dirty, h.edited = false, false
	h.mu.Unlock()
	if err := h.store.writeMeta(ctx, m, m.FileSize, false); err != nil {
		h.latch(err)
		return Metadata{}, false
	}
	h.fence()
	if edited && !(closing && h.store.keepsIndex()) {
		h.store.forget(ctx, m.Path) // its file may not have moved
	}
	return m, true
}

// finish closes the files and releases the lock. m is the metadata Close
// wrote (wrote: it did): on a store whose writers keep the listing index
// current, its record goes there before the open marker goes, so a
// listing reads the session's files until the record is in place.
func (h *Handle) finish(ctx context.Context, m Metadata, wrote bool) {
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
	h.fence()
	if h.store != nil && h.Err() == nil && h.noteClosed(ctx, m, wrote) {
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

// noteClosed puts the record of the session its Close wrote into the
// listing index, where writers keep it; false when that failed, and the
// open marker must stay to have listings read the session's files.
func (h *Handle) noteClosed(ctx context.Context, m Metadata, wrote bool) bool {
	if !wrote || !h.store.keepsIndex() {
		return true
	}
	size, ok := h.sess.Size()
	if !ok {
		return true
	}
	if err := h.store.note(ctx, m, size); err != nil {
		h.store.cfg.log.Warn("trove/session: could not update the listing index; the open marker stays", "session", h.Path(), "err", err)
		return false
	}
	return true
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
