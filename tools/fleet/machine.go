package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/tools/internal/treehash"
)

// Roles of machines: the first three have one job each, the rest write.
const (
	RoleGC     = "gc"
	RoleMirror = "mirror"
	RoleList   = "list"
	RoleWriter = "writer"
)

// MachineConfig is what one machine process is told, as JSON in its last
// argument.
type MachineConfig struct {
	ID        int           `json:"id"`
	Inc       int           `json:"inc"`
	Role      string        `json:"role"`
	Machines  int           `json:"machines"`
	URL       string        `json:"url"`
	MirrorURL string        `json:"mirror_url"`
	Dir       string        `json:"dir"` // the run's directory: journals/, m<ID>/
	Offset    time.Duration `json:"offset"`
	LeaseTTL  time.Duration `json:"lease_ttl"`
	Skew      time.Duration `json:"skew"`
	Grace     time.Duration `json:"grace"`
	Timeout   time.Duration `json:"timeout"` // per bucket request
	Pace      time.Duration `json:"pace"`    // a writer's mean pause between operations
	Seed      uint64        `json:"seed"`
}

func (c MachineConfig) host() string      { return fmt.Sprintf("machine-%02d", c.ID) }
func (c MachineConfig) home() string      { return filepath.Join(c.Dir, fmt.Sprintf("m%02d", c.ID)) }
func (c MachineConfig) workspace() string { return filepath.Join(c.home(), "ws") }
func journalDir(dir string) string        { return filepath.Join(dir, "journals") }

// openStore opens the shared bucket as machine c: its host name, its clock
// offset, its lease settings.
func openStore(ctx context.Context, c MachineConfig, log *slog.Logger) (*trove.Store, error) {
	now := func() time.Time { return time.Now().Add(c.Offset) }
	return trove.Open(ctx, c.URL, trove.WithClock(now), trove.WithLogger(log), trove.WithTimeout(c.Timeout),
		trove.WithSessionOptions(session.WithHost(c.host()), session.WithLease(c.LeaseTTL, c.Skew)))
}

// machine is one running machine process.
type machine struct {
	c    MachineConfig
	s    *trove.Store
	j    *journal
	rng  *rand.Rand
	open map[string]*session.Handle
	seq  int
	cps  []Rec // own acknowledged checkpoints (every incarnation)
	peer []Rec // other machines' records, refreshed now and then
}

// Machine runs machine c until it is killed. It returns only when it
// cannot go on (the parent restarts it).
func Machine(ctx context.Context, c MachineConfig, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if err := os.MkdirAll(c.workspace(), 0o700); err != nil {
		return err
	}
	j, err := openJournal(journalDir(c.Dir), c.ID, c.Inc)
	if err != nil {
		return err
	}
	defer j.close()
	s, err := openStore(ctx, c, log)
	if err != nil {
		return fmt.Errorf("machine %d: open: %w", c.ID, err)
	}
	defer s.Close()
	m := &machine{c: c, s: s, j: j, rng: rand.New(rand.NewPCG(c.Seed, uint64(c.ID)<<32|uint64(c.Inc))), open: map[string]*session.Handle{}}
	own, err := readJournal(journalDir(c.Dir), c.ID)
	if err != nil {
		return err
	}
	for _, r := range own {
		if r.Op == "cp" {
			m.cps = append(m.cps, r)
		}
	}
	switch c.Role {
	case RoleGC:
		return m.loop(ctx, m.gc)
	case RoleMirror:
		return m.loop(ctx, m.mirror)
	case RoleList:
		return m.loop(ctx, m.list)
	}
	return m.loop(ctx, m.write)
}

// opDeadline bounds each operation, longDeadline a GC or mirror run (of
// hundreds of requests); one that returns later than its deadline (and a
// little slack) is journalled overdue.
const opDeadline, longDeadline, opSlack = 60 * time.Second, 5 * time.Minute, 2 * time.Second

