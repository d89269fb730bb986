package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"path/filepath"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// ErrNoSessionID is returned by Follow for a source that names no id of
// its session: the id of its import would be the hash of its bytes, which
// change with every line.
var ErrNoSessionID = fmt.Errorf("importer: the source names no session id: %w", fs.ErrInvalid)

// Follower imports one source file as it grows: Feed takes the lines
// appended since, parses and converts only them, and appends the entries
// they make to the sessions an import of the whole file would write. The
// store ends as `trove import` of the file would leave a fresh store: the
// same session files, sidecars and provenance (docs/live-capture.md).
//
// An entry a later line may still change (Claude Code writes one API
// message as a line per block; Codex gathers an assistant message until the
// next item) is written at once and, when it does change, the session file
// is rewritten from the last entry that cannot. A Follower is not safe for
// concurrent use.
type Follower struct {
	st     *trove.Store
	path   string
	format string
	parser liveParser
	size   int64
	hash   hash.Hash // of the bytes fed
	live   map[string]*live
	tasks  map[string]string // the main session's Task calls (a Claude Code subagents/ file)
	tasksN int               // sidechains known when tasks was read
	// tasksSize is the main file's size when tasks was read (-1: none).
	tasksSize int64
	// resumed: made by Resume, its messages converted for good not kept;
	// prev: the sessions a Follower of the same source wrote (After).
	resumed bool
	prev    map[string]*live
	index   *SessionIndex // nil: Sessions().Find
}

// liveParser parses a source a line at a time.
type liveParser interface {
	line(b []byte) error
}

// live is one session a Follower writes.
type live struct {
	id, name string
	em       *emitter // through the entries that cannot change
	done     int      // source messages converted for good
	first    string   // timestamp of the first entry that cannot change
	msgs     int      // message entries through base
	header   []byte
	base     int64  // bytes of the file through the entries that cannot change
	baseSum  []byte // sha256 state of the file's first base bytes
	bodySum  []byte // the same of those bytes after the header line
	tail     []byte // the last (at most tailLen) of those bytes
	tent     []byte // what follows base: entries a later line may change
	tentMsgs int
	fed      int64 // source bytes its sidecars record
	// uncounted are the lines appended since meta.json was written;
	// recount: meta.json is to be rebuilt from the file instead.
	uncounted []byte
	recount   bool
	gone      string // why it is no longer written to
	stale     bool   // the file is not as this Follower left it
}

// Follow starts following the source at path (format as Options.From; ""
// or "auto" detects it from head, the file's first lines).
func Follow(st *trove.Store, path, format string, head []byte) (*Follower, error) {
	format, _ = CanonicalFormat(format)
	if format == "" || format == "auto" {
		format = detect(head)
		// A header alone is pi's and agent JSONL's alike: the lines after
		// it tell them apart.
		if format == "pi" && bytes.Count(bytes.TrimSpace(head), []byte("\n")) == 0 {
			return nil, fmt.Errorf("follow %s: only a header yet: %w", path, ErrUnknownSource)
		}
	}
	f := &Follower{st: st, path: path, format: format, hash: sha256.New(), live: map[string]*live{}}
	switch format {
	case "claude":
		f.parser = newClaudeParser()
	case "codex":
		f.parser = newCodexParser()
	case "pi", "omp":
		f.parser = &piParser{}
	case "agent-jsonl":
		f.parser = &agentParser{c: &conversation{alias: map[string]string{}}, known: map[string]bool{}}
	default:
		return nil, fmt.Errorf("follow %s: %w", path, ErrUnknownSource)
	}
	return f, nil
}

// UseIndex has f find the sessions it writes in ix, shared by the
// Followers of one watcher, rather than by listing the store for each.
func (f *Follower) UseIndex(ix *SessionIndex) { f.index = ix }

