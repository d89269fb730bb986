package session

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session/tree"
)

// Metadata is a session's sidecar meta.json: the fields of the session store API, section
// 3.1, kept current from the messages appended, without rereading the log.
type Metadata struct {
	ID           string    `json:"id"`
	Path         string    `json:"path"`         // the session file in the store
	ProjectHash  string    `json:"project_hash"` // the cwd's directory under sessions/ (EncodeCwd)
	Cwd          string    `json:"cwd"`
	Title        string    `json:"title,omitempty"`
	Model        string    `json:"model,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
	TurnCount    int       `json:"turn_count"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	TotalTokens  int64     `json:"total_tokens"`
	CostUSD      float64   `json:"total_cost_usd"`
	ExitReason   string    `json:"exit_reason,omitempty"`
	ParentID     string    `json:"parent_id,omitempty"` // the session this one was forked from
	AgentName    string    `json:"agent_name,omitempty"`
	FirstMessage string    `json:"first_message,omitempty"`
	// FileSize is the size of the session file the counts are of, set by
	// the store: in meta.json, the file's size when it was written (0: not
	// recorded, an older sidecar); the file only grows, or is rewritten to
	// another size, so while it has this size the counts are current, and
	// no clock is asked. From List and Metadata: the file as they saw it.
	FileSize int64 `json:"file_size,omitempty"`
}

// lags reports whether the file, now size bytes and last changed at mod,
// may hold entries m does not count. With its size recorded, exactly when
// the size differs; else when the file's time (the store's clock) is after
// the sidecar's (the writer's clock), which skew between them misleads.
func (m *Metadata) lags(size int64, mod time.Time) bool {
	if m.FileSize > 0 {
		return size != m.FileSize
	}
	return mod.After(m.UpdatedAt)
}

// count adds one appended entry to the running totals.
func (m *Metadata) count(e *tree.Entry) {
	if e.Type() == tree.TypeMessage {
		m.add(e.Role(), e.Usage(), func() json.RawMessage { return e.Field("message") })
	}
}

// take counts one entry of a file read from its start: its message, or
// the model it changes to.
func (m *Metadata) take(e *tree.Entry) {
	m.count(e)
	if e.Type() == tree.TypeModelChange {
		if d, err := e.Data(); err == nil {
			if mc, ok := d.(*tree.ModelChange); ok && mc.Role == "" {
				m.Model = mc.Model
			}
		}
	}
}

// add counts one message of role with its totals; msg is asked for only
// while the first user message is not known.
func (m *Metadata) add(role string, u tree.Usage, msg func() json.RawMessage) {
	m.MessageCount++
	if role == "user" {
		m.TurnCount++
		if m.FirstMessage == "" {
			m.FirstMessage = firstLine(tree.MessageText(msg()))
		}
	}
	// Usage is optional: a message without it counts as one.
	if u.Model != "" {
		m.Model = u.Model
	}
	m.InputTokens += u.Input
	m.OutputTokens += u.Output
	m.TotalTokens += u.Total
	m.CostUSD += u.Cost
}

// fresh recounts m from its file when the file, now size bytes and last
// changed at mod, changed after the sidecar was written (a writer killed
// between its last sync and its next metadata write, or another program
// appending); the sidecar itself is left for the next writer.
func (s *Store) fresh(ctx context.Context, m Metadata, size int64, mod time.Time) Metadata {
	if !m.lags(size, mod) {
		return m
	}
	return s.recounted(ctx, m)
}

