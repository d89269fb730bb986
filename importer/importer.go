package importer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// ErrUnknownSource is returned for a path whose format is not recognised.
var ErrUnknownSource = errors.New("importer: unknown source format")

// Result is what Import did with one source file.
type Result struct {
	Source    string `json:"source"`
	Format    string `json:"format"`
	SessionID string `json:"session_id"`
	Messages  int    `json:"messages"`
	Imported  bool   `json:"imported"`
	ParentID  string `json:"parent_id,omitempty"` // the session a subagent's session was spawned from
	Reason    string `json:"reason,omitempty"`    // why it was skipped, or what was left out
}

// Options tune Import.
type Options struct {
	From   string // pi, omp, claude, codex, spec002 or auto ("" is auto)
	DryRun bool
	// Progress, when set, is called after each source file with how many
	// of the total are done.
	Progress func(done, total int)
}

// Import imports every session file under paths into st. The blobs/
// directories of pi and oh-my-pi roots at or under paths have their blobs
// put first, each checked against its name.
func Import(ctx context.Context, st *trove.Store, paths []string, o Options) ([]Result, error) {
	var out []Result
	var errs []error
	// Listed first, so progress knows the total.
	var files, blobDirs []string
	for _, p := range paths {
		fs, bs, err := sourceFiles(p)
		if err != nil {
			errs = append(errs, err)
		}
		files, blobDirs = append(files, fs...), append(blobDirs, bs...)
	}
	if o.Progress != nil {
		o.Progress(0, len(files))
	}
	// Blobs first: a session never lands before the blobs it names.
	for _, dir := range blobDirs {
		n, err := importPiBlobs(ctx, st.Blobs(), dir, o.DryRun)
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			out = append(out, Result{Source: dir, Format: "blobs", Messages: n, Imported: true})
		}
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rs, err := importFile(ctx, st, f, o)
		if err != nil {
			// One bad source does not stop the others.
			if len(rs) == 1 && rs[0].Reason == "" {
				rs[0].Reason = err.Error()
			}
			errs = append(errs, err)
		}
		out = append(out, rs...)
		if o.Progress != nil {
			o.Progress(i+1, len(files))
		}
	}
	return out, errors.Join(errs...)
}

// sourceFiles lists the session files under p and the blobs/ directories
// of pi roots, at p or below it.
func sourceFiles(p string) (files, blobDirs []string, err error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	if !fi.IsDir() {
		return []string{p}, nil, nil
	}
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "blobs":
			blobDirs = append(blobDirs, path)
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".jsonl"):
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, blobDirs, err
}

