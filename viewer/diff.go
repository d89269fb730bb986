package viewer

import (
	"bytes"
	"context"
	"slices"
	"unicode/utf8"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/checkpoint/linediff"
)

// Limits of the viewer's inline diffs: bigger or binary files are listed
// by status only.
const (
	diffMaxBytes = 256 << 10
	// diffBudget bounds a diff's work, and so its memory (a few MB).
	diffBudget = 2_000_000
)

// fileChange is one path that differs between two checkpoints.
type fileChange struct {
	Path   string
	Status string // added, deleted, modified
	Lines  []linediff.Line
	Note   string // why no inline diff
}

// checkpointView is a manifest with what changed since the previous one.
type checkpointView struct {
	*checkpoint.Manifest
	Prev    string
	Changes []fileChange
}

// changesBetween lists the paths whose state differs from prev to cur,
// with a line diff of text files small enough to show.
func changesBetween(ctx context.Context, blobs *cas.Store, prev, cur *checkpoint.Manifest) []fileChange {
	state := func(m *checkpoint.Manifest) map[string]checkpoint.Entry {
		out := map[string]checkpoint.Entry{}
		for _, e := range m.Files {
			if e.Exists {
				out[e.Path] = e
			}
		}
		return out
	}
	a, b := state(prev), state(cur)
	var paths []string
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []fileChange
	for _, p := range paths {
		ea, inA := a[p]
		eb, inB := b[p]
		c := fileChange{Path: p}
		switch {
		case !inA:
			c.Status = "added"
		case !inB:
			c.Status = "deleted"
		case ea.Digest != eb.Digest || ea.Target != eb.Target || ea.Type != eb.Type:
			c.Status = "modified"
		default:
			continue
		}
		old, okA := content(ctx, blobs, ea, inA)
		nw, okB := content(ctx, blobs, eb, inB)
		if okA && okB {
			var ok bool
			if c.Lines, ok = linediff.Lines(old, nw, diffBudget); !ok {
				c.Note = "too many lines to show"
			}
		} else {
			c.Note = "binary, large or unreadable: not shown"
		}
		out = append(out, c)
	}
	return out
}

// content is a file's text, "" for an absent one; ok is false when it is
// not a small text file.
func content(ctx context.Context, blobs *cas.Store, e checkpoint.Entry, exists bool) (string, bool) {
	if !exists || e.Digest == "" {
		return "", true
	}
	if e.Size > diffMaxBytes {
		return "", false
	}
	ref, err := cas.ParseRef(e.Digest)
	if err != nil {
		return "", false
	}
	data, err := blobs.Get(ctx, ref)
	if err != nil || len(data) > diffMaxBytes || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	return string(data), true
}
