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
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
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
	Updated   bool   `json:"updated,omitempty"`   // an earlier import brought up to date with its grown source
	ParentID  string `json:"parent_id,omitempty"` // the session a subagent's session was spawned from
	Reason    string `json:"reason,omitempty"`    // why it was skipped, or what was left out
}

// Options tune Import.
type Options struct {
	From   string // pi, omp, claude, codex, agent-jsonl or auto ("" is auto); see CanonicalFormat
	DryRun bool
	// Progress, when set, is called after each source file with how many
	// of the total are done.
	Progress func(done, total int)
	// Redact, when set, rewrites a source's bytes before they are parsed
	// (secrets replaced, as redact.Detector.JSONLines does), so nothing
	// the import writes holds them; the source file is never changed. A
	// source already imported and unchanged since is skipped as ever.
	Redact func(data []byte) ([]byte, error)

	known *SessionIndex // the store's sessions, listed once per run
	// rewrites take the refs of blobs put redacted to their new refs.
	rewrites map[string]string
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
	tasks := map[string]map[string]string{} // of Claude Code main files, for their subagents' files
	o.known = NewSessionIndex(st)
	// Blobs first: a session never lands before the blobs it names.
	o.rewrites = map[string]string{}
	for _, dir := range blobDirs {
		n, rw, err := importPiBlobsRedacted(ctx, st.Blobs(), dir, o.DryRun, o.Redact)
		if err != nil {
			errs = append(errs, err)
		}
		maps.Copy(o.rewrites, rw)
		if n > 0 {
			out = append(out, Result{Source: dir, Format: "blobs", Messages: n, Imported: true})
		}
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rs, err := importFile(ctx, st, f, o, tasks)
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

// WalkRoot is dir as filepath.WalkDir should be given it: WalkDir does
// not follow a root that is a symbolic link (a dotfiles setup's
// ~/.claude/projects), so one is given with a trailing separator, which
// has the system resolve it. The paths WalkDir passes on stay under dir.
func WalkRoot(dir string) string {
	if fi, err := os.Lstat(dir); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return dir
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir + string(filepath.Separator)
	}
	return dir // a link to a file: WalkDir calls back with it alone
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
	err = filepath.WalkDir(WalkRoot(p), func(path string, d fs.DirEntry, err error) error {
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

// NotRegular returns an error wrapping fs.ErrInvalid unless fi, the stat
// of path, is a regular file's: a source that is a FIFO would block its
// open, a device would never end. Import, watch and the hooks ask it.
func NotRegular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: not a regular file (%v): %w", path, fi.Mode().Type(), fs.ErrInvalid)
}

// regularFile is NotRegular of path's stat.
func regularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return NotRegular(path, fi)
}

func importFile(ctx context.Context, st *trove.Store, path string, o Options, tasks map[string]map[string]string) ([]Result, error) {
	r := Result{Source: path}
	if err := regularFile(path); err != nil {
		return []Result{r}, fmt.Errorf("import: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return []Result{r}, fmt.Errorf("import: %w", err)
	}
	format, _ := CanonicalFormat(o.From)
	if format == "" || format == "auto" {
		format = detect(data)
	}
	r.Format = format
	src := source{path: path, format: format, data: data}
	if rs, ok := unchanged(ctx, st, o.known, src); ok {
		return rs, nil // imported from these very bytes: no need to parse them
	}
	if o.Redact != nil {
		// Ids, provenance and the unchanged check stay those of the
		// source's own bytes; only what is parsed is redacted.
		if data, err = o.Redact(data); err != nil {
			return []Result{r}, fmt.Errorf("import %s: %w", path, err)
		}
		for from, to := range o.rewrites {
			data = bytes.ReplaceAll(data, []byte(from), []byte(to))
		}
	}
	var conv *conversation
	switch format {
	case "pi", "omp":
		f, n, err := parsePi(data)
		if err != nil {
			return []Result{r}, fmt.Errorf("import %s: %w", path, err)
		}
		r.SessionID, r.Messages = src.id("pi", f.srcID), n
		if k := missingBlobs(ctx, st.Blobs(), f.entries); k > 0 && !o.DryRun {
			r.Reason = fmt.Sprintf("%d blob refs name blobs not in the store (import the pi root with its blobs/)", k)
		}
		r, err = finish(ctx, st, r, o, src, f)
		return []Result{r}, err
	case "claude":
		conv, err = parseClaude(data)
		if err == nil {
			conv.srcID = claudeID(path)
			if len(conv.msgs) == 0 {
				nameSubagents(conv, mainTasks(path, tasks))
			}
		}
	case "codex":
		conv, err = parseCodex(data)
	case "agent-jsonl":
		conv, err = parseAgentJSONL(data)
	default:
		r.Reason = "unknown format"
		return []Result{r}, nil
	}
	if err != nil {
		return []Result{r}, fmt.Errorf("import %s: %w", path, err)
	}
	r.SessionID = src.id(format, conv.srcID)
	var out []Result
	var errs []error
	if len(conv.msgs) > 0 || len(conv.subs) == 0 {
		r.ParentID = conv.parent
		r.Messages = conv.messages()
		if conv.damaged > 0 {
			r.Reason = fmt.Sprintf("%d damaged lines skipped", conv.damaged)
		}
		v := conv.toV3(r.SessionID)
		for _, sub := range conv.subs {
			if sub.messages() > 0 {
				v.subs = append(v.subs, subRef{Key: sub.key, ID: subID(r.SessionID, sub.key)})
			}
		}
		r, err = finish(ctx, st, r, o, src, v)
		out = append(out, r)
		errs = append(errs, err)
	}
	// A Claude Code subagent's conversation (a sidechain) becomes its own
	// session recording the main one as its parent; its id comes from the
	// file's and its root's uuid.
	parent := r.SessionID
	if len(conv.msgs) == 0 {
		parent = claudeParent(path)
	}
	for _, sub := range conv.subs {
		sr := Result{Source: path + "#" + sub.key, Format: format, SessionID: subID(r.SessionID, sub.key), Messages: sub.messages(), ParentID: parent}
		sub.parent = parent
		sr, err := finish(ctx, st, sr, o, src, sub.toV3(sr.SessionID))
		out = append(out, sr)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// subID is the id of the session made from the sidechain key of the
// session id.
func subID(id, key string) string {
	h := sha256.Sum256([]byte(id + "#" + key))
	return idFrom(h[:])
}

// source is one file being imported.
type source struct {
	path, format string
	data         []byte
}

// id is the id of the session imported from the source: derived from the
// source's own id of it when it has one (so a file that grows keeps its
// session), else from the file's content.
func (s source) id(kind, srcID string) string {
	key := idKind(kind) + ":" + srcID
	if srcID == "" {
		sum := sha256.Sum256(s.data)
		key = "sha256:" + hex.EncodeToString(sum[:])
	}
	h := sha256.Sum256([]byte(key))
	return idFrom(h[:])
}

// provenance is what an import records beside its session (import.json in
// its sidecar): the source as imported and the session file as written,
// so a later import tells an unchanged source from one that grew, and a
// session left as imported from one changed in trove since.
type provenance struct {
	Format       string `json:"format"`
	Source       string `json:"source"`
	SourceSize   int    `json:"source_size"`
	SourceSHA256 string `json:"source_sha256"`
	FileSHA256   string `json:"file_sha256"`
	Messages     int    `json:"messages"`
	// Subagents are the sessions made from the source's sidechains.
	Subagents []subRef `json:"subagents,omitempty"`
}

type subRef struct {
	Key string `json:"key"` // the sidechain root's source id
	ID  string `json:"id"`
}

// unchanged reports the sessions an earlier import made from exactly
// these bytes, found by the id the source's first line gives (a Claude
// Code file's name).
func unchanged(ctx context.Context, st *trove.Store, k *SessionIndex, src source) ([]Result, bool) {
	var id string
	switch src.format {
	case "claude":
		id = src.id("claude", claudeID(src.path))
	case "codex", "pi", "omp", "agent-jsonl":
		line, _, _ := bytes.Cut(bytes.TrimPrefix(src.data, bom), []byte("\n"))
		var first struct {
			ID      string `json:"id"`
			Payload struct {
				ID string `json:"id"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &first) != nil {
			return nil, false
		}
		kind, srcID := src.format, first.ID
		switch src.format {
		case "codex":
			if first.Payload.ID != "" || first.ID == "" {
				srcID = first.Payload.ID
			} // else the first line of a rollout from before session_meta
		case "omp":
			kind = "pi"
		}
		id = src.id(kind, srcID)
	default:
		return nil, false
	}
	name, err := k.find(ctx, id)
	if err != nil {
		return nil, false
	}
	var prov provenance
	data, err := st.Storage().ReadFile(ctx, backend.Join(session.SidecarDir(name), ProvenanceFile))
	if err != nil || json.Unmarshal(data, &prov) != nil || prov.SourceSHA256 != sha256Hex(src.data) {
		return nil, false
	}
	rs := []Result{{Source: src.path, Format: src.format, SessionID: id, Messages: prov.Messages, Reason: "already imported"}}
	for _, sub := range prov.Subagents {
		rs = append(rs, Result{Source: src.path + "#" + sub.Key, Format: src.format, SessionID: sub.ID, ParentID: id, Reason: "already imported"})
	}
	return rs, true
}

// ProvenanceFile is the name of the provenance record in a session's
// sidecar directory.
const ProvenanceFile = "import.json"

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// finish writes f as the session r names, or, when an earlier import
// wrote it, brings it up to date if its source only grew since and trove
// left it as it was.
func finish(ctx context.Context, st *trove.Store, r Result, o Options, src source, f *v3) (Result, error) {
	if r.Messages == 0 {
		r.Reason = "no messages"
		return r, nil
	}
	name, err := o.known.find(ctx, r.SessionID)
	if err == nil {
		return update(ctx, st, r, o, src, f, name)
	}
	if o.DryRun {
		r.Imported = true
		return r, nil
	}
	if err := writeV3(ctx, st, o.known, r.SessionID, f, src, ""); err != nil {
		if errors.Is(err, fs.ErrExist) {
			r.Reason = "already imported"
			return r, nil
		}
		return r, fmt.Errorf("import %s: %w", r.Source, err)
	}
	r.Imported = true
	return r, nil
}

func update(ctx context.Context, st *trove.Store, r Result, o Options, src source, f *v3, name string) (Result, error) {
	r.Reason = "already imported"
	var prov provenance
	data, err := st.Storage().ReadFile(ctx, backend.Join(session.SidecarDir(name), ProvenanceFile))
	if err != nil || json.Unmarshal(data, &prov) != nil || prov.SourceSHA256 == sha256Hex(src.data) {
		return r, nil // the same source, or a session this importer did not write
	}
	if prov.SourceSize > len(src.data) || sha256Hex(src.data[:prov.SourceSize]) != prov.SourceSHA256 {
		r.Reason = "the source differs from the version imported, beyond lines added: left as imported"
		return r, nil
	}
	cur, err := st.Storage().ReadFile(ctx, name)
	if err != nil {
		return r, fmt.Errorf("import %s: %w", r.Source, err)
	}
	if sha256Hex(cur) != prov.FileSHA256 {
		r.Reason = "the source grew, but the session changed in trove since it was imported: left as it is"
		return r, nil
	}
	r.Reason, r.Imported, r.Updated = "", true, true
	if o.DryRun {
		return r, nil
	}
	if err := writeV3(ctx, st, o.known, r.SessionID, f, src, name); err != nil {
		return r, fmt.Errorf("import %s: %w", r.Source, err)
	}
	return r, nil
}

// idFrom makes a uuid-shaped id (version 8, custom) from a content hash.
func idFrom(h []byte) string {
	b := append([]byte{}, h[:16]...)
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// bom is the UTF-8 byte order mark some editors and Windows tools put
// before a file's first line: not part of the JSON that follows it.
var bom = []byte("\xef\xbb\xbf")

// eachLine calls fn with each line of data, without its end (nor a byte
// order mark before the first).
func eachLine(data []byte, fn func([]byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, bom)))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %v", tree.ErrInvalid, err)
	}
	return nil
}

func detect(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, bom)))
	sc.Buffer(nil, 64<<20)
	pi := false
	for i := 0; i < 20 && sc.Scan(); i++ {
		var probe struct {
			ParentID  json.RawMessage `json:"parent_id"` // null (a root) names agent JSONL too
			Type      string          `json:"type"`
			UUID      string          `json:"uuid"`
			SessionID string          `json:"sessionId"`
			Payload   json.RawMessage `json:"payload"`
			Record    string          `json:"record_type"` // Codex's before session_meta
		}
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			continue
		}
		switch {
		case probe.UUID != "" || probe.SessionID != "":
			return "claude"
		case probe.Type == "session_meta" || probe.Payload != nil || probe.Record != "":
			return "codex"
		case probe.ParentID != nil:
			return "agent-jsonl"
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
	parent  string            // lineage: the session this one was forked or spawned from
	created int64             // Unix milliseconds the source says it started; 0 when it does not
	srcID   string            // the source's own id of the session, if it has one
	tasks   map[string]string // Claude Code Task calls: prompt -> description
	msgs    []srcMsg
	alias   map[string]string // source id -> id of the entry standing for it
	// damaged counts lines whose message does not parse, or entries naming
	// no entry before them.
	damaged int
	// dropped counts the messages before a Resume, not kept (kindDropped).
	dropped int
	// subs are subagent conversations (Claude Code sidechains), each keyed
	// by its root's source id.
	subs []*conversation
	key  string
}

func (c *conversation) messages() int {
	n := c.dropped
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
	details    any    // a branch summary's details
}

const (
	kindCompaction    = "compaction"
	kindBranchSummary = "branch_summary"
)

// v3 is a session ready to be written: its header's fields and its
// entries as pi session v3 objects, ids and parents set.
type v3 struct {
	cwd, title, parent, model string
	srcID                     string   // the source's own id of the session (pi)
	subs                      []subRef // the sessions made from its sidechains
	created, updated          time.Time
	entries                   []map[string]any
}

// toV3 gives the conversation's entries ids derived from the session's
// (an import writes the same bytes each time), parents through the
// aliases, and the source's times.
func (c *conversation) toV3(id string) *v3 {
	f := &v3{cwd: c.cwd, title: c.title, parent: c.parent, model: c.model}
	em := newEmitter(id, c.created)
	for _, m := range c.msgs {
		if e := em.emit(c, m); e != nil {
			f.entries = append(f.entries, e)
		}
	}
	f.created, f.updated = c.times(em, f.entries)
	return f
}

// times are when the conversation started and was last written to, once
// em has emitted its entries (the first of them in first).
func (c *conversation) times(em *emitter, first []map[string]any) (created, updated time.Time) {
	created, updated = time.UnixMilli(c.created).UTC(), time.UnixMilli(em.at).UTC()
	if c.created == 0 && len(first) > 0 {
		created, _ = time.Parse(time.RFC3339Nano, first[0]["timestamp"].(string))
	}
	return created, updated
}

// emitter turns a conversation's messages into pi session v3 entries one at a
// time, so a growing source's new messages are converted alone. A fork
// converts messages a later line may still change without touching its
// base.
type emitter struct {
	base   *emitter
	ids    *ids
	mapped map[string]string // source id -> entry id
	leaf   string
	at     int64
}

func newEmitter(session string, created int64) *emitter {
	return &emitter{ids: newIDs(session), mapped: map[string]string{}, at: created}
}

func (e *emitter) fork() *emitter {
	return &emitter{base: e, ids: e.ids.fork(), mapped: map[string]string{}, leaf: e.leaf, at: e.at}
}

func (e *emitter) lookup(id string) (string, bool) {
	for x := e; x != nil; x = x.base {
		if v, ok := x.mapped[id]; ok {
			return v, true
		}
	}
	return "", false
}

// emit is the entry of m, nil when it is left out.
func (e *emitter) emit(c *conversation, m srcMsg) map[string]any {
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
	parent := ""
	if p := resolve(m.parent); p != "" {
		var ok bool
		if parent, ok = e.lookup(p); !ok {
			parent = e.leaf // it names nothing imported: it continues the last entry
		}
	}
	switch {
	case m.at != 0:
		e.at = m.at
	case m.msg != nil:
		var ts struct{ Timestamp int64 }
		if json.Unmarshal(m.msg, &ts) == nil && ts.Timestamp != 0 {
			e.at = ts.Timestamp
		}
	}
	ent := map[string]any{"type": "message", "id": e.ids.next(), "parentId": nil, "timestamp": isoMillis(e.at)}
	if parent != "" {
		ent["parentId"] = parent
	}
	switch m.kind {
	case "":
		ent["message"] = decode(m.msg)
	case kindCompaction:
		kept, ok := e.lookup(resolve(m.firstKept))
		if !ok {
			e.mapped[m.id] = parent // it names nothing imported: left out
			return nil
		}
		ent["type"], ent["summary"], ent["firstKeptEntryId"], ent["tokensBefore"] = kindCompaction, m.summary, kept, m.tokens
	case kindBranchSummary:
		from := parent
		if from == "" {
			from = "root"
		}
		ent["type"], ent["summary"], ent["fromId"] = kindBranchSummary, m.summary, from
		if m.details != nil {
			ent["details"] = m.details
		}
	}
	e.mapped[m.id], e.leaf = ent["id"].(string), ent["id"].(string)
	return ent
}

// ids hands out a session's entry ids: 8 hex digits derived from the
// session id and a counter, unique within the session.
type ids struct {
	session string
	n       int
	taken   map[string]bool
	base    *ids
}

func newIDs(session string) *ids { return &ids{session: session, taken: map[string]bool{}} }

func (g *ids) fork() *ids { return &ids{session: g.session, n: g.n, taken: map[string]bool{}, base: g} }

func (g *ids) next() string {
	for {
		g.n++
		h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", g.session, g.n))
		id := hex.EncodeToString(h[:4])
		if !g.has(id) {
			g.taken[id] = true
			return id
		}
	}
}

func (g *ids) has(id string) bool {
	for x := g; x != nil; x = x.base {
		if x.taken[id] {
			return true
		}
	}
	return false
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

// writeV3 stores f as the session id (at name, replacing it; "" for a new
// session): its images and big tool outputs moved to the blob store, the
// file checked against the writing contract and written whole (one write,
// so a reader never sees part of it), then its sidecar with the source's
// times and its provenance.
func writeV3(ctx context.Context, s *trove.Store, k *SessionIndex, id string, f *v3, src source, name string) error {
	f.defaults()
	if name == "" {
		name = session.SessionPath(f.cwd, f.created, id)
		if ok, err := k.fresh(ctx, id, name); err != nil {
			return err
		} else if !ok {
			return fs.ErrExist
		}
	}
	for _, e := range f.entries {
		if err := externalize(ctx, s.Blobs(), e); err != nil {
			return err
		}
	}
	data, err := f.encode(id)
	if err != nil {
		return err
	}
	if err := s.Storage().WriteFile(ctx, name, data); err != nil {
		return err
	}
	k.add(id, name)
	n := 0
	for _, e := range f.entries {
		if e["type"] == "message" {
			n++
		}
	}
	prov, err := json.Marshal(provenance{Format: src.format, Source: src.path, SourceSize: len(src.data),
		SourceSHA256: sha256Hex(src.data), FileSHA256: sha256Hex(data), Messages: n, Subagents: f.subs})
	if err != nil {
		return err
	}
	if err := s.Storage().WriteFile(ctx, backend.Join(session.SidecarDir(name), ProvenanceFile), prov); err != nil {
		return err
	}
	return s.Sessions().UpdateMetadata(ctx, name, func(m *session.Metadata) {
		if f.model != "" && (m.Model == "" || m.Model == tree.UnknownModel) {
			m.Model = f.model
		}
		m.UpdatedAt = f.updated
	})
}

// defaults fills what the source did not say.
func (f *v3) defaults() {
	if f.cwd == "" {
		f.cwd = "/imported"
	}
	if f.created.IsZero() || f.created.Unix() <= 0 {
		f.created = time.Now().UTC()
	}
	if f.updated.Before(f.created) {
		f.updated = f.created
	}
}

// encode is the session file of f, checked against the writing contract.
func (f *v3) encode(id string) ([]byte, error) {
	var buf []byte
	for _, v := range append([]map[string]any{f.header(id)}, f.entries...) {
		var err error
		if buf, err = appendLine(buf, v); err != nil {
			return nil, err
		}
	}
	if err := tree.Check(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// header is the session header of f.
func (f *v3) header(id string) map[string]any {
	hdr := map[string]any{"type": "session", "version": 3, "id": id, "timestamp": f.created.Format("2006-01-02T15:04:05.000Z"), "cwd": f.cwd}
	if f.title != "" {
		hdr["title"] = f.title
	}
	if f.parent != "" {
		hdr["parentSession"] = f.parent
	}
	return hdr
}

// appendLine appends v to buf as one JSON line, HTML left unescaped.
func appendLine(buf []byte, v any) ([]byte, error) {
	b := bytes.NewBuffer(buf)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
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

// assistant builds a pi session v3 assistant message with everything a strict
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
