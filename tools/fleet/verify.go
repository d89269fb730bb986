package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"sort"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/session/tree"
)

// Result is what a fleet run found.
type Result struct {
	Machines, Kills, GC, Acked int
	Lost                       int // acknowledged operations missing from the bucket
	TwoWriters                 int // messages acknowledged by a writer after another took the session
	LiveBlobRemoved            int // blobs acknowledged messages refer to, gone
	ListingMismatches          int // listings that miss a session or miscount one
	FsckProblems               int
	Takeovers                  int // sessions resumed over an expired lease
	Refused                    int // resumes refused while the holder lived
	Mirrors, Lists             int
	Rewinds, Reads             int
	Overdue                    int // calls that ran past their deadline
	Faults                     map[string]int
	// ShortReads are reads that missed acknowledged messages which a
	// later read found: not lost, but a reader came up short.
	ShortReads int
	Failures   []string
}

func (r Result) String() string {
	return fmt.Sprintf("fleet: machines=%d kills=%d gc=%d acked=%d lost=%d two_writers=%d live_blob_removed=%d listing_mismatches=%d",
		r.Machines, r.Kills, r.GC, r.Acked, r.Lost, r.TwoWriters, r.LiveBlobRemoved, r.ListingMismatches)
}

// Details is the rest of what was counted.
func (r Result) Details() string {
	s := fmt.Sprintf("takeovers=%d refused=%d mirrors=%d lists=%d reads=%d short_reads=%d rewinds=%d fsck_problems=%d overdue=%d",
		r.Takeovers, r.Refused, r.Mirrors, r.Lists, r.Reads, r.ShortReads, r.Rewinds, r.FsckProblems, r.Overdue)
	if r.Faults != nil {
		keys := make([]string, 0, len(r.Faults))
		for k := range r.Faults {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		s += " faults:"
		for _, k := range keys {
			if k != faultNone {
				s += fmt.Sprintf(" %s=%d", k, r.Faults[k])
			}
		}
	}
	return s
}

// OK reports whether nothing acknowledged was lost and no rule broken.
func (r Result) OK() bool {
	return r.Lost == 0 && r.TwoWriters == 0 && r.LiveBlobRemoved == 0 && r.ListingMismatches == 0 && r.FsckProblems == 0 && r.Overdue == 0
}

func (r *Result) fail(format string, args ...any) {
	if len(r.Failures) < 30 {
		r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
	}
}

// incarnation is one run of one machine, between two kills.
type incarnation struct{ m, inc int }

// verifier checks journals against the bucket, through its own store.
type verifier struct {
	s   *trove.Store
	dir string
	n   int
}

var refRE = regexp.MustCompile(`blob:sha256:[0-9a-f]{64}`)

// markerOf is the text that names an acknowledged message: a user
// message's content, a tool result's call id.
func markerOf(line json.RawMessage) string {
	var e struct {
		Message struct {
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"toolCallId"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &e) != nil {
		return ""
	}
	if e.Message.ToolCallID != "" {
		return e.Message.ToolCallID
	}
	var s string
	json.Unmarshal(e.Message.Content, &s)
	return s
}

// stored is a session's entries as stored (refs unresolved): marker ->
// the blob refs in that entry.
func (v *verifier) stored(ctx context.Context, name string) (map[string][]string, error) {
	sess, err := tree.Open(ctx, v.s.Storage(), name, tree.ReadOnly(), tree.LazyBlobs(),
		tree.WithReport(func(tree.Problem) {}), tree.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range sess.Stored() {
		if mk := markerOf(e.JSON()); mk != "" {
			out[mk] = append(out[mk], refRE.FindAllString(string(e.JSON()), -1)...)
		}
	}
	return out, nil
}

// check verifies the records of the incarnations in only (every one when
// nil) against the bucket, adding what it finds to res; recs are every
// machine's records, for the two-writer rule.
func (v *verifier) check(ctx context.Context, recs []Rec, only map[incarnation]bool, res *Result) error {
	sessions := map[string]map[string][]string{}
	load := func(path string) (map[string][]string, error) {
		if m, ok := sessions[path]; ok {
			return m, nil
		}
		m, err := v.stored(ctx, path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		sessions[path] = m
		return m, nil
	}
	blobs := map[string]bool{}
	cps := map[int]map[string]bool{}
	for _, r := range recs {
		if only != nil && !only[incarnation{r.Machine, r.Inc}] {
			continue
		}
		switch r.Op {
		case "msg":
			m, err := load(r.Path)
			if err != nil {
				return err
			}
			refs, ok := m[r.Text]
			if !ok {
				// A read that met a fold of the file (segments folded
				// away between listing and reading them) comes up
				// short: read again before calling it lost, and count
				// the short read.
				res.ShortReads++
				delete(sessions, r.Path)
				time.Sleep(300 * time.Millisecond)
				if m, err = load(r.Path); err != nil {
					return err
				}
				refs, ok = m[r.Text]
			}
			if !ok {
				res.Lost++
				res.fail("lost: message %s of session %s (machine %d.%d)", r.Text, r.Session, r.Machine, r.Inc)
				continue
			}
			if r.Blob == "" {
				continue
			}
			for _, ref := range refs {
				if blobs[ref] {
					continue
				}
				ok, err := v.has(ctx, ref)
				if err != nil {
					return err
				}
				if !ok {
					res.LiveBlobRemoved++
					res.fail("live blob removed: %s of message %s", ref, r.Text)
				}
				blobs[ref] = true
			}
		case "fork":
			if m, err := load(r.Path); err != nil {
				return err
			} else if m == nil {
				res.Lost++
				res.fail("lost: fork %s of %s", r.Session, r.From)
			}
		case "run":
			n, err := 0, error(nil)
			for _, rerr := range v.s.Runs().RecordsAt(ctx, r.Path) {
				if err = rerr; err != nil {
					break
				}
				n++
			}
			if err != nil || n < r.N+1 {
				res.Lost++
				res.fail("lost: run %s (%d events acknowledged, %d records found): %v", r.Name, r.N, n, err)
			}
		case "cp":
			ids, ok := cps[r.Machine]
			if !ok {
				var err error
				if ids, err = v.checkpoints(ctx, r.Machine); err != nil {
					return err
				}
				cps[r.Machine] = ids
			}
			if !ids[r.Name] {
				res.Lost++
				res.fail("lost: checkpoint %s of machine %d", r.Name, r.Machine)
			}
		case "read":
			if r.Bad > 0 {
				// Not lost (the verifier checks the file itself): a read
				// while others write, short (issue 33, reads during folds).
				res.ShortReads += r.Bad
				res.fail("machine %d read session %s without %d message(s) acknowledged before", r.Machine, r.Session, r.Bad)
			}
		case "rewind":
			if r.Bad > 0 {
				res.Lost += r.Bad
				res.fail("machine %d rewound to %s: %d file(s) differ", r.Machine, r.Name, r.Bad)
			}
		case "list":
			if r.Bad > 0 {
				res.ListingMismatches += r.Bad
				res.fail("machine %d: a listing missed %d session(s): %s", r.Machine, r.Bad, r.Note)
			}
		}
	}
	res.TwoWriters += twoWriters(recs, only, res)
	return nil
}

func (v *verifier) has(ctx context.Context, ref string) (bool, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return false, err
	}
	return v.s.Blobs().Has(ctx, r)
}

// checkpoints are the ids of a machine's workspace checkpoints.
func (v *verifier) checkpoints(ctx context.Context, machine int) (map[string]bool, error) {
	cm, err := v.s.Checkpoints(MachineConfig{ID: machine, Dir: v.dir}.workspace())
	if err != nil {
		return nil, err
	}
	defer cm.Close()
	infos, err := cm.List(ctx)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, i := range infos {
		ids[i.ID] = true
	}
	return ids, nil
}

// twoWriters counts messages acknowledged by a writer of a session after
// another writer (another machine, or another incarnation of the same
// one) had taken it: holders' acknowledgements must never interleave.
func twoWriters(recs []Rec, only map[incarnation]bool, res *Result) int {
	holder := map[string]incarnation{}
	n := 0
	for _, r := range recs { // in time order
		w := incarnation{r.Machine, r.Inc}
		switch r.Op {
		case "hold", "fork":
			holder[r.Session] = w
		case "msg":
			if h, ok := holder[r.Session]; ok && h != w && (only == nil || only[w] || only[h]) {
				n++
				res.fail("two writers: %s acknowledged by machine %d.%d after machine %d.%d took session %s",
					r.Text, w.m, w.inc, h.m, h.inc, r.Session)
			}
		}
	}
	return n
}

// listing compares, with every machine stopped, each session's listing
// with its file: listed at all, and its message count.
func (v *verifier) listing(ctx context.Context, recs []Rec, res *Result) error {
	listed := map[string]int{}
	for meta, err := range v.s.Sessions().List(ctx, "") {
		if err != nil {
			return err
		}
		listed[meta.ID] = meta.MessageCount
	}
	want := map[string]string{} // id -> path
	for _, r := range recs {
		if r.Op == "msg" || r.Op == "fork" {
			want[r.Session] = r.Path
		}
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		count, ok := listed[id]
		if !ok {
			res.ListingMismatches++
			res.fail("listing: session %s is not listed", id)
			continue
		}
		msgs, err := v.s.Sessions().LoadMessages(ctx, want[id])
		if err != nil {
			return err
		}
		if count != len(msgs) {
			res.ListingMismatches++
			res.fail("listing: session %s listed with %d messages, its file has %d", id, count, len(msgs))
		}
	}
	return nil
}

// fsck runs the store's check.
func (v *verifier) fsck(ctx context.Context, res *Result) error {
	rep, err := v.s.Check(ctx)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		res.FsckProblems++
		res.fail("fsck: %s", p)
	}
	return nil
}

// tally counts what the records say was done.
func tally(recs []Rec, res *Result) {
	for _, r := range recs {
		switch r.Op {
		case "msg", "fork", "cp", "run", "close":
			res.Acked++
		case "gc":
			res.GC++
		case "mirror":
			res.Mirrors++
		case "list":
			res.Lists++
		case "read":
			res.Reads++
		case "rewind":
			res.Rewinds++
		case "refused":
			res.Refused++
		case "overdue":
			res.Overdue++
			res.fail("machine %d: %s", r.Machine, r.Note)
		case "hold":
			if r.From != "" {
				res.Takeovers++
			}
		}
	}
}
