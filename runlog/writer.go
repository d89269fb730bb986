package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonl"
)

// Writer appends the records of one run to its file. It is safe for
// concurrent use: records land in the order their calls take the writer's
// lock, which is the order they are observed (the run log spec, section 4).
//
// Durability. Each record is one Write of one whole line. The writer syncs
// (the line is durable when the call returns) after the header, run.status,
// run.error and run.end, at Sync and at Close; WithSyncOn adds more types.
// The header is synced so that a run that crashes still exists and reads as
// incomplete; run.end so that a finished run is known finished; run.status
// and run.error because they are where a run stops to wait for a user or is
// about to fail, the moments a process is most often killed. Between these
// points a crash loses at most the unsynced tail, never a line in the middle,
// so seq order and request/response pairing survive as a prefix. A blob for
// an externalized tool output is durable before the line naming it is
// written.
//
// The first failed write or sync is latched: the file may end in a partial
// line, so every later call returns that error.
type Writer struct {
	s         *Store
	path      string
	runID     string
	sessionID string

	mu        sync.Mutex
	w         *jsonl.Appender // latches the first failed write or sync
	buf       bytes.Buffer
	enc       *json.Encoder
	closed    bool
	ended     bool
	lastEvent int64 // last agent.event seq, -1 before the first
	lastReq   int64 // last llm.request seq
	hasReq    bool
	open      map[int64]struct{} // requests awaiting their response
}

