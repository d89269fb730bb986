package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"github.com/trovekit/trove/backend"
)

// ForkSession writes a fork of the session ref and returns its metadata,
// without opening it for writing (Fork does both). The fork is one new file
// written atomically, with its sidecar, before ForkSession returns: it is
// durable, listed and resumable even when the source holds only a prompt.
// A fork that cannot be written returns the error and leaves nothing.
//
// What it holds, entry by entry as the source stores them (ids, parents,
// timestamps, labels and blob refs unchanged; no blob is read or written):
//   - whole (no At, no Last): every entry of the source, in file order, so
//     its tree, branches and leaf are the source's;
//   - At: the path from the root to that entry, which becomes the leaf;
//   - Last N: the last N messages of that path (to the leaf without At),
//     with the latest model and thinking-level changes from before them, as
//     spec 002's fork keeps. The first kept entry becomes a root and each
//     kept entry's parent is the kept entry before it.
//
// On a path, references that would point at an entry the fork does not
// hold are made to hold where that keeps the context: a label of such an
// entry is left out (its child takes its parent), and a compaction whose
// first kept entry is not before it on the path (it keeps none) names
// itself. A branch summary's fromId is part of the context and stays.
func (s *Store) ForkSession(ctx context.Context, ref string, o ForkOptions) (Metadata, error) {
	if o.Last < 0 {
		return Metadata{}, fmt.Errorf("fork %s: last %d: %w", ref, o.Last, ErrInvalid)
	}
	name, err := s.find(ctx, ref)
	if err != nil {
		return Metadata{}, err
	}
	// No blob store: refs stay refs, and nothing is resolved.
	src, err := Open(ctx, s.st, name, WithClock(s.cfg.now), ReadOnly(), WithReport(func(Problem) {}),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return Metadata{}, err
	}
	if src.noHeader {
		// An empty file (a writer killed before its first write) forks as
		// the empty session its sidecar describes; other headerless files
		// are not sessions.
		if fi, err := s.st.Stat(ctx, name); err != nil || fi.Size != 0 {
			return Metadata{}, src.err
		}
	}
	srcMeta, err := s.readMeta(ctx, src)
	if err != nil {
		return Metadata{}, err
	}
	var lines [][]byte
	switch {
	case o.At == "" && o.Last == 0:
		for _, e := range src.Entries() {
			if e.Type() == TypeSession {
				continue // a later header is never an entry (spec 003 reference)
			}
			lines = append(lines, e.raw)
		}
	default:
		var p []*Entry
		switch {
		case o.At != "":
			p, err = src.Path(o.At)
		case src.Leaf() != nil:
			p, err = src.Path(src.Leaf().ID())
		}
		if err != nil {
			return Metadata{}, fmt.Errorf("fork %s: %w", ref, err)
		}
		if o.Last > 0 {
			p = lastMessages(p, o.Last)
		}
		lines = keepPath(p)
	}

	id := o.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return Metadata{}, fmt.Errorf("fork: %w", err)
		}
		id = u.String()
	}
	if strings.ContainsAny(id, "/\\_") || backend.ValidPath(id) != nil {
		return Metadata{}, backend.PathErr("fork", id, fmt.Errorf("%w: session id must be a plain name without '_'", ErrInvalid))
	}
	if o.ID != "" {
		if name, err := Find(ctx, s.st, id); err == nil && idFromName(backend.Base(name)) == id {
			return Metadata{}, backend.PathErr("fork", name, fs.ErrExist)
		}
	}
	now := s.cfg.now().UTC()
	path := SessionPath(srcMeta.Cwd, now, id)
	if _, err := s.st.Stat(ctx, path); err == nil {
		return Metadata{}, backend.PathErr("fork", path, fs.ErrExist)
	}
	h := Header{Version: CurrentVersion, ID: id, Cwd: srcMeta.Cwd, Title: srcMeta.Title, ParentSession: srcMeta.ID, Timestamp: isoTime(now)}
	var buf bytes.Buffer
	buf.Write(encodeHeader(h))
	buf.WriteByte('\n')
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	meta := Metadata{ID: id, Path: path, ProjectHash: EncodeCwd(srcMeta.Cwd), Cwd: srcMeta.Cwd, Title: srcMeta.Title,
		Model: srcMeta.Model, CreatedAt: now, UpdatedAt: now, ParentID: srcMeta.ID, AgentName: srcMeta.AgentName}
	if err := s.st.WriteFile(ctx, path, buf.Bytes()); err != nil {
		return Metadata{}, err
	}
	fork, err := Open(ctx, s.st, path, ReadOnly(), WithReport(func(Problem) {}), WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		for _, e := range fork.Entries() {
			meta.count(e)
		}
		meta.Model = cmpOr(meta.Model, srcMeta.Model)
		err = s.writeMeta(ctx, meta)
	}
	if err != nil {
		// Leave nothing: no half session.
		bg := context.WithoutCancel(ctx)
		if uerr := s.st.Unlink(bg, path); uerr != nil && !errors.Is(uerr, fs.ErrNotExist) {
			s.cfg.log.Warn("trove/session: removing a fork that failed", "path", path, "err", uerr)
		}
		backend.RemoveAll(bg, s.st, SidecarDir(path))
		return Metadata{}, err
	}
	return meta, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
			if ms, ok := splitObject(e.raw); ok {
				first, _ := ms.str("firstKeptEntryId")
				referenced[first] = true
			}
		}
	}
	// A label of an entry the fork does not hold is left out: labels add
	// nothing to the context, they only link the path.
	var entries []*Entry
	for i, e := range p {
		if e.typ == TypeLabel && i < len(p)-1 && !referenced[e.id] {
			if ms, ok := splitObject(e.raw); ok {
				if target, _ := ms.str("targetId"); !onPath[target] {
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
		ms, ok := splitObject(e.raw)
		if !ok {
			out = append(out, e.raw)
			continue
		}
		var edits []edit
		// Each entry's parent is the one before it: the same as in the
		// source unless entries between were left out.
		if e.parentID != prev {
			want := []byte("null")
			if prev != "" {
				want = quote(prev)
			}
			edits = append(edits, edit{"parentId", want})
		}
		if e.typ == TypeCompaction {
			// A compaction keeps the path entries before it from
			// firstKeptEntryId on, none when that id is not among them: its
			// own id says "none" with a reference the file holds.
			if first, _ := ms.str("firstKeptEntryId"); !before[first] && first != e.id && e.id != "" {
				edits = append(edits, edit{"firstKeptEntryId", quote(e.id)})
			}
		}
		if len(edits) > 0 {
			out = append(out, editObject(ms, edits...))
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
