package tree

import (
	"slices"

	"github.com/trovekit/trove/internal/jsonscan"
)

// ForkLines returns the stored lines a fork of s holds, header left out:
// with at and last zero every entry (all branches); otherwise the path to
// at (to the leaf when at is ""), cut to its last last messages when last
// is above zero, its references made to hold (see keepPath).
func (s *Session) ForkLines(at string, last int) ([][]byte, error) {
	var lines [][]byte
	if at == "" && last == 0 {
		for _, e := range s.Entries() {
			if e.Type() == TypeSession {
				continue // a later header is never an entry (pi session v3 reference)
			}
			lines = append(lines, e.raw)
		}
		return lines, nil
	}
	var p []*Entry
	var err error
	switch {
	case at != "":
		p, err = s.Path(at)
	case s.Leaf() != nil:
		p, err = s.Path(s.Leaf().ID())
	}
	if err != nil {
		return nil, err
	}
	if last > 0 {
		p = lastMessages(p, last)
	}
	return keepPath(p), nil
}

// lastMessages keeps the last n message entries of a path and the entries
// that change the context after the first of them (model, thinking level).
func lastMessages(path []*Entry, n int) []*Entry {
	start := len(path)
	for i := len(path) - 1; i >= 0 && n > 0; i-- {
		if path[i].Type() == TypeMessage {
			start = i
			n--
		}
	}
	// Keep the latest model and thinking level from before the cut.
	var keep []*Entry
	seen := map[string]bool{}
	for i := start - 1; i >= 0; i-- {
		t := path[i].Type()
		if (t == TypeModelChange || t == TypeThinkingLevelChange) && !seen[t] {
			seen[t] = true
			keep = append(keep, path[i])
		}
	}
	slices.Reverse(keep)
	return append(keep, path[start:]...)
}

// keepPath returns the stored lines of a path (root first) for a fork,
// making every reference point at an entry the fork holds without changing
// the context rebuilt from it (see ForkSession).
func keepPath(p []*Entry) [][]byte {
	onPath := map[string]bool{}
	referenced := map[string]bool{}
	for _, e := range p {
		onPath[e.id] = true
		if e.typ == TypeCompaction {
			if ms, ok := jsonscan.SplitObject(e.raw); ok {
				first, _ := ms.Str("firstKeptEntryId")
				referenced[first] = true
			}
		}
	}
	// A label of an entry the fork does not hold is left out: labels add
	// nothing to the context, they only link the path.
	var entries []*Entry
	for i, e := range p {
		if e.typ == TypeLabel && i < len(p)-1 && !referenced[e.id] {
			if ms, ok := jsonscan.SplitObject(e.raw); ok {
				if target, _ := ms.Str("targetId"); !onPath[target] {
					continue
				}
			}
		}
		entries = append(entries, e)
	}
	var out [][]byte
	prev := ""
	before := map[string]bool{} // ids of the entries written so far
	for _, e := range entries {
		ms, ok := jsonscan.SplitObject(e.raw)
		if !ok {
			out = append(out, e.raw)
			continue
		}
		var edits []jsonscan.Edit
		// Each entry's parent is the one before it: the same as in the
		// source unless entries between were left out.
		if e.parentID != prev {
			want := []byte("null")
			if prev != "" {
				want = jsonscan.Quote(prev)
			}
			edits = append(edits, jsonscan.Edit{Key: "parentId", Val: want})
		}
		if e.typ == TypeCompaction {
			// A compaction keeps the path entries before it from
			// firstKeptEntryId on, none when that id is not among them: its
			// own id says "none" with a reference the file holds.
			if first, _ := ms.Str("firstKeptEntryId"); !before[first] && first != e.id && e.id != "" {
				edits = append(edits, jsonscan.Edit{Key: "firstKeptEntryId", Val: jsonscan.Quote(e.id)})
			}
		}
		if len(edits) > 0 {
			out = append(out, jsonscan.EditObject(ms, edits...))
		} else {
			out = append(out, e.raw)
		}
		if e.id != "" {
			prev = e.id
			before[e.id] = true
		}
	}
	return out
}