// Create starts the run described by h: it fills the header's defaults (type,
// schema_version 1, a new UUIDv4 run_id, started_at now), creates the run
// file, which must not exist (fs.ErrExist), and writes the header durably.
// h is updated with what was filled in.
func (s *Store) Create(ctx context.Context, h *Header) (*Writer, error) {
	if h == nil {
		return nil, fmt.Errorf("runlog: create: %w: nil header", ErrInvalid)
	}
	h.Type = TypeHeader
	if h.SchemaVersion == 0 {
		h.SchemaVersion = SchemaVersion
	}
	if h.RunID == "" {
		h.RunID = NewID()
	}
	if h.StartedAt.IsZero() {
		h.StartedAt = TimeOf(s.now())
	}
	if err := checkID("run id", h.RunID); err != nil {
		return nil, backend.PathErr("create", h.RunID, err)
	}
	if h.SessionID != "" {
		if err := checkID("session id", h.SessionID); err != nil {
			return nil, backend.PathErr("create", h.RunID, err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, backend.PathErr("create", h.RunID, fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	return s.create(ctx, h, buf.Bytes())
}

// CreateRaw starts a run whose header is given as its JSON object and
// written byte for byte, as when copying a run read with Records: header
// fields this version does not know survive. It must be a header with a
// valid run_id and a started_at.
func (s *Store) CreateRaw(ctx context.Context, header []byte) (*Writer, error) {
	header = bytes.TrimSpace(header)
	var b bytes.Buffer
	if err := json.Compact(&b, header); err != nil {
		return nil, fmt.Errorf("runlog: create: %w: header is not JSON: %v", ErrInvalid, err)
	}
	if bytes.IndexByte(header, '\n') >= 0 {
		header = b.Bytes()
	}
	e, err := parseLine(header)
	h, ok := e.Record.(*Header)
	switch {
	case err != nil:
		return nil, fmt.Errorf("runlog: create: %w: %v", ErrInvalid, err)
	case !ok:
		return nil, fmt.Errorf("runlog: create: %w: a %q record is not a header", ErrInvalid, clip(e.Type))
	case h.StartedAt.IsZero():
		return nil, backend.PathErr("create", h.RunID, fmt.Errorf("%w: header without a valid started_at", ErrInvalid))
	}
	if err := checkID("run id", h.RunID); err != nil {
		return nil, backend.PathErr("create", h.RunID, err)
	}
	line := make([]byte, 0, len(header)+1)
	return s.create(ctx, h, append(append(line, header...), '\n'))
}

// create opens the run file of h exclusively and writes its header line
// durably.
func (s *Store) create(ctx context.Context, h *Header, line []byte) (*Writer, error) {
	path := RunPath(h.RunID, h.StartedAt.Time)
	bw := jsonl.NewAppender(s.st, path, jsonl.Create)
	err := bw.Write(ctx, line)
	if err == nil {
		err = bw.Sync()
	}
	if err != nil {
		created := bw.Opened()
		bw.Close()
		if created {
			// Best effort: a failed Create should leave no half run behind.
			_ = s.st.Unlink(context.WithoutCancel(ctx), path)
		}
		return nil, backend.PathErr("create", path, err)
	}
	w := &Writer{s: s, path: path, runID: h.RunID, sessionID: h.SessionID, w: bw, lastEvent: -1, open: map[int64]struct{}{}}
	w.enc = json.NewEncoder(&w.buf)
	// Tool outputs are full of <, > and &: escaping them would bloat lines.
	w.enc.SetEscapeHTML(false)
	return w, nil
}

// RunID returns the id of the run.
func (w *Writer) RunID() string { return w.runID }

// Path returns the run file's name in the storage.
func (w *Writer) Path() string { return w.path }

// Append writes rec, one of the record types but *Header, after checking the
// order the run log spec (section 4) asks for: agent.event seq increasing, llm.request
// seq increasing, llm.response answering an open llm.request, nothing after
// run.end (ErrOrder, nothing written). It fills Type, RunID (and run.start's
// SessionID from the header) and TS when they are empty. A tool output above
// the threshold goes to the blob store first. An *Unknown record is written
// as its Raw JSON.
func (w *Writer) Append(ctx context.Context, rec Record) error {
	switch r := rec.(type) {
	case nil:
		return backend.PathErr("append", w.path, fmt.Errorf("%w: nil record", ErrInvalid))
	case *Header:
		return backend.PathErr("append", w.path, fmt.Errorf("%w: the header is written by Create", ErrInvalid))
	case *Unknown:
		return w.AppendRaw(ctx, r.Raw)
	case *ToolOutput:
		if err := w.check(ctx); err != nil {
			return err
		}
		out, err := w.prepareOutput(ctx, r)
		if err != nil {
			return err
		}
		err = w.write(ctx, out, nil, nil)
		r.Base = out.Base
		return err
	}
	return w.write(ctx, rec, nil, nil)
}

// Event appends an agent.event with the next seq and returns the seq. event
// is the event object: json.RawMessage or []byte as is, anything else
// marshalled.
func (w *Writer) Event(ctx context.Context, event any) (int64, error) {
	raw, err := rawJSON(event)
	if err != nil {
		return 0, backend.PathErr("append", w.path, fmt.Errorf("%w: event: %v", ErrInvalid, err))
	}
	rec := &AgentEvent{Event: raw}
	err = w.write(ctx, rec, nil, func() { rec.Seq = w.lastEvent + 1 })
	return rec.Seq, err
}

// Request appends r as an llm.request with the next invocation seq (1 for
// the first) and returns the seq, which its LLMResponse must carry.
func (w *Writer) Request(ctx context.Context, r *LLMRequest) (int64, error) {
	if r == nil {
		return 0, backend.PathErr("append", w.path, fmt.Errorf("%w: nil request", ErrInvalid))
	}
	err := w.write(ctx, r, nil, func() { r.Seq = w.lastReq + 1 })
	return r.Seq, err
}

// ToolOutputFrom appends r with the tool's output read from src, streamed to
// the blob store when it exceeds the threshold, so an output of any size
// costs bounded memory. r.ResultRaw and r.OutputRef are ignored.
func (w *Writer) ToolOutputFrom(ctx context.Context, r *ToolOutput, src io.Reader) error {
	if r == nil || src == nil {
		return backend.PathErr("append", w.path, fmt.Errorf("%w: nil tool output or reader", ErrInvalid))
	}
	if err := w.check(ctx); err != nil {
		return err
	}
	out := *r
	out.OutputRef, out.resolved, out.stored = nil, false, ""
	head, err := io.ReadAll(io.LimitReader(src, w.s.threshold+1))
	if err != nil {
		return backend.PathErr("append", w.path, err)
	}
	switch {
	case int64(len(head)) <= w.s.threshold:
		out.ResultRaw = string(head)
	case w.s.blobs == nil:
		rest, err := io.ReadAll(src)
		if err != nil {
			return backend.PathErr("append", w.path, err)
		}
		out.ResultRaw = string(head) + string(rest)
	default:
		if err := w.externalize(ctx, &out, io.MultiReader(bytes.NewReader(head), src)); err != nil {
			return err
		}
	}
	err = w.write(ctx, &out, nil, nil)
	r.Base = out.Base
	return err
}

// AppendRaw writes one record given as its JSON object, byte for byte (a
// line read back, a custom x.<org>.<name> record). It must be an object with
// a "type" other than "header"; known types are checked as Append checks
// them, but nothing is filled in.
func (w *Writer) AppendRaw(ctx context.Context, raw []byte) error {
	raw = bytes.TrimSpace(raw)
	if bytes.IndexByte(raw, '\n') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return backend.PathErr("append", w.path, fmt.Errorf("%w: not JSON: %v", ErrInvalid, err))
		}
		raw = b.Bytes()
	}
	e, err := parseLine(raw)
	if err != nil {
		return backend.PathErr("append", w.path, fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	if e.Type == TypeHeader {
		return backend.PathErr("append", w.path, fmt.Errorf("%w: the header is written by Create", ErrInvalid))
	}
	return w.write(ctx, e.Record, raw, nil)
}

// Sync makes everything appended so far durable.
func (w *Writer) Sync(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(ctx); err != nil {
		return err
	}
	return w.w.Sync()
}

// Close syncs and releases the writer. A run closed without run.end reads as
// incomplete. Close twice is not an error.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.w.Close()
}

// check fails fast, before any blob is written, when the writer cannot
// append.
func (w *Writer) check(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.usable(ctx)
}

func (w *Writer) usable(ctx context.Context) error {
	switch {
	case w.closed:
		return backend.PathErr("append", w.path, ErrClosed)
	case w.w.Err() != nil:
		return w.w.Err()
	}
	return backend.PathErr("append", w.path, ctx.Err())
}

// write appends rec (encoded, or raw when given) under the lock; assign, if
// set, numbers rec before the order check.
func (w *Writer) write(ctx context.Context, rec Record, raw []byte, assign func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(ctx); err != nil {
		return err
	}
	if assign != nil {
		assign()
	}
	if err := w.order(rec, raw == nil); err != nil {
		return backend.PathErr("append", w.path, err)
	}
	w.buf.Reset()
	if raw == nil {
		if err := w.enc.Encode(rec); err != nil {
			return backend.PathErr("append", w.path, fmt.Errorf("%w: %v", ErrInvalid, err))
		}
	} else {
		w.buf.Write(raw)
		w.buf.WriteByte('\n')
	}
	err := w.w.Write(ctx, w.buf.Bytes())
	if w.buf.Cap() > 1<<20 {
		w.buf = bytes.Buffer{} // do not keep one huge line's buffer alive
		w.enc = json.NewEncoder(&w.buf)
		w.enc.SetEscapeHTML(false)
	}
	if err != nil {
		return err
	}
	w.advance(rec)
	if rec != nil && w.s.syncOn[rec.RecordType()] {
		return w.w.Sync()
	}
	return nil
}

// order checks rec against the run log spec (section 4) and, when fill is set, fills
// its common fields.
func (w *Writer) order(rec Record, fill bool) error {
	if w.ended {
		return fmt.Errorf("%w: run %s has ended", ErrOrder, w.runID)
	}
	if b, ok := rec.(interface{ base() *Base }); ok {
		base := b.base()
		if fill {
			base.Type = rec.RecordType()
			if base.RunID == "" {
				base.RunID = w.runID
			}
			if base.TS.IsZero() {
				base.TS = TimeOf(w.s.now())
			}
		}
		if base.RunID != "" && base.RunID != w.runID {
			return fmt.Errorf("%w: record of run %q in run %s", ErrInvalid, clip(base.RunID), w.runID)
		}
	}
	switch r := rec.(type) {
	case *RunStart:
		if fill && r.SessionID == "" {
			r.SessionID = w.sessionID
		}
	case *AgentEvent:
		if r.Seq <= w.lastEvent {
			return fmt.Errorf("%w: agent.event seq %d after %d", ErrOrder, r.Seq, w.lastEvent)
		}
		if fill && len(r.Event) == 0 {
			r.Event = json.RawMessage("{}")
		}
	case *LLMRequest:
		if r.Seq < 0 || (w.hasReq && r.Seq <= w.lastReq) {
			return fmt.Errorf("%w: llm.request seq %d after %d", ErrOrder, r.Seq, w.lastReq)
		}
		if fill && r.Input.Messages == nil {
			r.Input.Messages = []json.RawMessage{}
		}
	case *LLMResponse:
		if _, ok := w.open[r.Seq]; !ok {
			return fmt.Errorf("%w: llm.response seq %d answers no open llm.request", ErrOrder, r.Seq)
		}
		if fill && r.Output.Messages == nil {
			r.Output.Messages = []json.RawMessage{}
		}
	}
	return nil
}

// advance records what a written rec means for the checks of later ones.
func (w *Writer) advance(rec Record) {
	switch r := rec.(type) {
	case *AgentEvent:
		w.lastEvent = r.Seq
	case *LLMRequest:
		w.lastReq, w.hasReq = r.Seq, true
		w.open[r.Seq] = struct{}{}
	case *LLMResponse:
		delete(w.open, r.Seq)
	case *RunEnd:
		w.ended = true
	}
}

// prepareOutput returns the tool output to encode: r itself, or a copy whose
// output went to the blob store.
func (w *Writer) prepareOutput(ctx context.Context, r *ToolOutput) (*ToolOutput, error) {
	s := w.s
	switch {
	case r.resolved && r.OutputRef != nil:
		// Read back from a blob: write the same line again, making sure
		// this store has the blob (Put is idempotent).
		cp := *r
		if s.blobs == nil {
			cp.OutputRef = nil // no store to hold it: keep the output inline
			return &cp, nil
		}
		if err := w.externalize(ctx, &cp, strings.NewReader(r.ResultRaw)); err != nil {
			return nil, err
		}
		if cp.OutputRef.ID == r.OutputRef.ID {
			cp.OutputRef, cp.ResultRaw = r.OutputRef, r.stored
		}
		return &cp, nil
	case r.OutputRef == nil && s.blobs != nil && int64(len(r.ResultRaw)) > s.threshold:
		cp := *r
		if err := w.externalize(ctx, &cp, strings.NewReader(r.ResultRaw)); err != nil {
			return nil, err
		}
		return &cp, nil
	}
	return r, nil
}

// externalize streams src to the blob store and points out at it.
func (w *Writer) externalize(ctx context.Context, out *ToolOutput, src io.Reader) error {
	cr := &countReader{r: src}
	ref, err := w.s.blobs.PutReader(ctx, cr)
	if err != nil {
		return backend.PathErr("append", w.path, fmt.Errorf("%w: %w", ErrBlob, err))
	}
	lines := cr.lines
	if cr.n > 0 && cr.last != '\n' {
		lines++
	}
	out.OutputRef = &OutputRef{ID: ref.String(), ByteSize: cr.n, LineCount: lines}
	out.ResultRaw = outputNotice(cr.n, lines, ref)
	out.resolved, out.stored = false, ""
	return nil
}

// outputNotice is what result_raw holds for an externalized output, so a
// reader that does not resolve refs still sees what happened.
func outputNotice(n, lines int64, ref cas.Ref) string {
	return fmt.Sprintf("[trove: tool output of %d bytes, %d lines, stored as %s]", n, lines, ref)
}

// countReader counts bytes and newlines on their way to the blob store.
type countReader struct {
	r     io.Reader
	n     int64
	lines int64
	last  byte
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n += int64(n)
		c.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
		c.last = p[n-1]
	}
	return n, err
}

// rawJSON returns v as JSON: raw bytes are checked, not re-encoded.
func rawJSON(v any) (json.RawMessage, error) {
	switch b := v.(type) {
	case json.RawMessage:
		if !json.Valid(b) {
			return nil, errors.New("not valid JSON")
		}
		return b, nil
	case []byte:
		if !json.Valid(b) {
			return nil, errors.New("not valid JSON")
		}
		return b, nil
	}
	return json.Marshal(v)
}
