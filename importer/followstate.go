package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend"
)

// ErrRebuild is returned by Feed on a Follower made by Resume when the
// store changed under it in a way only the whole source can answer (another
// writer rewrote a session it follows): follow the source again from its
// start.
var ErrRebuild = errors.New("importer: the followed session changed: read the source again")

// A Follower's state (State, Resume) holds what converting the next lines
// needs: the parsers' maps of source ids, the entry ids handed out, the
// messages a later line may still change, and what each session file ends
// with. Messages converted for good are left out, so the state of a 100 MB
// session is a few bytes per message, not its content.
const stateVersion = 1

type followState struct {
	V      int               `json:"v"`
	Path   string            `json:"path"`
	Format string            `json:"format"`
	Size   int64             `json:"size"`
	Hash   []byte            `json:"hash"`  // SHA-256 state of the bytes fed
	Tasks  map[string]string `json:"tasks"` // null: not read yet
	TasksN int               `json:"tasks_n,omitempty"`
	Live   []liveState       `json:"live,omitempty"`
	Claude *claudeState      `json:"claude,omitempty"`
	Codex  *codexState       `json:"codex,omitempty"`
	Pi     *piState          `json:"pi,omitempty"`
	Agent  *agentState       `json:"agent_jsonl,omitempty"`
}

type liveState struct {
	ID        string            `json:"id"`
	Name      string            `json:"name,omitempty"`
	IDs       int               `json:"ids,omitempty"` // entry ids handed out
	Mapped    map[string]string `json:"mapped,omitempty"`
	Leaf      string            `json:"leaf,omitempty"`
	At        int64             `json:"at,omitempty"`
	Emitter   bool              `json:"emitter,omitempty"`
	Done      int               `json:"done,omitempty"`
	First     string            `json:"first,omitempty"`
	Msgs      int               `json:"msgs,omitempty"`
	Header    []byte            `json:"header,omitempty"`
	Base      int64             `json:"base,omitempty"`
	BaseSum   []byte            `json:"base_sum,omitempty"`
	Body      []byte            `json:"body_sum,omitempty"`
	Tail      []byte            `json:"tail,omitempty"`
	Tent      []byte            `json:"tent,omitempty"`
	TentMsgs  int               `json:"tent_msgs,omitempty"`
	Fed       int64             `json:"fed,omitempty"`
	Uncounted []byte            `json:"uncounted,omitempty"`
	Recount   bool              `json:"recount,omitempty"`
	Gone      string            `json:"gone,omitempty"`
}

// convState is a conversation, its messages before Dropped (converted for
// good) left out but for the first, which names a subagent.
type convState struct {
	Cwd         string            `json:"cwd,omitempty"`
	Model       string            `json:"model,omitempty"`
	Title       string            `json:"title,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	Created     int64             `json:"created,omitempty"`
	SrcID       string            `json:"src_id,omitempty"`
	Key         string            `json:"key,omitempty"`
	Alias       map[string]string `json:"alias,omitempty"`
	Damaged     int               `json:"damaged,omitempty"`
	Dropped     int               `json:"dropped,omitempty"`
	DroppedMsgs int               `json:"dropped_msgs,omitempty"`
	First       *msgState         `json:"first,omitempty"`
	Msgs        []msgState        `json:"msgs,omitempty"`
}

type msgState struct {
	ID        string          `json:"id,omitempty"`
	Parent    string          `json:"parent,omitempty"`
	At        int64           `json:"at,omitempty"`
	Msg       json.RawMessage `json:"msg,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	FirstKept string          `json:"first_kept,omitempty"`
	Tokens    int64           `json:"tokens,omitempty"`
	Details   any             `json:"details,omitempty"`
}