// find is the session file of id, name if it is new.
func (f *Follower) find(ctx context.Context, id, name string) (string, error) {
	if f.index == nil {
		return f.st.Sessions().Find(ctx, id)
	}
	if cur, err := f.index.find(ctx, id); err == nil {
		name = cur
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// Removed in trove, or written by another process since the listing.
	if _, err := f.st.Storage().Stat(ctx, name); err != nil {
		return "", err
	}
	return name, nil
}

// Format is the source's format.
func (f *Follower) Format() string { return f.format }

// Size is how many bytes of the source were fed.
func (f *Follower) Size() int64 { return f.size }

// Sum is the SHA-256 of the bytes of the source fed.
func (f *Follower) Sum() []byte { return f.hash.Sum(nil) }

// Feed parses lines (whole lines, each ending in a newline, as appended to
// the source after what was fed before) and brings the sessions they make
// up to date in the store. A session changed in trove since this import
// wrote it is left alone from then on, and said so in its Result.
func (f *Follower) Feed(ctx context.Context, lines []byte) ([]Result, error) {
	if len(lines) > 0 && lines[len(lines)-1] != '\n' {
		return nil, fmt.Errorf("follow %s: a torn line: %w", f.path, fs.ErrInvalid)
	}
	f.hash.Write(lines)
	first := f.size == 0
	f.size += int64(len(lines))
	if first {
		lines = bytes.TrimPrefix(lines, bom) // as eachLine drops it
	}
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		line := bytes.TrimSuffix(lines[:i], []byte("\r"))
		lines = lines[i+1:]
		if err := f.parser.line(line); err != nil {
			return nil, fmt.Errorf("follow %s: %w", f.path, err)
		}
	}
	views, err := f.views()
	if err != nil {
		return nil, err
	}
	var out []Result
	var errs []error
	for _, v := range views {
		r, err := f.sync(ctx, v)
		out = append(out, r)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// view is one session as the lines so far make it.
type view struct {
	r      Result
	conv   *conversation // nil for pi
	pi     *v3
	stable int      // conv.msgs (or pi entries) before this cannot change
	extra  []srcMsg // messages the end of the file would add (Codex)
	subs   []subRef
}

func (f *Follower) views() ([]view, error) {
	r := Result{Source: f.path, Format: f.format}
	switch p := f.parser.(type) {
	case *piParser:
		if !p.header || p.f.srcID == "" {
			return nil, nil
		}
		r.SessionID, r.Messages = source{}.id("pi", p.f.srcID), p.msgs
		return []view{{r: r, pi: &p.f, stable: len(p.f.entries)}}, nil
	case *codexParser:
		return f.convViews(r, p.c, len(p.c.msgs), p.unflushed(), nil)
	case *agentParser:
		return f.convViews(r, p.c, len(p.c.msgs), nil, nil)
	case *claudeParser:
		c := p.main.conversation
		c.srcID = claudeID(f.path)
		tasks := p.tasks
		if len(c.msgs) == 0 {
			if f.tasks == nil || f.tasksN != len(c.subs) || f.tasksStale(c) {
				// A new subagent: its Task call is in the main file by now.
				f.tasksSize = mainSize(f.path)
				f.tasks, f.tasksN = mainTasks(f.path, map[string]map[string]string{}), len(c.subs)
			}
			tasks = f.tasks
		}
		nameSubagents(c, tasks)
		return f.convViews(r, c, p.frontier(c), nil, p.frontier)
	}
	return nil, nil
}

// Retitle brings the titles of a Claude Code subagent file's sessions up
// to date with its main file, which the caller saw grow: a subagent
// whose Task call was not there yet is named once it is. It reports
// whether it looked at the main file again.
func (f *Follower) Retitle(ctx context.Context) (bool, error) {
	p, ok := f.parser.(*claudeParser)
	if !ok || len(p.main.msgs) != 0 || !f.tasksStale(p.main.conversation) {
		return false, nil
	}
	_, err := f.Feed(ctx, nil)
	return true, err
}

// Untitled reports whether a subagent of f's Claude Code subagent file
// waits for its Task call's description.
func (f *Follower) Untitled() bool {
	p, ok := f.parser.(*claudeParser)
	if !ok || len(p.main.msgs) != 0 {
		return false
	}
	return f.untitled(p.main.conversation)
}

// untitled reports whether a subagent of c has no Task description yet.
func (f *Follower) untitled(c *conversation) bool {
	for _, sub := range c.subs {
		if len(sub.msgs) > 0 && f.tasks[firstText(sub.msgs[0].msg)] == "" {
			return true
		}
	}
	return false
}

// tasksStale reports whether a subagent of c has no Task description
// yet and the main file changed since tasks was read: a replay (or a
// copy) may write the subagent's first line before the main file's call.
func (f *Follower) tasksStale(c *conversation) bool {
	return f.untitled(c) && mainSize(f.path) != f.tasksSize
}

// convViews are the views of c and its sidechains.
func (f *Follower) convViews(r Result, c *conversation, stable int, extra []srcMsg, frontier func(*conversation) int) ([]view, error) {
	if c.srcID == "" {
		if len(c.msgs)+len(extra) == 0 {
			return nil, nil // not known yet
		}
		return nil, fmt.Errorf("follow %s: %w", f.path, ErrNoSessionID)
	}
	r.SessionID = source{}.id(f.format, c.srcID)
	var out []view
	if len(c.msgs) > 0 || len(c.subs) == 0 {
		r.ParentID = c.parent
		r.Messages = c.messages() + len(extra)
		v := view{r: r, conv: c, stable: stable, extra: extra}
		for _, sub := range c.subs {
			if sub.messages() > 0 {
				v.subs = append(v.subs, subRef{Key: sub.key, ID: subID(r.SessionID, sub.key)})
			}
		}
		out = append(out, v)
	}
	parent := r.SessionID
	if len(c.msgs) == 0 {
		parent = claudeParent(f.path)
	}
	for _, sub := range c.subs {
		sub.parent = parent
		sr := Result{Source: f.path + "#" + sub.key, Format: f.format, SessionID: subID(r.SessionID, sub.key), Messages: sub.messages(), ParentID: parent}
		out = append(out, view{r: sr, conv: sub, stable: frontier(sub)})
	}
	return out, nil
}

// sync brings the session of v up to date in the store.
func (f *Follower) sync(ctx context.Context, v view) (Result, error) {
	r := v.r
	l := f.live[r.SessionID]
	if l == nil {
		l = f.start(r.SessionID, v)
	}
	if l.gone != "" {
		r.Reason = l.gone
		return r, nil
	}
	if r.Messages == 0 {
		r.Reason = "no messages"
		return r, nil
	}
	hdr, stable, tent, err := f.render(ctx, l, v)
	if err != nil {
		return r, fmt.Errorf("follow %s: %w", r.Source, err)
	}
	if l.header == nil {
		r, err = f.first(ctx, l, r, hdr, stable, tent)
	} else if r, err = f.next(ctx, l, r, hdr, stable, tent); err == nil && l.stale && f.resumed {
		return r, fmt.Errorf("follow %s: %w", r.Source, ErrRebuild)
	} else if err == nil && l.stale {
		// Another writer changed the file (`trove import` of the source,
		// say, from a hook): start again from the whole conversation, and
		// go on if the session is still as an import wrote it.
		l = f.start(r.SessionID, v)
		if hdr, stable, tent, err = f.render(ctx, l, v); err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		r, err = f.first(ctx, l, r, hdr, stable, tent)
	}
	if err != nil || l.gone != "" || l.fed == f.size {
		return r, err
	}
	return r, f.sidecars(ctx, l, hdr, v)
}

// start begins writing the session of v from its first entry.
func (f *Follower) start(id string, v view) *live {
	l := &live{id: id}
	if v.conv != nil {
		l.em = newEmitter(id, v.conv.created)
	}
	f.live[id] = l
	return l
}

// render converts what v adds since the last sync: the header, the
// entries that cannot change any more (committed to l's emitter), and
// those that may.
func (f *Follower) render(ctx context.Context, l *live, v view) (hdr *v3, stable, tent []byte, err error) {
	firstTent := ""
	add := func(buf []byte, e map[string]any, msgs *int) ([]byte, error) {
		switch ts, _ := e["timestamp"].(string); {
		case msgs == &l.msgs && l.first == "":
			l.first = ts
		case msgs != &l.msgs && firstTent == "":
			firstTent = ts
		}
		if e["type"] == "message" {
			*msgs++
		}
		if err := externalize(ctx, f.st.Blobs(), e); err != nil {
			return nil, err
		}
		return appendLine(buf, e)
	}
	if v.pi != nil {
		for _, e := range v.pi.entries[l.done:v.stable] {
			if stable, err = add(stable, e, &l.msgs); err != nil {
				return nil, nil, nil, err
			}
		}
		l.done = v.stable
		h := *v.pi
		h.updated = piUpdated(v.pi.entries)
		h.defaults()
		return &h, stable, nil, nil
	}
	c := v.conv
	for _, m := range c.msgs[l.done:v.stable] {
		if e := l.em.emit(c, m); e != nil {
			if stable, err = add(stable, e, &l.msgs); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	l.done = v.stable
	fe := l.em.fork()
	l.tentMsgs = 0
	for _, m := range append(c.msgs[v.stable:len(c.msgs):len(c.msgs)], v.extra...) {
		if e := fe.emit(c, m); e != nil {
			if tent, err = add(tent, e, &l.tentMsgs); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	h := &v3{cwd: c.cwd, title: c.title, parent: c.parent, model: c.model}
	var first []map[string]any
	if l.first != "" {
		first = []map[string]any{{"timestamp": l.first}}
	} else if firstTent != "" {
		first = []map[string]any{{"timestamp": firstTent}}
	}
	h.created, h.updated = c.times(fe, first)
	h.defaults()
	return h, stable, tent, nil
}

// first writes the session the first time this Follower syncs it: new,
// replacing what an earlier import wrote, or left as it is when it changed
// in trove since.
func (f *Follower) first(ctx context.Context, l *live, r Result, hdr *v3, stable, tent []byte) (Result, error) {
	h, err := appendLine(nil, hdr.header(l.id))
	if err != nil {
		return r, err
	}
	whole := append(append(append([]byte(nil), h...), stable...), tent...)
	if err := tree.Check(whole); err != nil {
		return r, fmt.Errorf("follow %s: %w", r.Source, err)
	}
	st := f.st.Storage()
	name, err := f.find(ctx, l.id, session.SessionPath(hdr.cwd, hdr.created, l.id))
	switch {
	case err == nil:
		cur, err := st.ReadFile(ctx, name)
		if err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		var prov provenance
		data, _ := st.ReadFile(ctx, backend.Join(session.SidecarDir(name), ProvenanceFile))
		switch {
		case bytes.Equal(cur, whole):
			r.Reason = "already imported"
			if json.Unmarshal(data, &prov) == nil && prov.SourceSHA256 == hex.EncodeToString(f.hash.Sum(nil)) {
				l.fed = f.size // its sidecars are current
			}
		case (json.Unmarshal(data, &prov) != nil || prov.FileSHA256 != sha256Hex(cur)) && !f.prevWrote(l.id, name, cur):
			l.gone = "the session changed in trove since it was imported: left as it is"
			r.Reason = l.gone
			return r, nil
		default:
			if err := st.WriteFile(ctx, name, whole); err != nil {
				return r, fmt.Errorf("follow %s: %w", r.Source, err)
			}
			r.Imported, r.Updated = true, true
		}
	case errors.Is(err, fs.ErrNotExist):
		name = session.SessionPath(hdr.cwd, hdr.created, l.id)
		if err := st.WriteFile(ctx, name, whole); err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		if f.index != nil {
			f.index.add(l.id, name)
		}
		r.Imported = true
	default:
		return r, fmt.Errorf("follow %s: %w", r.Source, err)
	}
	l.name, l.header, l.tent, l.recount = name, h, tent, true
	l.setBase(nil, append(h, stable...))
	return r, nil
}

// next brings a session this Follower wrote up to date: the new entries
// appended, or the file rewritten from the last entry that cannot change
// when one that could did, or the header changed.
func (f *Follower) next(ctx context.Context, l *live, r Result, hdr *v3, stable, tent []byte) (Result, error) {
	h, err := appendLine(nil, hdr.header(l.id))
	if err != nil {
		return r, err
	}
	st := f.st.Storage()
	fi, err := st.Stat(ctx, l.name)
	if err != nil || fi.Size != l.base+int64(len(l.tent)) {
		l.stale = true // written since by someone else: an import, or trove
		return r, nil
	}
	add := append(append([]byte(nil), stable...), tent...)
	r.Imported, r.Updated = true, true
	switch {
	case len(add) == len(l.tent) && bytes.Equal(h, l.header) && bytes.Equal(add, l.tent):
		r.Imported, r.Updated = false, false // nothing new
	case bytes.Equal(h, l.header) && bytes.HasPrefix(add, l.tent):
		w, err := st.OpenWriter(ctx, l.name, backend.WriterOptions{})
		if err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		_, err = w.Write(add[len(l.tent):])
		if err == nil {
			err = w.Sync()
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		l.uncounted = append(l.uncounted, add[len(l.tent):]...)
		l.setBase(l.baseSum, stable)
	default:
		old, err := st.ReadPrefix(ctx, l.name, int(l.base))
		if err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		kept := append(append([]byte(nil), h...), old[len(l.header):]...)
		if err := st.WriteFile(ctx, l.name, append(append(kept, stable...), tent...)); err != nil {
			return r, fmt.Errorf("follow %s: %w", r.Source, err)
		}
		// fed -1: the sidecars follow, even with no new source bytes (a
		// subagent's title, Retitle).
		l.recount, l.header, l.fed = true, h, -1
		l.setBase(nil, append(kept, stable...))
	}
	l.header, l.tent = h, tent
	return r, nil
}

// setBase moves the base past b, continuing the hash state sum (nil: from
// the start of the file).
func (l *live) setBase(sum, b []byte) {
	d, body := sha256.New(), sha256.New()
	if sum != nil {
		d.(encoding.BinaryUnmarshaler).UnmarshalBinary(sum)
		body.(encoding.BinaryUnmarshaler).UnmarshalBinary(l.bodySum)
		body.Write(b)
	} else {
		l.base, l.tail = 0, nil
		body.Write(b[len(l.header):]) // b starts with the header
	}
	d.Write(b)
	l.base += int64(len(b))
	l.baseSum, _ = d.(encoding.BinaryMarshaler).MarshalBinary()
	l.bodySum, _ = body.(encoding.BinaryMarshaler).MarshalBinary()
	l.tail = append(l.tail, b[max(0, len(b)-tailLen):]...)
	l.tail = append([]byte(nil), l.tail[max(0, len(l.tail)-tailLen):]...)
}

// fileSum is the SHA-256 of the session file as written.
func (l *live) fileSum() string {
	d := sha256.New()
	d.(encoding.BinaryUnmarshaler).UnmarshalBinary(l.baseSum)
	d.Write(l.tent)
	return hex.EncodeToString(d.Sum(nil))
}

// sidecars writes the provenance and the metadata of the session as an
// import of the source as fed so far would: meta.json rebuilt from the
// file.
func (f *Follower) sidecars(ctx context.Context, l *live, hdr *v3, v view) error {
	prov, err := json.Marshal(provenance{Format: f.format, Source: f.path, SourceSize: int(f.size),
		SourceSHA256: hex.EncodeToString(f.hash.Sum(nil)), FileSHA256: l.fileSum(), Messages: l.msgs + l.tentMsgs, Subagents: v.subs})
	if err != nil {
		return err
	}
	st := f.st.Storage()
	dir := session.SidecarDir(l.name)
	if err := st.WriteFile(ctx, backend.Join(dir, ProvenanceFile), prov); err != nil {
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	update := func(m *session.Metadata) {
		if hdr.model != "" && (m.Model == "" || m.Model == tree.UnknownModel) {
			m.Model = hdr.model
		}
		m.UpdatedAt = hdr.updated
	}
	if l.recount {
		// Rebuilt from the file, as an import's first write has it.
		if err := st.Unlink(ctx, backend.Join(dir, session.MetaFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("follow %s: %w", f.path, err)
		}
		err = f.st.Sessions().UpdateMetadata(ctx, l.name, update)
	} else {
		// Only the lines appended are counted: the file is not read.
		err = f.st.Sessions().MetadataAppended(ctx, l.name, l.uncounted, update)
	}
	if err != nil {
		l.recount = true // the counts may have missed lines
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	l.fed, l.uncounted, l.recount = f.size, nil, false
	return nil
}

// SubagentFile reports whether path is a Claude Code subagent's
// transcript (<project>/<session id>/subagents/agent-<id>.jsonl).
func SubagentFile(path string) bool { return filepath.Base(filepath.Dir(path)) == "subagents" }

// PutPiBlobs puts the files of a pi root's blobs/ directory that the store
// lacks into its blob store, each checked against its name, and says how
// many it put.
func PutPiBlobs(ctx context.Context, st *trove.Store, dir string) (int, error) {
	return importPiBlobs(ctx, st.Blobs(), dir, false)
}

// SessionID is the id of the session an import makes of the source whose
// own id of it is srcID (Claude Code's session_id, a Codex session_meta
// id, a pi header id), in format ("claude", "codex", "pi" or "agent-jsonl").
func SessionID(format, srcID string) string {
	if format, _ = CanonicalFormat(format); format == "omp" {
		format = "pi"
	}
	return source{}.id(format, srcID)
}
