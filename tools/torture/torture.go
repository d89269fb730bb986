package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session/tree"
	"github.com/trovekit/trove/tools/internal/treehash"
)

// Config says where and how hard to torture.
type Config struct {
	Dir   string // the store: a directory on the OS file system
	WS    string // the checkpointed workspace, beside the store
	Kills int
	Seed  uint64
	// Child is the command that runs one child (Child with the same
	// Dir, WS and a seed appended as its last argument).
	Child []string
	Log   io.Writer // progress, one line per kill; nil for none
	Env   []string  // the child's environment; nil for this process's
}

// Ack is one acknowledged operation, as a child prints it.
type Ack struct {
	Op      string            `json:"op"` // msg, transcript, blob, cp, run
	Session string            `json:"session,omitempty"`
	Path    string            `json:"path,omitempty"`
	Marker  string            `json:"marker,omitempty"`
	Ref     string            `json:"ref,omitempty"`
	Name    string            `json:"name,omitempty"`
	Files   map[string]string `json:"files,omitempty"` // checkpoint: path -> sha256 hex
	Run     string            `json:"run,omitempty"`
	Word    string            `json:"word,omitempty"` // msg: a word only it holds; search: the word sought
	Hits    int               `json:"hits,omitempty"` // search: the hits the child's own search found
}

// Result is what a torture run found.
type Result struct {
	Kills, Acked       int
	Lost, Torn         int // acknowledged operations missing, or present but damaged
	FsckProblems       int // problems fsck found after the resumes
	Rewinds            int // acknowledged checkpoints rewound and compared
	ResumeFailures     int
	StaleMeta          int      // resumed sessions whose metadata miscounts the file
	Failures           []string // what was lost or torn, first ones
	SessionsChecked    int
	BlobsChecked       int
	CheckpointsChecked int
	CatalogKills       int // children killed while searching or rebuilding the catalog
	CatalogWrong       int // searches after a kill that missed an acknowledged message or found it twice
	SearchesChecked    int
}

func (r Result) String() string {
	return fmt.Sprintf("kills=%d acked=%d lost=%d torn=%d fsck_problems=%d resume_failures=%d stale_meta=%d rewinds=%d catalog_kills=%d searches=%d catalog_wrong=%d",
		r.Kills, r.Acked, r.Lost, r.Torn, r.FsckProblems, r.ResumeFailures, r.StaleMeta, r.Rewinds, r.CatalogKills, r.SearchesChecked, r.CatalogWrong)
}

// OK reports whether nothing acknowledged was lost and the store stayed
// healthy.
func (r Result) OK() bool {
	return r.Lost == 0 && r.Torn == 0 && r.FsckProblems == 0 && r.ResumeFailures == 0 && r.StaleMeta == 0 && r.CatalogWrong == 0
}

func (r *Result) fail(format string, args ...any) {
	if len(r.Failures) < 20 {
		msg := fmt.Sprintf(format, args...)
		if len(msg) > 400 {
			msg = msg[:400] + "..."
		}
		r.Failures = append(r.Failures, msg)
	}
}

// Run kills cfg.Kills children and checks the store after each.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7047))
	if err := os.MkdirAll(cfg.WS, 0o700); err != nil {
		return res, err
	}
	var all []Ack
	for i := range cfg.Kills {
		acks, err := runChild(ctx, cfg, cfg.Seed*1000+uint64(i), rng)
		if err != nil {
			return res, err
		}
		res.Kills++
		if len(acks) > 0 && acks[len(acks)-1].Op == "searching" {
			res.CatalogKills++
		}
		res.Acked += len(acks)
		all = append(all, acks...)
		verify(ctx, cfg, acks, rng, &res)
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "kill %d: %d acks; %s\n", i+1, len(acks), res)
		}
	}
	// Everything any child acknowledged, once more at the end.
	verify(ctx, cfg, all, rng, &res)
	return res, nil
}