// loop runs step until the context ends; a failed step is reported and
// the loop goes on, as an agent would.
func (m *machine) loop(ctx context.Context, step func(context.Context) error) error {
	deadline := opDeadline
	if m.c.Role == RoleGC || m.c.Role == RoleMirror {
		deadline = longDeadline
	}
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, deadline)
		start := time.Now()
		err := step(sctx)
		cancel()
		if took := time.Since(start); took > deadline+opSlack {
			m.j.add(Rec{Op: "overdue", Start: start, Note: fmt.Sprintf("an operation took %v, past its %v deadline (%v)", took.Round(time.Millisecond), deadline, err)})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "machine %d: %v\n", m.c.ID, err)
		}
	}
	return ctx.Err()
}

func (m *machine) pause(d time.Duration) {
	time.Sleep(d/2 + time.Duration(m.rng.Int64N(int64(d))))
}

func (m *machine) gc(ctx context.Context) error {
	m.pause(time.Second)
	start := time.Now()
	rep, err := m.s.GC(ctx, trove.GCGrace(m.c.Grace))
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	return m.j.add(Rec{Op: "gc", Start: start, N: len(rep.Deleted)})
}

func (m *machine) mirror(ctx context.Context) error {
	m.pause(2 * time.Second)
	dst, err := open.URL(ctx, m.c.MirrorURL, open.WithTimeout(m.c.Timeout))
	if err != nil {
		return err
	}
	defer dst.Close()
	start := time.Now()
	rep, err := trove.Mirror(ctx, m.s.Storage(), dst)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	return m.j.add(Rec{Op: "mirror", Start: start, N: rep.Copied})
}

// list lists every session and checks that each one a machine had
// acknowledged messages in before the listing started is listed.
func (m *machine) list(ctx context.Context) error {
	m.pause(time.Second)
	recs, err := readAll(journalDir(m.c.Dir), m.c.Machines)
	if err != nil {
		return err
	}
	start := time.Now()
	want := map[string]bool{}
	for _, r := range recs {
		if r.Op == "msg" {
			want[r.Session] = true
		}
	}
	got := map[string]bool{}
	for meta, err := range m.s.Sessions().List(ctx, "") {
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		got[meta.ID] = true
	}
	bad := 0
	var missing []string
	for id := range want {
		if !got[id] {
			bad++
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	note := ""
	if len(missing) > 0 {
		note = fmt.Sprintf("not listed: %v", missing[:min(len(missing), 5)])
	}
	return m.j.add(Rec{Op: "list", Start: start, N: len(got), Bad: bad, Note: note})
}

// cwds are shared by every machine, so listings meet concurrent writers.
var cwds = []string{"/fleet/alpha", "/fleet/beta", "/fleet/gamma"}

func (m *machine) write(ctx context.Context) error {
	if m.c.Pace > 0 {
		m.pause(m.c.Pace)
	}
	switch op := m.rng.IntN(100); {
	case op < 45:
		return m.appendMsg(ctx)
	case op < 52:
		return m.closeOne(ctx)
	case op < 62:
		return m.readOther(ctx)
	case op < 70:
		return m.takeOver(ctx)
	case op < 82:
		return m.checkpoint(ctx)
	case op < 87:
		return m.rewind(ctx)
	default:
		return m.runlog(ctx)
	}
}

// handle is an open session of this machine's, a new one when it holds
// none (or few).
func (m *machine) handle(ctx context.Context) (*session.Handle, error) {
	if len(m.open) == 0 || (len(m.open) < 3 && m.rng.IntN(10) == 0) {
		h, err := m.s.Sessions().Create(ctx, session.CreateOptions{Cwd: cwds[m.rng.IntN(len(cwds))], Model: "fleet"})
		if err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		m.open[h.ID()] = h
		if err := m.j.add(Rec{Op: "hold", Session: h.ID(), Path: h.Path()}); err != nil {
			return nil, err
		}
		return h, nil
	}
	ids := make([]string, 0, len(m.open))
	for id := range m.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return m.open[ids[m.rng.IntN(len(ids))]], nil
}

// drop forgets a handle whose writes failed (its lease ran out, or was
// taken): what it held unacknowledged is not in the journal.
func (m *machine) drop(ctx context.Context, h *session.Handle, why error) error {
	delete(m.open, h.ID())
	h.Close(ctx)
	return fmt.Errorf("session %s: %w", h.ID(), why)
}

// payloads shared by every machine: the same blobs put from many places.
func sharedPayload(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "fleet shared payload %d", i))
	return string(bytesOf(hex.EncodeToString(sum[:]), 70<<10))
}

