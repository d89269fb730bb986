package trove

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
)

// Kinds of what Prune and pins handle.
const (
	KindSession    = "session"
	KindCheckpoint = "checkpoint"
	KindRun        = "run"
)

// Policy says what Prune keeps, as restic's forget does: an item is kept
// when any rule keeps it, and a pinned one always.
type Policy struct {
	// KeepWithin keeps what was updated within this long before now.
	KeepWithin time.Duration
	// KeepLast keeps the N newest of each cwd (each workspace, for
	// checkpoints).
	KeepLast int
	// Cwd, when set, limits Prune to the items of this directory.
	Cwd string
}

// ErrNoPolicy is Prune's error for a policy that keeps nothing: pruning
// everything is never what a missing flag meant.
var ErrNoPolicy = fmt.Errorf("trove: prune: no rule keeps anything (give --keep-within or --keep-last): %w", fs.ErrInvalid)

// Item is one session, checkpoint or run Prune judged.
type Item struct {
	Kind string    `json:"kind"`
	ID   string    `json:"id"` // a checkpoint's is <workspace key>/<name>
	Cwd  string    `json:"cwd,omitempty"`
	Time time.Time `json:"time"` // sessions: last update; checkpoints: creation; runs: start
	// Parent is the session a session was forked from.
	Parent string `json:"-"`
	// Group is what KeepLast counts within: the cwd, or the workspace key.
	Group string `json:"-"`
	path  string
}

// PruneReport says what Prune removed (or would remove) and kept.
type PruneReport struct {
	Removed []Item `json:"removed"`
	Kept    int    `json:"kept"`
	DryRun  bool   `json:"dry_run"`
}

// PruneOption tunes one Prune.
type PruneOption func(*pruneConfig)

type pruneConfig struct{ dryRun bool }

// PruneDryRun makes Prune report what it would remove and change nothing.
func PruneDryRun() PruneOption { return func(c *pruneConfig) { c.dryRun = true } }

// Prune removes the sessions, workspace checkpoints and runs the policy
// does not keep. Pinned items are kept whatever the policy, and a kept
// session keeps the sessions it was forked from. Checkpoints in a
// session's sidecar go with their session. Blobs only they held are freed
// by the next GC.
func (s *Store) Prune(ctx context.Context, p Policy, opts ...PruneOption) (PruneReport, error) {
	var c pruneConfig
	for _, o := range opts {
		o(&c)
	}
	rep := PruneReport{DryRun: c.dryRun, Removed: []Item{}}
	if p.KeepWithin <= 0 && p.KeepLast <= 0 {
		return rep, ErrNoPolicy
	}
	items, err := s.pruneItems(ctx, p.Cwd)
	if err != nil {
		return rep, err
	}
	pins, err := s.Pins(ctx)
	if err != nil {
		return rep, err
	}
	keep := Judge(items, p, s.cfg.now(), pins)
	for i, it := range items {
		if keep[i] {
			rep.Kept++
			continue
		}
		rep.Removed = append(rep.Removed, it)
	}
	if c.dryRun {
		return rep, nil
	}
	for i, it := range rep.Removed {
		if err := s.removeItem(ctx, it); err != nil {
			rep.Removed = rep.Removed[:i]
			return rep, fmt.Errorf("prune %s %s: %w", it.Kind, it.ID, err)
		}
	}
	return rep, nil
}

// Judge applies a policy to items at time now: which ones are kept.
// pinned holds "kind/id" keys (see Pin).
func Judge(items []Item, p Policy, now time.Time, pinned map[string]bool) []bool {
	keep := make([]bool, len(items))
	groups := map[string][]int{}
	for i, it := range items {
		if pinned[it.Kind+"/"+it.ID] || p.KeepWithin > 0 && !it.Time.Before(now.Add(-p.KeepWithin)) {
			keep[i] = true
		}
		k := it.Kind + "\x00" + it.Group
		groups[k] = append(groups[k], i)
	}
	for _, g := range groups {
		sort.Slice(g, func(a, b int) bool {
			x, y := items[g[a]], items[g[b]]
			if !x.Time.Equal(y.Time) {
				return x.Time.After(y.Time)
			}
			return x.ID > y.ID
		})
		for _, i := range g[:min(len(g), max(p.KeepLast, 0))] {
			keep[i] = true
		}
	}
	// A kept fork keeps its parent, and so on up.
	sessions := map[string]int{}
	for i, it := range items {
		if it.Kind == KindSession {
			sessions[it.ID] = i
		}
	}
	for i, it := range items {
		if !keep[i] || it.Kind != KindSession {
			continue
		}
		for seen, parent := map[string]bool{}, it.Parent; parent != "" && !seen[parent]; {
			seen[parent] = true
			j, ok := sessions[parent]
			if !ok {
				break
			}
			keep[j] = true
			parent = items[j].Parent
		}
	}
	return keep
}