// runChild starts a child, lets it acknowledge a random number of
// operations, kills it at a random point and returns its acks.
func runChild(ctx context.Context, cfg Config, seed uint64, rng *rand.Rand) ([]Ack, error) {
	args := append(append([]string{}, cfg.Child[1:]...), fmt.Sprint(seed))
	cmd := exec.CommandContext(ctx, cfg.Child[0], args...)
	cmd.Stderr = os.Stderr
	cmd.Env = cfg.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	want := 1 + rng.IntN(40)
	delay := time.Duration(rng.IntN(3000)) * time.Microsecond
	var acks []Ack
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var a Ack
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			continue
		}
		acks = append(acks, a)
		if len(acks) == want {
			// A random point inside the next operations.
			time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return acks, nil
}

func open(ctx context.Context, cfg Config) (*trove.Store, error) {
	return trove.Open(ctx, cfg.Dir, trove.WithLogger(slog.New(slog.DiscardHandler)))
}

// verify checks acks against the store, resumes and appends, rewinds a
// random acknowledged checkpoint and runs fsck.
func verify(ctx context.Context, cfg Config, acks []Ack, rng *rand.Rand, res *Result) {
	s, err := open(ctx, cfg)
	if err != nil {
		res.ResumeFailures++
		res.fail("open: %v", err)
		return
	}
	defer s.Close()
	bySession := map[string][]Ack{}
	var cps []Ack
	for _, a := range acks {
		switch a.Op {
		case "msg", "transcript":
			bySession[a.Session] = append(bySession[a.Session], a)
		case "blob":
			res.BlobsChecked++
			ref, err := cas.ParseRef(a.Ref)
			if err != nil {
				res.Torn++
				res.fail("bad ack ref %q", a.Ref)
				continue
			}
			if _, err := s.Blobs().Get(ctx, ref); errors.Is(err, fs.ErrNotExist) {
				res.Lost++
				res.fail("blob %s lost", a.Ref)
			} else if err != nil {
				res.Torn++
				res.fail("blob %s: %v", a.Ref, err)
			}
		case "cp":
			res.CheckpointsChecked++
			cps = append(cps, a)
			checkCheckpoint(ctx, s, cfg, a, res)
		case "run":
			found := false
			for e, err := range s.Runs().Records(ctx, a.Run, runlog.Unresolved()) {
				if err == nil && strings.Contains(string(e.Raw), a.Marker) {
					found = true
				}
			}
			if !found {
				res.Lost++
				res.fail("run %s record %s lost", a.Run, a.Marker)
			}
		}
	}
	for id, list := range bySession {
		res.SessionsChecked++
		checkSession(ctx, s, id, list, res)
	}
	checkSearches(ctx, s, acks, res)
	// Resume the newest session and append to it.
	for m, err := range s.Sessions().List(ctx, cfg.WS) {
		if err != nil {
			res.ResumeFailures++
			res.fail("list: %v", err)
			break
		}
		h, err := s.Sessions().Resume(ctx, m.ID)
		if err == nil {
			err = h.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"resumed by the torture harness","timestamp":1}`))
			if err == nil {
				err = h.Flush(ctx)
			}
			if cerr := h.Close(ctx); err == nil {
				err = cerr
			}
		}
		if err != nil {
			res.ResumeFailures++
			res.fail("resume %s: %v", m.ID, err)
			break
		}
		// The metadata a resumed handle keeps counts what the file holds,
		// not what a sidecar written before the kill said.
		meta, err := s.Sessions().Metadata(ctx, m.ID)
		sess, oerr := tree.Open(ctx, s.Storage(), m.Path, tree.ReadOnly(), tree.WithReport(func(tree.Problem) {}))
		if err == nil && oerr == nil {
			n := 0
			for _, e := range sess.Entries() {
				if e.Type() == tree.TypeMessage {
					n++
				}
			}
			if meta.MessageCount != n {
				res.StaleMeta++
				res.fail("session %s: metadata counts %d messages, the file holds %d", m.ID, meta.MessageCount, n)
			}
		}
		break
	}
	if len(cps) > 0 {
		rewindOne(ctx, s, cfg, cps[rng.IntN(len(cps))], res)
	}
	rep, err := s.Check(ctx)
	if err != nil {
		res.FsckProblems++
		res.fail("fsck: %v", err)
		return
	}
	res.FsckProblems += len(rep.Problems)
	for _, p := range rep.Problems {
		res.fail("fsck: %s", p)
	}
}

func checkSession(ctx context.Context, s *trove.Store, id string, acks []Ack, res *Result) {
	meta, err := s.Sessions().Metadata(ctx, id)
	if err != nil {
		res.Lost += len(acks)
		res.fail("session %s: %v", id, err)
		return
	}
	sess, err := tree.Open(ctx, s.Storage(), meta.Path, tree.ReadOnly(), tree.WithReport(func(tree.Problem) {}))
	if err != nil {
		res.Lost += len(acks)
		res.fail("session %s: %v", id, err)
		return
	}
	count := map[string]int{}
	for _, e := range sess.Entries() {
		for _, a := range acks {
			if a.Op == "msg" && strings.Contains(string(e.JSON()), a.Marker) {
				count[a.Marker]++
			}
		}
	}
	for line, err := range s.Sessions().Transcript(ctx, id) {
		if err != nil {
			continue
		}
		for _, a := range acks {
			if a.Op == "transcript" && strings.Contains(string(line), a.Marker) {
				count[a.Marker]++
			}
		}
	}
	for _, a := range acks {
		switch n := count[a.Marker]; {
		case n == 0:
			res.Lost++
			res.fail("session %s: %s %s lost", id, a.Op, a.Marker)
		case n > 1:
			res.Torn++
			res.fail("session %s: %s %s present %d times", id, a.Op, a.Marker, n)
		}
	}
}

func checkCheckpoint(ctx context.Context, s *trove.Store, cfg Config, a Ack, res *Result) {
	m, err := s.Checkpoints(cfg.WS)
	if err != nil {
		res.fail("checkpoints: %v", err)
		res.Lost++
		return
	}
	defer m.Close()
	man, err := m.Load(ctx, a.Name)
	if err != nil {
		res.Lost++
		res.fail("checkpoint %s: %v", a.Name, err)
		return
	}
	got := map[string]string{}
	for _, f := range man.Files {
		if !f.Exists || f.Type == "dir" {
			continue
		}
		ref, err := cas.ParseRef(f.Digest)
		if err != nil {
			continue
		}
		data, err := s.Blobs().Get(ctx, ref)
		if err != nil {
			res.Torn++
			res.fail("checkpoint %s: %s: %v", a.Name, f.Path, err)
			continue
		}
		sum := sha256.Sum256(data)
		got[f.Path] = hex.EncodeToString(sum[:])
	}
	if !mapsEqual(got, a.Files) {
		res.Torn++
		res.fail("checkpoint %s holds %v, acknowledged %v", a.Name, got, a.Files)
	}
}

// rewindOne rewinds the workspace to an acknowledged checkpoint and
// compares it, file by file, with what the child recorded.
func rewindOne(ctx context.Context, s *trove.Store, cfg Config, a Ack, res *Result) {
	m, err := s.Checkpoints(cfg.WS)
	if err != nil {
		res.fail("checkpoints: %v", err)
		return
	}
	defer m.Close()
	if _, err := m.Rewind(ctx, a.Name, false); err != nil {
		res.Torn++
		res.fail("rewind %s: %v", a.Name, err)
		return
	}
	res.Rewinds++
	got, err := treehash.Hash(cfg.WS, treehash.Options{FollowSymlinks: true})
	if err != nil {
		res.fail("hash %s: %v", cfg.WS, err)
		return
	}
	if !mapsEqual(got, a.Files) {
		res.Torn++
		res.fail("rewind %s gave %v, acknowledged %v", a.Name, got, a.Files)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
