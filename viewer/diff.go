package viewer

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
)

// Limits of the viewer's inline diffs: bigger or binary files are listed
// by status only.
const (
	diffMaxBytes = 256 << 10
	diffMaxLines = 3000
)

// fileChange is one path that differs between two checkpoints.
type fileChange struct {
	Path   string
	Status string // added, deleted, modified
	Lines  []diffLine
	Note   string // why no inline diff
}

type diffLine struct {
	Op   string // " ", "+", "-"
	Text string
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
			c.Lines = lineDiff(old, nw)
			if c.Lines == nil {
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

// lineDiff is a longest-common-subsequence diff of two texts, nil when
// they have too many lines for it.
func lineDiff(a, b string) []diffLine {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	}
	x, y := split(a), split(b)
	if len(x) > diffMaxLines || len(y) > diffMaxLines {
		return nil
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if strings.TrimSuffix(x[i], "\n") == strings.TrimSuffix(y[j], "\n") {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	out := []diffLine{}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && strings.TrimSuffix(x[i], "\n") == strings.TrimSuffix(y[j], "\n"):
			out = append(out, diffLine{" ", strings.TrimSuffix(x[i], "\n")})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, diffLine{"+", strings.TrimSuffix(y[j], "\n")})
			j++
		default:
			out = append(out, diffLine{"-", strings.TrimSuffix(x[i], "\n")})
			i++
		}
	}
	return out
}