func bytesOf(seed string, n int) []byte {
	b := make([]byte, 0, n+len(seed))
	for len(b) < n {
		b = append(b, seed...)
	}
	return b[:n]
}

func (m *machine) appendMsg(ctx context.Context) error {
	h, err := m.handle(ctx)
	if err != nil {
		return err
	}
	m.seq++
	text := fmt.Sprintf("m%d.%d.%d", m.c.ID, m.c.Inc, m.seq)
	user, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": m.seq})
	if err := h.AppendMessage(ctx, user); err != nil {
		return m.drop(ctx, h, err)
	}
	blob := ""
	if m.rng.IntN(4) == 0 {
		// A tool output over 64 KiB goes to the blob store: shared
		// payloads (the same blob from many machines) or a new one.
		out := sharedPayload(m.rng.IntN(8))
		if m.rng.IntN(2) == 0 {
			out = string(bytesOf(text+" unique ", 66<<10))
		}
		sum := sha256.Sum256([]byte(out))
		blob = hex.EncodeToString(sum[:])
		res, _ := json.Marshal(map[string]any{"role": "toolResult", "toolCallId": text, "toolName": "bash",
			"content": []any{map[string]any{"type": "text", "text": out}}, "isError": false, "timestamp": m.seq})
		if err := h.AppendMessage(ctx, res); err != nil {
			return m.drop(ctx, h, err)
		}
	}
	start := time.Now()
	if err := h.Flush(ctx); err != nil {
		return m.drop(ctx, h, err)
	}
	return m.j.add(Rec{Op: "msg", Start: start, Session: h.ID(), Path: h.Path(), Text: text, Blob: blob})
}

func (m *machine) closeOne(ctx context.Context) error {
	if len(m.open) == 0 {
		return nil
	}
	h, err := m.handle(ctx)
	if err != nil {
		return err
	}
	delete(m.open, h.ID())
	if err := h.Close(ctx); err != nil {
		return fmt.Errorf("close %s: %w", h.ID(), err)
	}
	return m.j.add(Rec{Op: "close", Session: h.ID(), Path: h.Path()})
}

// peers refreshes what the other machines acknowledged, now and then.
func (m *machine) peers() ([]Rec, error) {
	if m.peer == nil || m.rng.IntN(8) == 0 {
		all, err := readAll(journalDir(m.c.Dir), m.c.Machines)
		if err != nil {
			return nil, err
		}
		m.peer = m.peer[:0]
		for _, r := range all {
			if (r.Machine != m.c.ID || r.Inc != m.c.Inc) && (r.Op == "msg" || r.Op == "hold") {
				m.peer = append(m.peer, r)
			}
		}
	}
	return m.peer, nil
}

// readOther reads a session another machine wrote: every message it had
// acknowledged before the read started must be there. Half the time it
// forks it.
func (m *machine) readOther(ctx context.Context) error {
	peer, err := m.peers()
	if err != nil || len(peer) == 0 {
		return err
	}
	pr := peer[m.rng.IntN(len(peer))]
	sid := pr.Session
	recs, err := readAll(journalDir(m.c.Dir), m.c.Machines)
	if err != nil {
		return err
	}
	start := time.Now()
	msgs, err := m.s.Sessions().LoadMessages(ctx, pr.Path)
	if err != nil {
		return fmt.Errorf("read %s: %w", sid, err)
	}
	seen := map[string]bool{}
	for _, e := range msgs {
		seen[markerOf(e.JSON())] = true
	}
	bad := 0
	for _, r := range recs {
		if r.Op == "msg" && r.Session == sid && r.At.Before(start) && !seen[r.Text] {
			bad++
		}
	}
	if err := m.j.add(Rec{Op: "read", Start: start, Session: sid, Path: pr.Path, N: len(msgs), Bad: bad}); err != nil {
		return err
	}
	if m.rng.IntN(2) == 0 {
		return nil
	}
	h, err := m.s.Sessions().Fork(ctx, pr.Path, session.ForkOptions{Last: 1 + m.rng.IntN(6)})
	if err != nil {
		return fmt.Errorf("fork %s: %w", sid, err)
	}
	m.open[h.ID()] = h
	return m.j.add(Rec{Op: "fork", Session: h.ID(), Path: h.Path(), From: sid})
}

