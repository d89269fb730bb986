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
	"github.com/trovekit/trove/session/tree"
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
//     agent JSONL's fork keeps. The first kept entry becomes a root and each
//     kept entry's parent is the kept entry before it.
//
// On a path, references that would point at an entry the fork does not
// hold are made to hold where that keeps the context: a label of such an
// entry is left out (its child takes its parent), and a compaction whose
// first kept entry is not before it on the path (it keeps none) names
// itself. A branch summary's fromId is part of the context and stays.
func (s *Store) ForkSession(ctx context.Context, ref string, o ForkOptions) (Metadata, error) {
	if o.Last < 0 {
		return Metadata{}, fmt.Errorf("fork %s: last %d: %w", ref, o.Last, tree.ErrInvalid)
	}
	name, err := s.Find(ctx, ref)
	if err != nil {
		return Metadata{}, err
	}
	// No blob store and lazy: refs stay refs, and nothing is resolved (nor
	// counted as a note that it could not be).
	src, err := tree.Open(ctx, s.st, name, tree.WithClock(s.cfg.now), tree.ReadOnly(), tree.LazyBlobs(), tree.WithReport(func(tree.Problem) {}),
		tree.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return Metadata{}, err
	}
	if !src.HasHeader() {
		// An empty file (a writer killed before its first write) forks as
		// the empty session its sidecar describes; other headerless files
		// are not sessions.
		if fi, err := s.st.Stat(ctx, name); err != nil || fi.Size != 0 {
			return Metadata{}, src.Err()
		}
	}
	srcMeta, err := s.readMeta(ctx, src)
	if err != nil {
		return Metadata{}, err
	}
	lines, err := src.ForkLines(o.At, o.Last)
	if err != nil {
		return Metadata{}, fmt.Errorf("fork %s: %w", ref, err)
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
		return Metadata{}, backend.PathErr("fork", id, fmt.Errorf("%w: session id must be a plain name without '_'", tree.ErrInvalid))
	}
	if o.ID != "" {
		if name, err := s.Find(ctx, id); err == nil && idFromName(backend.Base(name)) == id {
			return Metadata{}, backend.PathErr("fork", name, fs.ErrExist)
		}
	}
	now := s.cfg.now().UTC()
	path := SessionPath(srcMeta.Cwd, now, id)
	if _, err := s.st.Stat(ctx, path); err == nil {
		return Metadata{}, backend.PathErr("fork", path, fs.ErrExist)
	}
	h := tree.Header{Version: tree.CurrentVersion, ID: id, Cwd: srcMeta.Cwd, Title: srcMeta.Title, ParentSession: srcMeta.ID, Timestamp: tree.FormatTime(now)}
	var buf bytes.Buffer
	buf.Write(tree.EncodeHeader(h))
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
	// Counted as stored: refs unresolved, so an image in the first message
	// is left out of its text (as the source's count left it), not
	// replaced by a note that there is no blob store here.
	fork, err := tree.Open(ctx, s.st, path, tree.ReadOnly(), tree.LazyBlobs(), tree.WithReport(func(tree.Problem) {}), tree.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		for _, e := range fork.Stored() {
			meta.count(e)
		}
		meta.Model = cmpOr(meta.Model, srcMeta.Model)
		err = s.writeMeta(ctx, meta, int64(buf.Len()), false)
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
