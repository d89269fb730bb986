package trove_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// schedItem is one thing of a prune schedule as the test knows it.
type schedItem struct {
	kind, id, group, parent string
	at                      time.Time
	pinned                  bool
}

// bruteKeep reads the policy the long way: for each item, count the newer
// items of its kind and group; then let kept forks keep their parents
// until nothing changes.
func bruteKeep(items []schedItem, within time.Duration, last int, now time.Time) map[string]bool {
	kept := map[string]bool{}
	for _, it := range items {
		newer := 0
		for _, o := range items {
			if o.kind == it.kind && o.group == it.group && (o.at.After(it.at) || o.at.Equal(it.at) && o.id > it.id) {
				newer++
			}
		}
		age := now.Sub(it.at)
		if it.pinned || (within > 0 && age <= within) || newer < last {
			kept[it.kind+"/"+it.id] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, it := range items {
			if it.kind == trove.KindSession && it.parent != "" && kept["session/"+it.id] && !kept["session/"+it.parent] {
				kept["session/"+it.parent] = true
				changed = true
			}
		}
	}
	return kept
}

func image(r *rand.Rand) string {
	b := make([]byte, 2048)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestPruneSchedule builds sessions, forks, pins, checkpoints and runs at
// known times, compares Prune's dry run with bruteKeep, runs it for real,
// and checks that GC then frees the blobs of the pruned items and no
// other.
// pruneSchedule fills s with the sessions (forks among them), checkpoints,
// runs and pins TestPruneSchedule prunes, at days from base, and returns
// them and a parent that only its fork keeps.
func pruneSchedule(t *testing.T, s *trove.Store, base time.Time, setNow func(time.Time)) (items []schedItem, oldParent string) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 32))
	newSession := func(cwd string, day int, fork string) string {
		t.Helper()
		now := base.Add(time.Duration(day) * 24 * time.Hour)
		setNow(now)
		var h *session.Handle
		var err error
		if fork != "" {
			h, err = s.Sessions().Fork(ctx, fork, session.ForkOptions{})
		} else {
			h, err = s.Sessions().Create(ctx, session.CreateOptions{Cwd: cwd, Model: "m"})
		}
		if err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf(`{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"},{"type":"text","text":"day %d"}],"timestamp":%d}`, image(r), day, now.UnixMilli())
		if err := h.AppendMessage(ctx, json.RawMessage(msg)); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendMessage(ctx, json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":%d}`, now.UnixMilli()))); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		items = append(items, schedItem{kind: trove.KindSession, id: h.ID(), group: cwd, parent: fork, at: now})
		return h.ID()
	}
	// cwd /a: a long history with forks; /b: a few; /c: one old session.
	var a []string
	for day := range 12 {
		a = append(a, newSession("/a", day*3, ""))
	}
	oldParent = a[1]
	forkOfOld := newSession("/a", 40, oldParent) // kept by date, keeps a[1]
	newSession("/a", 5, a[0])                    // an old fork of an old session
	grand := newSession("/a", 41, forkOfOld)     // a fork of a fork
	_ = grand
	b1 := newSession("/b", 2, "")
	newSession("/b", 20, "")
	newSession("/b", 39, "")
	c1 := newSession("/c", 1, "")

	// Workspace checkpoints in two workspaces, one file of new content
	// each time.
	for wi, dir := range []string{t.TempDir(), t.TempDir()} {
		m, err := s.Checkpoints(dir)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 5 {
			day := k*8 + wi
			now := base.Add(time.Duration(day) * 24 * time.Hour)
			setNow(now)
			if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(image(r)), 0o644); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("cp-%d", k)
			if _, err := m.CreateTree(ctx, name); err != nil {
				t.Fatal(err)
			}
			items = append(items, schedItem{kind: trove.KindCheckpoint, id: checkpoint.WorkspaceKey(dir) + "/" + name, group: checkpoint.WorkspaceKey(dir), at: now})
		}
		m.Close()
	}
	// Runs in /a and /b.
	for k := range 6 {
		now := base.Add(time.Duration(k*7) * 24 * time.Hour)
		setNow(now)
		cwd := []string{"/a", "/b"}[k%2]
		id := runlog.NewID()
		w, err := s.Runs().Create(ctx, &runlog.Header{RunID: id, StartedAt: runlog.TimeOf(now), Runtime: &runlog.Runtime{Cwd: cwd}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		items = append(items, schedItem{kind: trove.KindRun, id: id, group: cwd, at: now})
	}
	// Pins: an old session, a checkpoint and a run.
	pin := func(i int) {
		items[i].pinned = true
		if err := s.Pin(ctx, items[i].kind, items[i].id); err != nil {
			t.Fatal(err)
		}
	}
	for i, it := range items {
		if it.id == b1 || it.id == c1 || it.kind == trove.KindCheckpoint && it.at.Equal(base) {
			pin(i)
		}
	}
	pin(len(items) - 6)

	return items, oldParent
}

func TestPruneSchedule(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base
	s, err := trove.Open(ctx, "mem://", trove.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	items, oldParent := pruneSchedule(t, s, base, func(at time.Time) { now = at })
	now = base.Add(42 * 24 * time.Hour)
	within, last := 10*24*time.Hour, 2
	want := bruteKeep(items, within, last, now)
	var wantGone []string
	for _, it := range items {
		if !want[it.kind+"/"+it.id] {
			wantGone = append(wantGone, it.kind+"/"+it.id)
		}
	}
	sort.Strings(wantGone)
	if len(wantGone) < 10 || len(wantGone) > len(items)-10 {
		t.Fatalf("schedule prunes %d of %d: make it prune some and keep some", len(wantGone), len(items))
	}
	if !want["session/"+oldParent] {
		t.Fatal("schedule: the fork's parent should be kept")
	}

	policy := trove.Policy{KeepWithin: within, KeepLast: last}
	dry, err := s.Prune(ctx, policy, trove.PruneDryRun())
	if err != nil {
		t.Fatal(err)
	}
	gone := func(rep trove.PruneReport) []string {
		var out []string
		for _, it := range rep.Removed {
			out = append(out, it.Kind+"/"+it.ID)
		}
		sort.Strings(out)
		return out
	}
	if got := gone(dry); !slices.Equal(got, wantGone) {
		t.Fatalf("dry run removes\n%v\nwant\n%v", got, wantGone)
	}
	if dry.Kept != len(items)-len(wantGone) {
		t.Fatalf("dry run keeps %d, want %d", dry.Kept, len(items)-len(wantGone))
	}

	rootsBefore := liveRefs(t, s)
	rep, err := s.Prune(ctx, policy)
	if err != nil {
		t.Fatal(err)
	}
	if got := gone(rep); !slices.Equal(got, wantGone) {
		t.Fatalf("prune removed %v, want %v", got, wantGone)
	}
	again, err := s.Prune(ctx, policy, trove.PruneDryRun())
	if err != nil || len(again.Removed) != 0 || again.Kept != dry.Kept {
		t.Fatalf("after prune a dry run removes %d and keeps %d (%v), want 0 and %d", len(again.Removed), again.Kept, err, dry.Kept)
	}
	rootsAfter := liveRefs(t, s)
	var wantFreed []string
	for ref := range rootsBefore {
		if !rootsAfter[ref] {
			wantFreed = append(wantFreed, ref)
		}
	}
	sort.Strings(wantFreed)
	if len(wantFreed) == 0 {
		t.Fatal("pruning freed no blob: the schedule's items hold none of their own")
	}
	// Blobs carry the backend's times, not the test clock's.
	now = time.Now().Add(time.Minute)
	gc, err := s.GC(ctx, trove.GCGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	var freed []string
	for _, ref := range gc.Deleted {
		freed = append(freed, ref.String())
	}
	sort.Strings(freed)
	if !slices.Equal(freed, wantFreed) {
		t.Fatalf("gc freed %d blobs, want the %d only the pruned items held", len(freed), len(wantFreed))
	}
	for ref := range rootsAfter {
		parsed, err := cas.ParseRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Blobs().Has(ctx, parsed); err != nil || !ok {
			t.Fatalf("blob %s of a kept item is gone (%v)", ref, err)
		}
	}
	chk, err := s.Check(ctx)
	if err != nil || len(chk.Problems) != 0 {
		t.Fatalf("fsck after prune and gc: %v %v", err, chk.Problems)
	}
}

func liveRefs(t *testing.T, s *trove.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for r, err := range s.Roots(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out[r.Ref.String()] = true
	}
	return out
}

func TestPruneNeedsPolicy(t *testing.T) {
	ctx := context.Background()
	s, err := trove.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Prune(ctx, trove.Policy{}); !errors.Is(err, trove.ErrNoPolicy) || !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("prune without a policy: %v", err)
	}
	if err := s.Pin(ctx, "bogus", "x"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("pin of a bad kind: %v", err)
	}
	if err := s.Pin(ctx, trove.KindSession, "../x"); err == nil {
		t.Fatal("pin of a bad id: no error")
	}
}

// A fork whose header names its parent by file (pi session v3 allows a path)
// keeps that parent too.
func TestPruneForkByPath(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s, err := trove.Open(ctx, "mem://", trove.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func(parent string) session.Metadata {
		t.Helper()
		h, err := s.Sessions().Create(ctx, session.CreateOptions{Cwd: "/w", Model: "m", ParentID: parent})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{`{"role":"user","content":"hi","timestamp":1}`, `{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":2}`} {
			if err := h.AppendMessage(ctx, json.RawMessage(m)); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		m, err := s.Sessions().Metadata(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	parent := mk("")
	other := mk("")
	now = now.Add(30 * 24 * time.Hour)
	mk("/home/someone/elsewhere/" + filepath.Base(parent.Path))
	rep, err := s.Prune(ctx, trove.Policy{KeepWithin: 24 * time.Hour}, trove.PruneDryRun())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].ID != other.ID {
		t.Fatalf("prune removes %+v, want only %s (the parent named by path is kept)", rep.Removed, other.ID)
	}
}