// recounted is m with its counts taken from its file.
func (s *Store) recounted(ctx context.Context, m Metadata) Metadata {
	sess, err := tree.Open(ctx, s.st, m.Path, tree.ReadOnly(), tree.LazyBlobs(), tree.WithReport(func(tree.Problem) {}), tree.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil || !sess.HasHeader() {
		return m
	}
	// Counts only: a bucket's clock may run ahead of ours, and taking its
	// time would reorder the listing.
	recount(&m, sess)
	return m
}

// recount sets the totals of m from the session's file: a sidecar written
// before a kill lags the file, and a resumed handle must count on from
// what the file holds, not from what the sidecar said.
func recount(m *Metadata, sess *tree.Session) {
	m.MessageCount, m.TurnCount, m.InputTokens, m.OutputTokens, m.TotalTokens, m.CostUSD, m.FirstMessage = 0, 0, 0, 0, 0, 0, ""
	stored := sess.Stored()
	for _, e := range stored {
		m.count(e)
	}
	// The writer's own clock, as it stamped its last entry: the sidecar is
	// written at Close, so a session at work is as recent as its entries.
	if n := len(stored); n > 0 {
		if t, err := time.Parse(time.RFC3339Nano, stored[n-1].Timestamp()); err == nil && t.After(m.UpdatedAt) {
			m.UpdatedAt = t.UTC()
		}
	}
}

// sameCounts reports whether a and b count the same messages.
func sameCounts(a, b Metadata) bool {
	return a.MessageCount == b.MessageCount && a.TurnCount == b.TurnCount && a.FirstMessage == b.FirstMessage &&
		a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.TotalTokens == b.TotalTokens && a.CostUSD == b.CostUSD
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// readMeta reads the sidecar, or builds the metadata from the tree for a
// session written by another implementation (no sidecar).
func (s *Store) readMeta(ctx context.Context, sess *tree.Session) (Metadata, error) {
	data, err := s.st.ReadFile(ctx, backend.Join(SidecarDir(sess.Name()), MetaFile))
	if err == nil {
		var m Metadata
		if jerr := json.Unmarshal(data, &m); jerr == nil && m.ID != "" {
			m.Path = sess.Name()
			if size, ok := sess.Size(); ok && m.FileSize > 0 {
				// Read whole already: its size needs no request.
				if size != m.FileSize {
					recount(&m, sess)
				}
			} else if fi, err := s.st.Stat(ctx, sess.Name()); err == nil && m.lags(fi.Size, fi.ModTime) {
				recount(&m, sess)
			}
			return m, nil
		}
		s.cfg.log.Warn("trove/session: unreadable meta.json; rebuilding it from the session", "session", sess.Name())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Metadata{}, err
	}
	h := sess.Header()
	m := Metadata{ID: h.ID, Path: sess.Name(), ProjectHash: EncodeCwd(h.Cwd), Cwd: h.Cwd, Title: h.Title, ParentID: h.ParentSession}
	if t, err := time.Parse(time.RFC3339Nano, h.Timestamp); err == nil {
		m.CreatedAt = t.UTC()
	}
	if fi, err := s.st.Stat(ctx, sess.Name()); err == nil {
		m.UpdatedAt = fi.ModTime.UTC()
	}
	// As stored: counting needs no blob, and a ref the store cannot
	// resolve must not become the first message's text.
	for _, e := range sess.Stored() {
		m.take(e)
	}
	return m, nil
}

// metaOf is the sidecar's metadata, counted on from the file when the
// file changed after it; for a session without a sidecar, what its file
// holds.
func (s *Store) metaOf(ctx context.Context, info Info, open bool) (Metadata, error) {
	data, err := s.st.ReadFile(ctx, backend.Join(SidecarDir(info.Path), MetaFile))
	if err == nil {
		var m Metadata
		if json.Unmarshal(data, &m) == nil && m.ID != "" {
			m.Path = info.Path
			if open {
				return s.recounted(ctx, m), nil
			}
			return s.fresh(ctx, m, info.Size, info.Modified), nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Metadata{}, err
	}
	sess, err := tree.Open(ctx, s.st, info.Path, tree.ReadOnly(), tree.LazyBlobs(), tree.WithReport(func(tree.Problem) {}), tree.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil && sess.HasHeader() {
		return s.readMeta(ctx, sess)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Metadata{}, err
	}
	return Metadata{ID: info.ID, Path: info.Path, ProjectHash: EncodeCwd(info.Cwd), Cwd: info.Cwd, Title: info.Title, ParentID: info.ParentSession,
		CreatedAt: info.Created, UpdatedAt: info.Modified.UTC(), FirstMessage: info.FirstMessage}, nil
}

// UpdateMetadata changes the sidecar of a session that is not open for
// writing (an open handle keeps its own; use Handle.UpdateMetadata).
func (s *Store) UpdateMetadata(ctx context.Context, ref string, update func(*Metadata)) error {
	name, wl, err := s.lockRef(ctx, ref)
	if err != nil {
		return err
	}
	defer wl.unlock()
	sess, err := tree.Open(ctx, s.st, name, s.sessionOpts(tree.ReadOnly())...)
	if err != nil {
		return err
	}
	m, err := s.readMeta(ctx, sess)
	if err != nil {
		return err
	}
	// The sidecar may lag its file (a writer killed after a sync) while
	// its time, from another clock, says it is current.
	recount(&m, sess)
	update(&m)
	m.ID, m.Path = sess.Header().ID, name
	// The writer lock keeps the file as read.
	if err := s.writeMeta(ctx, m, fileSize(sess), false); err != nil {
		return err
	}
	s.forget(ctx, name)
	return nil
}

// fileSize is the size of sess's file as read and written through it; 0
// where that is not known.
func fileSize(sess *tree.Session) int64 {
	if size, ok := sess.Size(); ok {
		return size
	}
	return 0
}

// writeMeta writes m as the sidecar of a file of size bytes (0: not
// known), which m counts exactly.
func (s *Store) writeMeta(ctx context.Context, m Metadata, size int64, fresh bool) error {
	m.FileSize = max(size, 0)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return s.putSidecar(ctx, backend.Join(SidecarDir(m.Path), MetaFile), append(data, '\n'), fresh)
}

// putSidecar writes a small file of a session's that is always written
// whole (one request on a bucket); a fresh session's are new names,
// created write-once.
func (s *Store) putSidecar(ctx context.Context, name string, data []byte, fresh bool) error {
	if fresh {
		return backend.CreateFile(ctx, s.st, name, data)
	}
	return backend.PutFile(ctx, s.st, name, data)
}

// Metadata returns the metadata of the session ref: its sidecar, or what
// its file says for a session without one.
func (s *Store) Metadata(ctx context.Context, ref string) (Metadata, error) {
	name, err := s.Find(ctx, ref)
	if err != nil {
		return Metadata{}, err
	}
	sess, err := tree.Open(ctx, s.st, name, s.sessionOpts(tree.ReadOnly())...)
	if err != nil {
		return Metadata{}, err
	}
	m, err := s.readMeta(ctx, sess)
	m.FileSize = fileSize(sess)
	return m, err
}