// takeOver resumes a session another machine wrote: refused while its
// holder lives, taken once its lease expired or was released.
func (m *machine) takeOver(ctx context.Context) error {
	peer, err := m.peers()
	if err != nil || len(peer) == 0 {
		return err
	}
	pr := peer[m.rng.IntN(len(peer))]
	sid := pr.Session
	if _, ok := m.open[sid]; ok {
		return nil
	}
	h, err := m.s.Sessions().Resume(ctx, pr.Path)
	var held *session.HeldError
	switch {
	case errors.As(err, &held):
		return m.j.add(Rec{Op: "refused", Session: sid, Path: pr.Path, Note: fmt.Sprintf("%s since %s", held.Holder.Host, held.Holder.Since.Format(time.RFC3339))})
	case errors.Is(err, session.ErrLocked):
		return nil // another taker won the generation
	case err != nil:
		return fmt.Errorf("resume %s: %w", sid, err)
	}
	m.open[sid] = h
	from := ""
	if prev, ok := h.TookOver(); ok {
		from = fmt.Sprintf("%s since %s", prev.Host, prev.Since.Format(time.RFC3339))
	}
	return m.j.add(Rec{Op: "hold", Session: sid, Path: h.Path(), From: from})
}

func (m *machine) checkpoint(ctx context.Context) error {
	ws := m.c.workspace()
	for range 1 + m.rng.IntN(3) {
		name := filepath.Join(ws, fmt.Sprintf("f%02d.txt", m.rng.IntN(12)))
		if m.rng.IntN(5) == 0 {
			os.Remove(name)
			continue
		}
		if err := os.WriteFile(name, bytesOf(fmt.Sprintf("m%d.%d.%d %d\n", m.c.ID, m.c.Inc, m.seq, m.rng.Uint64()), 100+m.rng.IntN(5000)), 0o600); err != nil {
			return err
		}
	}
	cm, err := m.s.Checkpoints(ws)
	if err != nil {
		return err
	}
	defer cm.Close()
	m.seq++
	id := fmt.Sprintf("cp-%d-%d-%d", m.c.ID, m.c.Inc, m.seq)
	if _, err := cm.CreateTree(ctx, id); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	files, err := treehash.Hash(ws, treehash.Options{})
	if err != nil {
		return err
	}
	r := Rec{Op: "cp", Name: id, Files: files}
	m.cps = append(m.cps, r)
	return m.j.add(r)
}

// rewind rewinds the workspace to an acknowledged checkpoint and compares
// it, file by file, with what the checkpoint held.
func (m *machine) rewind(ctx context.Context) error {
	if len(m.cps) == 0 {
		return nil
	}
	cp := m.cps[m.rng.IntN(len(m.cps))]
	cm, err := m.s.Checkpoints(m.c.workspace())
	if err != nil {
		return err
	}
	defer cm.Close()
	if _, err := cm.Rewind(ctx, cp.Name, false); err != nil {
		return fmt.Errorf("rewind %s: %w", cp.Name, err)
	}
	got, err := treehash.Hash(m.c.workspace(), treehash.Options{})
	if err != nil {
		return err
	}
	bad := 0
	for name, sum := range cp.Files {
		if got[name] != sum {
			bad++
		}
	}
	for name := range got {
		if _, ok := cp.Files[name]; !ok {
			bad++
		}
	}
	return m.j.add(Rec{Op: "rewind", Name: cp.Name, Bad: bad})
}

func (m *machine) runlog(ctx context.Context) error {
	w, err := m.s.Runs().Create(ctx, &runlog.Header{RunID: runlog.NewID()})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	n := 1 + m.rng.IntN(5)
	for i := range n {
		if _, err := w.Event(ctx, map[string]any{"machine": m.c.ID, "i": i}); err != nil {
			w.Close()
			return fmt.Errorf("run event: %w", err)
		}
	}
	if err := w.Sync(ctx); err != nil {
		w.Close()
		return fmt.Errorf("run sync: %w", err)
	}
	if err := m.j.add(Rec{Op: "run", Name: w.RunID(), Path: w.Path(), N: n}); err != nil {
		return err
	}
	return w.Close()
}