type claudeConvState struct {
	Conv      convState       `json:"conv"`
	APIID     string          `json:"api_id,omitempty"`
	UUID      string          `json:"uuid,omitempty"`
	Index     int             `json:"index,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	TS        int64           `json:"ts,omitempty"`
	PreTokens int64           `json:"pre_tokens,omitempty"`
}

type claudeState struct {
	Main  claudeConvState   `json:"main"`
	Subs  []claudeConvState `json:"subs,omitempty"`
	Owner map[string]string `json:"owner,omitempty"` // uuid -> conversation key ("" for the main one)
	Tools map[string]string `json:"tools,omitempty"`
	Tasks map[string]string `json:"tasks,omitempty"`
}

type codexState struct {
	Conv    convState         `json:"conv"`
	Tools   map[string]string `json:"tools,omitempty"`
	Pending json.RawMessage   `json:"pending,omitempty"`
	TS      int64             `json:"ts,omitempty"`
	N       int               `json:"n"`
}

type piState struct {
	Cwd     string           `json:"cwd,omitempty"`
	Title   string           `json:"title,omitempty"`
	Parent  string           `json:"parent,omitempty"`
	SrcID   string           `json:"src_id,omitempty"`
	Created []byte           `json:"created,omitempty"`
	Dropped int              `json:"dropped,omitempty"`
	Entries []map[string]any `json:"entries,omitempty"`
	Version int              `json:"version,omitempty"`
	Header  bool             `json:"header,omitempty"`
	Msgs    int              `json:"msgs,omitempty"`
	Prev    any              `json:"prev,omitempty"`
}

type agentState struct {
	Conv  convState       `json:"conv"`
	Known map[string]bool `json:"known,omitempty"`
}

// State is what Resume needs to go on following the source from Size():
// a later process reads only the bytes appended since.
func (f *Follower) State() ([]byte, error) {
	hs, err := f.hash.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	s := followState{V: stateVersion, Path: f.path, Format: f.format, Size: f.size, Hash: hs, Tasks: f.tasks, TasksN: f.tasksN}
	done := map[*conversation]int{}
	for _, l := range f.live {
		s.Live = append(s.Live, l.state())
	}
	slices.SortFunc(s.Live, func(a, b liveState) int { return strings.Compare(a.ID, b.ID) })
	// A conversation's messages are kept from the first its session has
	// not converted for good.
	doneOf := func(id string) int {
		if l := f.live[id]; l != nil && l.header != nil {
			return l.done
		}
		return 0
	}
	switch p := f.parser.(type) {
	case *claudeParser:
		mainID := source{}.id(f.format, claudeID(f.path))
		done[p.main.conversation] = doneOf(mainID)
		for _, sub := range p.main.subs {
			done[sub] = doneOf(subID(mainID, sub.key))
		}
		s.Claude = p.state(done)
	case *codexParser:
		s.Codex = &codexState{Conv: p.c.state(doneOf(source{}.id(f.format, p.c.srcID))), Tools: p.tools, TS: p.pendingTS, N: p.n}
		if s.Codex.Pending, err = json.Marshal(p.pending); err != nil {
			return nil, err
		}
	case *agentParser:
		s.Agent = &agentState{Conv: p.c.state(doneOf(source{}.id(f.format, p.c.srcID))), Known: p.known}
	case *piParser:
		drop := 0
		if p.header && p.f.srcID != "" {
			// The last entry stays: it dates the session.
			drop = max(0, min(doneOf(source{}.id("pi", p.f.srcID)), len(p.f.entries)-1))
		}
		created, err := p.f.created.MarshalBinary()
		if err != nil {
			return nil, err
		}
		s.Pi = &piState{Cwd: p.f.cwd, Title: p.f.title, Parent: p.f.parent, SrcID: p.f.srcID, Created: created, Dropped: drop,
			Entries: p.f.entries[drop:], Version: p.version, Header: p.header, Msgs: p.msgs, Prev: p.prev}
	}
	return json.Marshal(s)
}

func (l *live) state() liveState {
	s := liveState{ID: l.id, Name: l.name, Done: l.done, First: l.first, Msgs: l.msgs, Header: l.header, Base: l.base,
		BaseSum: l.baseSum, Body: l.bodySum, Tail: l.tail, Tent: l.tent, TentMsgs: l.tentMsgs, Fed: l.fed,
		Uncounted: l.uncounted, Recount: l.recount, Gone: l.gone}
	if l.em != nil {
		s.Emitter, s.IDs, s.Mapped, s.Leaf, s.At = true, l.em.ids.n, l.em.mapped, l.em.leaf, l.em.at
	}
	return s
}

func (c *conversation) state(done int) convState {
	s := convState{Cwd: c.cwd, Model: c.model, Title: c.title, Parent: c.parent, Created: c.created, SrcID: c.srcID, Key: c.key,
		Alias: c.alias, Damaged: c.damaged, Dropped: done, DroppedMsgs: c.dropped}
	for i, m := range c.msgs[:done] {
		switch {
		case i == 0:
			first := m.state()
			s.First = &first
		case m.kind == "":
			s.DroppedMsgs++
		}
	}
	for _, m := range c.msgs[done:] {
		s.Msgs = append(s.Msgs, m.state())
	}
	return s
}

func (m srcMsg) state() msgState {
	return msgState{ID: m.id, Parent: m.parent, At: m.at, Msg: m.msg, Kind: m.kind, Summary: m.summary, FirstKept: m.firstKept, Tokens: m.tokens, Details: m.details}
}

func (s msgState) msg() srcMsg {
	return srcMsg{id: s.ID, parent: s.Parent, at: s.At, msg: s.Msg, kind: s.Kind, summary: s.Summary, firstKept: s.FirstKept, tokens: s.Tokens, details: s.Details}
}

// kindDropped stands for a message converted for good before a Resume:
// never converted again, never counted (conversation.dropped counts them).
const kindDropped = "dropped"

func (s convState) conversation() *conversation {
	c := &conversation{cwd: s.Cwd, model: s.Model, title: s.Title, parent: s.Parent, created: s.Created, srcID: s.SrcID, key: s.Key,
		alias: s.Alias, damaged: s.Damaged, dropped: s.DroppedMsgs}
	if c.alias == nil {
		c.alias = map[string]string{}
	}
	c.msgs = make([]srcMsg, s.Dropped, s.Dropped+len(s.Msgs))
	for i := range c.msgs {
		c.msgs[i].kind = kindDropped
	}
	if s.First != nil && s.Dropped > 0 {
		c.msgs[0] = s.First.msg() // counted as itself, not in DroppedMsgs
	}
	for _, m := range s.Msgs {
		c.msgs = append(c.msgs, m.msg())
	}
	return c
}

func (p *claudeParser) state(done map[*conversation]int) *claudeState {
	conv := func(cc *claudeConv) claudeConvState {
		content, _ := json.Marshal(cc.last.content)
		return claudeConvState{Conv: cc.conversation.state(done[cc.conversation]), APIID: cc.last.apiID, UUID: cc.last.uuid,
			Index: cc.last.index, Content: content, TS: cc.last.ts, PreTokens: cc.preTokens}
	}
	s := &claudeState{Main: conv(p.main), Owner: map[string]string{}, Tools: p.tools, Tasks: p.tasks}
	for _, sub := range p.main.subs {
		s.Subs = append(s.Subs, conv(p.subs[sub]))
	}
	for uuid, cc := range p.owner {
		s.Owner[uuid] = cc.key
	}
	return s
}

// blocks decodes content blocks as the parsers made them: strings, and
// tool call arguments kept as the raw JSON they were.
func blocks(raw json.RawMessage) ([]any, error) {
	var list []map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	out := make([]any, len(list))
	for i, b := range list {
		m := map[string]any{}
		for k, v := range b {
			if k == "arguments" {
				m[k] = v
				continue
			}
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return nil, err
			}
			m[k] = x
		}
		out[i] = m
	}
	return out, nil
}

// Resume makes a Follower from a State, to be fed what the source gained
// after State's Size. Check it against the store (Verify) before feeding.
func Resume(st *trove.Store, state []byte) (*Follower, error) {
	var s followState
	if err := json.Unmarshal(state, &s); err != nil {
		return nil, fmt.Errorf("resume: %w: %v", fs.ErrInvalid, err)
	}
	if s.V != stateVersion {
		return nil, fmt.Errorf("resume %s: state version %d: %w", s.Path, s.V, fs.ErrInvalid)
	}
	f, err := Follow(st, s.Path, s.Format, nil)
	if err != nil {
		return nil, err
	}
	if err := f.hash.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.Hash); err != nil {
		return nil, fmt.Errorf("resume %s: %w: %v", s.Path, fs.ErrInvalid, err)
	}
	f.size, f.tasks, f.tasksN, f.resumed = s.Size, s.Tasks, s.TasksN, true
	for _, ls := range s.Live {
		f.live[ls.ID] = ls.live()
	}
	bad := fmt.Errorf("resume %s: no state of its %s parser: %w", s.Path, s.Format, fs.ErrInvalid)
	switch p := f.parser.(type) {
	case *claudeParser:
		if s.Claude == nil {
			return nil, bad
		}
		err = p.resume(s.Claude)
	case *codexParser:
		if s.Codex == nil {
			return nil, bad
		}
		p.c, p.tools, p.pendingTS, p.n = s.Codex.Conv.conversation(), orEmpty(s.Codex.Tools), s.Codex.TS, s.Codex.N
		p.pending, err = blocks(s.Codex.Pending)
	case *agentParser:
		if s.Agent == nil {
			return nil, bad
		}
		p.c, p.known = s.Agent.Conv.conversation(), s.Agent.Known
		if p.known == nil {
			p.known = map[string]bool{}
		}
	case *piParser:
		if s.Pi == nil {
			return nil, bad
		}
		x := s.Pi
		p.f = v3{cwd: x.Cwd, title: x.Title, parent: x.Parent, srcID: x.SrcID}
		err = p.f.created.UnmarshalBinary(x.Created)
		p.f.entries = make([]map[string]any, x.Dropped, x.Dropped+len(x.Entries))
		p.f.entries = append(p.f.entries, x.Entries...)
		p.version, p.header, p.msgs, p.prev = x.Version, x.Header, x.Msgs, x.Prev
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w: %v", s.Path, fs.ErrInvalid, err)
	}
	return f, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (s liveState) live() *live {
	l := &live{id: s.ID, name: s.Name, done: s.Done, first: s.First, msgs: s.Msgs, header: s.Header, base: s.Base,
		baseSum: s.BaseSum, bodySum: s.Body, tail: s.Tail, tent: s.Tent, tentMsgs: s.TentMsgs, fed: s.Fed,
		uncounted: s.Uncounted, recount: s.Recount, gone: s.Gone}
	if s.Emitter {
		l.em = &emitter{ids: newIDs(s.ID), mapped: orEmpty(s.Mapped), leaf: s.Leaf, at: s.At}
		for l.em.ids.n < s.IDs {
			l.em.ids.next() // the same ids, taken again
		}
	}
	return l
}

func (p *claudeParser) resume(s *claudeState) error {
	conv := func(cs claudeConvState) (*claudeConv, error) {
		content, err := blocks(cs.Content)
		cc := &claudeConv{conversation: cs.Conv.conversation(), preTokens: cs.PreTokens,
			last: lastAssistant{apiID: cs.APIID, uuid: cs.UUID, index: cs.Index, content: content, ts: cs.TS}}
		return cc, err
	}
	main, err := conv(s.Main)
	if err != nil {
		return err
	}
	p.main, p.tools, p.tasks = main, orEmpty(s.Tools), orEmpty(s.Tasks)
	main.tasks = p.tasks
	byKey := map[string]*claudeConv{"": main}
	for _, ss := range s.Subs {
		sub, err := conv(ss)
		if err != nil {
			return err
		}
		main.subs = append(main.subs, sub.conversation)
		p.subs[sub.conversation] = sub
		byKey[sub.key] = sub
	}
	for uuid, key := range s.Owner {
		if cc := byKey[key]; cc != nil {
			p.owner[uuid] = cc
		}
	}
	return nil
}

// Verify reports whether every session the Follower writes ends in the
// store as it left it (size and last bytes), so feeding it goes on where
// it stopped; false: follow the source again from its start.
func (f *Follower) Verify(ctx context.Context) (bool, error) {
	st := f.st.Storage()
	for _, l := range f.live {
		if l.gone != "" || l.header == nil {
			continue
		}
		fi, err := st.Stat(ctx, l.name)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		size := l.base + int64(len(l.tent))
		if fi.Size != size {
			return false, nil
		}
		want := append(append([]byte(nil), l.tail...), l.tent...)
		want = want[max(0, len(want)-tailLen):]
		got, err := readTail(ctx, st, l.name, size, int64(len(want)))
		if err != nil {
			return false, err
		}
		if !bytes.Equal(got, want) {
			return false, nil
		}
	}
	return true, nil
}

// tailLen is how many last bytes of each session file a State keeps to
// tell, with its size, that the file is as the Follower left it.
const tailLen = 1024

func readTail(ctx context.Context, st backend.Storage, name string, size, n int64) ([]byte, error) {
	r, err := st.OpenRange(ctx, name, size-n, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// After hands f what prev (a Follower of the same source that stopped,
// from State) knew of the session files it wrote: f, reading the source
// from its start, tells a file prev was writing when it stopped (its bytes
// through prev's last entry that could not change are prev's) from one
// changed in trove, and replaces it.
func (f *Follower) After(prev *Follower) {
	f.prev = prev.live
}

// prevWrote reports whether cur is a session file prev wrote, perhaps with
// a header or entries written after prev's state was kept.
func (f *Follower) prevWrote(id, name string, cur []byte) bool {
	l := f.prev[id]
	if l == nil || l.name != name || l.header == nil || l.bodySum == nil {
		return false
	}
	i := bytes.IndexByte(cur, '\n')
	body := l.base - int64(len(l.header))
	if i < 0 || int64(len(cur)-i-1) < body {
		return false
	}
	d := sha256.New()
	d.(encoding.BinaryUnmarshaler).UnmarshalBinary(l.bodySum)
	want := d.Sum(nil)
	got := sha256.Sum256(cur[i+1 : int64(i+1)+body])
	return bytes.Equal(got[:], want)
}