// pruneItems lists every session, workspace checkpoint and run, or those
// of cwd.
func (s *Store) pruneItems(ctx context.Context, cwd string) ([]Item, error) {
	var items []Item
	byPath := map[string]string{}
	for m, err := range s.sessions.Query(ctx, session.Query{Cwd: cwd, Refresh: true}) {
		if err != nil {
			return nil, err
		}
		items = append(items, Item{Kind: KindSession, ID: m.ID, Cwd: m.Cwd, Time: m.UpdatedAt, Parent: m.ParentID, Group: m.Cwd})
		byPath[m.Path], byPath[backend.Base(m.Path)] = m.ID, m.ID
	}
	// pi session v3 lets a header name its parent by the parent's file: the
	// store path, or a path ending in its file name.
	for i, it := range items {
		if !strings.ContainsAny(it.Parent, `/\`) {
			continue
		}
		if id, ok := byPath[it.Parent]; ok {
			items[i].Parent = id
		} else if id, ok := byPath[backend.Base(strings.ReplaceAll(it.Parent, `\`, "/"))]; ok {
			items[i].Parent = id
		}
	}
	cps, err := s.checkpointItems(ctx, cwd)
	if err != nil {
		return nil, err
	}
	items = append(items, cps...)
	for info, err := range s.runs.Runs(ctx) {
		if err != nil {
			return nil, err
		}
		runCwd, err := s.runCwd(ctx, info.Path)
		if err != nil {
			return nil, err
		}
		if cwd != "" && runCwd != cwd {
			continue
		}
		items = append(items, Item{Kind: KindRun, ID: info.RunID, Cwd: runCwd, Time: info.StartedAt.Time, Group: runCwd, path: info.Path})
	}
	return items, nil
}

// checkpointItems lists the checkpoints under checkpoints/ (those of
// workspaces; a session's own go with it).
func (s *Store) checkpointItems(ctx context.Context, cwd string) ([]Item, error) {
	var items []Item
	for name, err := range checkpoint.Manifests(ctx, s.st) {
		if err != nil {
			return nil, err
		}
		rel, ok := strings.CutPrefix(name, "checkpoints/")
		if !ok || !strings.Contains(rel, "/") {
			continue
		}
		ws := backend.Dir(rel)
		if cwd != "" && ws != checkpoint.WorkspaceKey(cwd) {
			continue
		}
		man, err := checkpoint.LoadManifest(ctx, s.st, s.blobs, name)
		if err != nil {
			return nil, fmt.Errorf("prune: %s: %w", name, err)
		}
		id := strings.TrimSuffix(rel, ".json")
		items = append(items, Item{Kind: KindCheckpoint, ID: id, Cwd: man.Root, Time: man.CreatedAt, Group: ws, path: name})
	}
	return items, nil
}

// runCwd reads the cwd a run log's header records.
func (s *Store) runCwd(ctx context.Context, path string) (string, error) {
	b, err := s.st.ReadPrefix(ctx, path, 1<<16)
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	var h runlog.Header
	if json.Unmarshal(line, &h) != nil || h.Runtime == nil {
		return "", nil
	}
	return h.Runtime.Cwd, nil
}

func (s *Store) removeItem(ctx context.Context, it Item) error {
	var err error
	switch it.Kind {
	case KindSession:
		err = s.sessions.Delete(ctx, it.ID)
	default:
		err = s.st.Unlink(ctx, it.path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone meanwhile: what was asked
	}
	return err
}