func importFile(ctx context.Context, st *trove.Store, path string, o Options) ([]Result, error) {
	r := Result{Source: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return []Result{r}, fmt.Errorf("import: %w", err)
	}
	format := o.From
	if format == "" || format == "auto" {
		format = detect(data)
	}
	r.Format = format
	sum := sha256.Sum256(data)
	r.SessionID = idFrom(sum[:])
	var conv *conversation
	switch format {
	case "pi", "omp":
		f, n, err := parsePi(data)
		if err != nil {
			return []Result{r}, fmt.Errorf("import %s: %w", path, err)
		}
		r.Messages = n
		r, err = finish(ctx, st, r, o, func() error { return writeV3(ctx, st, r.SessionID, f) })
		return []Result{r}, err
	case "claude":
		conv, err = parseClaude(data)
	case "codex":
		conv, err = parseCodex(data)
	case "spec002":
		conv, err = parseSpec002(data)
	default:
		r.Reason = "unknown format"
		return []Result{r}, nil
	}
	if err != nil {
		return []Result{r}, fmt.Errorf("import %s: %w", path, err)
	}
	var out []Result
	var errs []error
	if len(conv.msgs) > 0 || len(conv.subs) == 0 {
		r.ParentID = conv.parent
		r.Messages = conv.messages()
		if conv.damaged > 0 {
			r.Reason = fmt.Sprintf("%d damaged lines skipped", conv.damaged)
		}
		r, err = finish(ctx, st, r, o, func() error { return writeV3(ctx, st, r.SessionID, conv.toV3(r.SessionID)) })
		out = append(out, r)
		errs = append(errs, err)
	}
	// A Claude Code subagent's conversation (a sidechain) becomes its own
	// session recording the main one as its parent; its id comes from the
	// file's content and its root's uuid.
	parent := r.SessionID
	if len(conv.msgs) == 0 {
		parent = claudeParent(path)
	}
	for _, sub := range conv.subs {
		h := sha256.Sum256(append(append(sum[:], "\x00sidechain\x00"...), sub.key...))
		sr := Result{Source: path + "#" + sub.key, Format: format, SessionID: idFrom(h[:]), Messages: sub.messages(), ParentID: parent}
		sub.parent = parent
		sr, err := finish(ctx, st, sr, o, func() error { return writeV3(ctx, st, sr.SessionID, sub.toV3(sr.SessionID)) })
		out = append(out, sr)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

func finish(ctx context.Context, st *trove.Store, r Result, o Options, write func() error) (Result, error) {
	if r.Messages == 0 {
		r.Reason = "no messages"
		return r, nil
	}
	if _, err := st.Sessions().Find(ctx, r.SessionID); err == nil {
		r.Reason = "already imported"
		return r, nil
	}
	if o.DryRun {
		r.Imported = true
		return r, nil
	}
	if err := write(); err != nil {
		if errors.Is(err, fs.ErrExist) {
			r.Reason = "already imported"
			return r, nil
		}
		return r, fmt.Errorf("import %s: %w", r.Source, err)
	}
	r.Imported = true
	return r, nil
}

// idFrom makes a uuid-shaped id (version 8, custom) from a content hash.
func idFrom(h []byte) string {
	b := append([]byte{}, h[:16]...)
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func detect(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	pi := false
	for i := 0; i < 20 && sc.Scan(); i++ {
		var probe struct {
			ParentID  *string         `json:"parent_id"`
			Type      string          `json:"type"`
			UUID      string          `json:"uuid"`
			SessionID string          `json:"sessionId"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			continue
		}
		switch {
		case probe.UUID != "" || probe.SessionID != "":
			return "claude"
		case probe.Type == "session_meta" || probe.Payload != nil:
			return "codex"
		case probe.ParentID != nil:
			return "spec002"
		case probe.Type == "session":
			pi = true
		}
	}
	if pi {
		return "pi"
	}
	return "unknown"
}

// conversation is a parsed source: entries in file order, each with its
// parent's source id ("" for a root).
type conversation struct {
	cwd     string
	model   string
	title   string
	parent  string // lineage: the session this one was forked or spawned from
	created int64  // Unix milliseconds the source says it started; 0 when it does not
	msgs    []srcMsg
	alias   map[string]string // source id -> id of the entry standing for it
	// damaged counts lines whose message does not parse, or entries naming
	// no entry before them.
	damaged int
	// subs are subagent conversations (Claude Code sidechains), each keyed
	// by its root's source id.
	subs []*conversation
	key  string
}

func (c *conversation) messages() int {
	n := 0
	for _, m := range c.msgs {
		if m.kind == "" {
			n++
		}
	}
	return n
}

// srcMsg is a message, or a compaction or branch summary (kind), with
// source ids.
type srcMsg struct {
	id, parent string
	at         int64 // Unix milliseconds; 0: the message's own timestamp, or the entry's before
	msg        json.RawMessage
	kind       string
	summary    string // of a compaction or branch summary
	firstKept  string // a compaction's first kept entry (a source id)
	tokens     int64  // a compaction's tokens before
}

const (
	kindCompaction    = "compaction"
	kindBranchSummary = "branch_summary"
)

// v3 is a session ready to be written: its header's fields and its
// entries as spec 003 objects, ids and parents set.
type v3 struct {
	cwd, title, parent, model string
	created, updated          time.Time
	entries                   []map[string]any
}

// toV3 gives the conversation's entries ids derived from the session's
// (an import writes the same bytes each time), parents through the
// aliases, and the source's times.
func (c *conversation) toV3(id string) *v3 {
	f := &v3{cwd: c.cwd, title: c.title, parent: c.parent, model: c.model}
	resolve := func(id string) string {
		for range 16 { // bounded: a cycle of aliases is damage
			a, ok := c.alias[id]
			if !ok {
				break
			}
			id = a
		}
		return id
	}
	ids := newIDs(id)
	mapped := map[string]string{} // source id -> entry id
	leaf := ""
	at := c.created
	for _, m := range c.msgs {
		parent := ""
		if p := resolve(m.parent); p != "" {
			var ok bool
			if parent, ok = mapped[p]; !ok {
				parent = leaf // it names nothing imported: it continues the last entry
			}
		}
		switch {
		case m.at != 0:
			at = m.at
		case m.msg != nil:
			var ts struct{ Timestamp int64 }
			if json.Unmarshal(m.msg, &ts) == nil && ts.Timestamp != 0 {
				at = ts.Timestamp
			}
		}
		e := map[string]any{"type": "message", "id": ids.next(), "parentId": nil, "timestamp": isoMillis(at)}
		if parent != "" {
			e["parentId"] = parent
		}
		switch m.kind {
		case "":
			e["message"] = decode(m.msg)
		case kindCompaction:
			kept, ok := mapped[resolve(m.firstKept)]
			if !ok {
				mapped[m.id] = parent // it names nothing imported: left out
				continue
			}
			e["type"], e["summary"], e["firstKeptEntryId"], e["tokensBefore"] = kindCompaction, m.summary, kept, m.tokens
		case kindBranchSummary:
			from := parent
			if from == "" {
				from = "root"
			}
			e["type"], e["summary"], e["fromId"] = kindBranchSummary, m.summary, from
		}
		mapped[m.id], leaf = e["id"].(string), e["id"].(string)
		f.entries = append(f.entries, e)
	}
	f.created, f.updated = time.UnixMilli(c.created).UTC(), time.UnixMilli(at).UTC()
	if c.created == 0 && len(f.entries) > 0 {
		f.created, _ = time.Parse(time.RFC3339Nano, f.entries[0]["timestamp"].(string))
	}
	return f
}

// ids hands out a session's entry ids: 8 hex digits derived from the
// session id and a counter, unique within the session.
type ids struct {
	session string
	n       int
	taken   map[string]bool
}

func newIDs(session string) *ids { return &ids{session: session, taken: map[string]bool{}} }

func (g *ids) next() string {
	for {
		g.n++
		h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", g.session, g.n))
		id := hex.EncodeToString(h[:4])
		if !g.taken[id] {
			g.taken[id] = true
			return id
		}
	}
}

// decode turns a message into a map for externalize, numbers kept as
// written.
func decode(msg json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	var v map[string]any
	if d.Decode(&v) != nil {
		return msg
	}
	return v
}

func isoMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// writeV3 stores f as the new session id: its images moved to the blob
// store, the file checked against the writing contract and written whole
// (one write, so a reader never sees part of it), then its sidecar with
// the source's times.
func writeV3(ctx context.Context, s *trove.Store, id string, f *v3) error {
	if f.cwd == "" {
		f.cwd = "/imported"
	}
	if f.created.IsZero() || f.created.Unix() <= 0 {
		f.created = time.Now().UTC()
	}
	if f.updated.Before(f.created) {
		f.updated = f.created
	}
	if _, err := s.Sessions().Find(ctx, id); err == nil {
		return fs.ErrExist
	}
	for _, e := range f.entries {
		if err := externalize(ctx, s.Blobs(), e); err != nil {
			return err
		}
	}
	hdr := map[string]any{"type": "session", "version": 3, "id": id, "timestamp": f.created.Format("2006-01-02T15:04:05.000Z"), "cwd": f.cwd}
	if f.title != "" {
		hdr["title"] = f.title
	}
	if f.parent != "" {
		hdr["parentSession"] = f.parent
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, v := range append([]map[string]any{hdr}, f.entries...) {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	if err := tree.Check(buf.Bytes()); err != nil {
		return err
	}
	name := session.SessionPath(f.cwd, f.created, id)
	if err := s.Storage().WriteFile(ctx, name, buf.Bytes()); err != nil {
		return err
	}
	return s.Sessions().UpdateMetadata(ctx, id, func(m *session.Metadata) {
		if f.model != "" && (m.Model == "" || m.Model == tree.UnknownModel) {
			m.Model = f.model
		}
		m.UpdatedAt = f.updated
	})
}

func millis(ts string) int64 {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// tokens is an assistant message's usage as the source recorded it.
type tokens struct {
	Input, Output, CacheRead, CacheWrite, Total int64
}

// assistant builds a spec 003 assistant message with everything a strict
// reader wants: what the source does not say is "unknown" or zero (the
// cost is never known).
func assistant(content []any, model, provider string, ts int64, stop string, u tokens) json.RawMessage {
	if model == "" {
		model = "unknown"
	}
	if provider == "" {
		provider = "unknown"
	}
	if stop == "" {
		stop = "stop"
	}
	if u.Total == 0 {
		u.Total = u.Input + u.Output + u.CacheRead + u.CacheWrite
	}
	b, _ := json.Marshal(map[string]any{
		"role": "assistant", "content": content, "api": "unknown", "provider": provider, "model": model,
		"usage": map[string]any{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite, "totalTokens": u.Total,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": stop, "timestamp": ts,
	})
	return b
}
