package trove

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/checkpoint"
	"github.com/trovekit/trove/runlog"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// Problem is one thing Check found wrong, tied to a file of the store.
type Problem struct {
	Layer string // LayerSessions, LayerCheckpoints, LayerRuns or LayerBlobs
	File  string // store path of the file concerned
	Line  int    // 1-based line, 0 when not tied to a line
	Ref   string // the blob concerned, if any
	Err   error
}

// String is the problem on one line, naming its file first.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Ref != "" {
		b.WriteString(p.Ref + ": ")
	}
	b.WriteString(oneLine(p.Err.Error()))
	return b.String()
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }

// CheckReport is what Check read and what it found.
type CheckReport struct {
	Sessions    int // session files loaded
	Transcripts int
	Checkpoints int // manifests loaded
	Runs        int // run logs and state snapshots read
	Blobs       int // blobs verified
	Refs        int // distinct refs resolved
	Problems    []Problem

	tick func() // one more file or blob read (CheckProgress)
}

// OK reports whether Check found nothing wrong.
func (r CheckReport) OK() bool { return len(r.Problems) == 0 }

// CheckOption tunes Check.
type CheckOption func(*checkConfig)

type checkConfig struct {
	progress func(items int)
}

// CheckProgress hears how many files and blobs Check has read so far, as
// it goes (for a progress display).
func CheckProgress(f func(items int)) CheckOption {
	return func(c *checkConfig) { c.progress = f }
}

// Check reads the whole store and changes nothing: every session file
// loads (torn tails, corrupt lines, duplicate ids, dangling parents and
// cycles reported by file and line), every transcript and metadata line
// parses, every checkpoint manifest loads, every run log parses, every ref
// any of them holds names a blob that exists, and every blob verifies
// against its digest. Problems are reported, not returned; the error is
// for what stopped the check (a listing that failed, ctx).
func (s *Store) Check(ctx context.Context, opts ...CheckOption) (CheckReport, error) {
	var c checkConfig
	for _, o := range opts {
		o(&c)
	}
	var rep CheckReport
	add := func(p Problem) { rep.Problems = append(rep.Problems, p) }
	done := 0
	rep.tick = func() {
		if done++; c.progress != nil {
			c.progress(done)
		}
	}
	if err := s.checkSessions(ctx, &rep, add); err != nil {
		return rep, err
	}
	for name, err := range checkpoint.Manifests(ctx, s.st) {
		if err != nil {
			return rep, err
		}
		rep.Checkpoints++
		rep.tick()
		if _, err := checkpoint.LoadManifest(ctx, s.st, s.blobs, name); err != nil {
			add(Problem{Layer: LayerCheckpoints, File: name, Err: err})
		}
	}
	if err := s.checkRuns(ctx, &rep, add); err != nil {
		return rep, err
	}
	if err := s.checkRefs(ctx, &rep, add); err != nil {
		return rep, err
	}
	for ref, err := range s.blobs.Verify(ctx) {
		rep.tick()
		switch {
		case err == nil:
			rep.Blobs++
		case errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrTooLarge) || errors.Is(err, backend.ErrCorrupt):
			rep.Blobs++
			add(Problem{Layer: LayerBlobs, File: "blobs", Ref: ref.String(), Err: err})
		default:
			return rep, err
		}
	}
	return rep, nil
}

// checkSessions loads every session tree file read-only and reads every
// sidecar file.
func (s *Store) checkSessions(ctx context.Context, rep *CheckReport, add func(Problem)) error {
	quiet := slog.New(slog.DiscardHandler)
	for fi, err := range backend.Walk(ctx, s.st, session.SessionsDir) {
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.IsDir {
			continue
		}
		name := fi.Name
		switch base := backend.Base(name); {
		case strings.Count(name, "/") == 2 && strings.HasSuffix(base, ".jsonl"):
			rep.Sessions++
			rep.tick()
			// A torn last line is a write a kill cut short, never
			// acknowledged: not damage. What was acknowledged and is gone
			// shows against the sidecar's count below.
			tornLine := 0
			if last, err := s.lastLine(ctx, name, fi.Size); err == nil {
				tornLine = last
			}
			report := func(p tree.Problem) {
				// Migration is news, and refs are checked against the
				// blob store once, below, for every layer.
				if errors.Is(p.Err, tree.ErrMigrated) || errors.Is(p.Err, tree.ErrBlob) || p.Line > 0 && p.Line == tornLine {
					return
				}
				add(Problem{Layer: LayerSessions, File: name, Line: p.Line, Err: p})
			}
			sess, err := tree.Open(ctx, s.st, name, tree.ReadOnly(), tree.WithReport(report), tree.WithLogger(quiet))
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			if err != nil {
				add(Problem{Layer: LayerSessions, File: name, Err: err})
				continue
			}
			if err := sess.Err(); err != nil && fi.Size > 0 {
				add(Problem{Layer: LayerSessions, File: name, Err: err})
				continue
			}
			if m, ok := s.sidecarMeta(ctx, name); ok {
				n := 0
				for _, e := range sess.Entries() {
					if e.Type() == tree.TypeMessage {
						n++
					}
				}
				if m.MessageCount > n {
					add(Problem{Layer: LayerSessions, File: name, Err: fmt.Errorf("holds %d messages, its metadata recorded %d: acknowledged lines are missing (truncated?)", n, m.MessageCount)})
				}
			}
		case base == session.TranscriptFile:
			rep.Transcripts++
			rep.tick()
			s.checkLines(ctx, LayerSessions, name, add)
		case base == session.MetaFile:
			data, err := s.st.ReadFile(ctx, name)
			if err == nil && !json.Valid(data) {
				err = errors.New("not valid JSON")
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				add(Problem{Layer: LayerSessions, File: name, Err: err})
			}
		}
	}
	return nil
}

// lastLine returns the number of the file's last line when it is torn (no
// newline at the end), else 0.
func (s *Store) lastLine(ctx context.Context, name string, size int64) (int, error) {
	if size == 0 {
		return 0, nil
	}
	data, err := s.st.ReadFile(ctx, name)
	if err != nil || len(data) == 0 || data[len(data)-1] == '\n' {
		return 0, err
	}
	return strings.Count(string(data), "\n") + 1, nil
}

// sidecarMeta reads the metadata beside a session file, if any.
func (s *Store) sidecarMeta(ctx context.Context, name string) (session.Metadata, bool) {
	data, err := s.st.ReadFile(ctx, backend.Join(session.SidecarDir(name), session.MetaFile))
	if err != nil {
		return session.Metadata{}, false
	}
	var m session.Metadata
	if json.Unmarshal(data, &m) != nil {
		return session.Metadata{}, false
	}
	return m, true
}

// checkLines reports every line of a JSONL file that is not JSON.
func (s *Store) checkLines(ctx context.Context, layer, name string, add func(Problem)) {
	rc, err := s.st.Open(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		add(Problem{Layer: layer, File: name, Err: err})
		return
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] != '\n' {
			break // a torn last line: a write a kill cut short, never acknowledged
		}
		if len(strings.TrimSpace(string(b))) > 0 && !json.Valid(b) {
			add(Problem{Layer: layer, File: name, Line: line, Err: errors.New("line is not valid JSON")})
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				add(Problem{Layer: layer, File: name, Err: err})
			}
			break
		}
	}
}

// checkRuns reads every run log record by record, and every state
// snapshot as JSON.
func (s *Store) checkRuns(ctx context.Context, rep *CheckReport, add func(Problem)) error {
	for _, dir := range []string{runlog.RunsDir, runlog.StateDir} {
		for fi, err := range backend.Walk(ctx, s.st, dir) {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if fi.IsDir {
				continue
			}
			rep.Runs++
			rep.tick()
			if dir == runlog.StateDir {
				data, err := s.st.ReadFile(ctx, fi.Name)
				if err == nil && !json.Valid(data) {
					err = errors.New("not valid JSON")
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					add(Problem{Layer: LayerRuns, File: fi.Name, Err: err})
				}
				continue
			}
			line := 0
			for e, err := range s.runs.RecordsAt(ctx, fi.Name, runlog.Unresolved()) {
				line++
				if err == nil {
					continue
				}
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				if e.Line > 0 {
					line = e.Line
				}
				add(Problem{Layer: LayerRuns, File: fi.Name, Line: line, Err: err})
			}
		}
	}
	return nil
}

// checkRefs resolves every ref every layer holds, once per file and ref.
func (s *Store) checkRefs(ctx context.Context, rep *CheckReport, add func(Problem)) error {
	present := map[cas.Ref]bool{}
	type fileRef struct {
		file string
		ref  cas.Ref
	}
	seen := map[fileRef]bool{}
	for _, l := range []layerRoots{
		{LayerSessions, s.sessions.Roots(ctx)},
		{LayerCheckpoints, s.checkpointRoots(ctx)},
		{LayerRuns, s.runs.Roots(ctx)},
	} {
		for r, err := range l.roots {
			if err != nil {
				// A file whose bytes fail authentication is reported where
				// it is loaded; its refs cannot be read, the others can.
				var pe *fs.PathError
				if errors.Is(err, backend.ErrCorrupt) && errors.As(err, &pe) {
					reportOnce(rep, add, Problem{Layer: l.layer, File: pe.Path, Err: err})
					continue
				}
				return err
			}
			if seen[fileRef{r.File, r.Ref}] {
				continue
			}
			seen[fileRef{r.File, r.Ref}] = true
			ok, known := present[r.Ref]
			if !known {
				var err error
				ok, err = s.blobs.Has(ctx, r.Ref)
				if err != nil {
					return err
				}
				present[r.Ref] = ok
			}
			if !ok {
				add(Problem{Layer: l.layer, File: r.File, Ref: r.Ref.String(), Err: fmt.Errorf("blob %w", fs.ErrNotExist)})
			}
		}
	}
	rep.Refs = len(present)
	return nil
}

// reportOnce adds p unless a problem of its file is reported already.
func reportOnce(rep *CheckReport, add func(Problem), p Problem) {
	for _, q := range rep.Problems {
		if q.File == p.File {
			return
		}
	}
	add(p)
}

// checkpointRoots lists the refs of every manifest that loads, skipping
// those that do not (Check reports them apart).
func (s *Store) checkpointRoots(ctx context.Context) func(func(cas.Root, error) bool) {
	return func(yield func(cas.Root, error) bool) {
		for name, err := range checkpoint.Manifests(ctx, s.st) {
			if err != nil {
				yield(cas.Root{}, err)
				return
			}
			man, err := checkpoint.LoadManifest(ctx, s.st, s.blobs, name)
			if err != nil {
				continue
			}
			for _, ref := range man.Refs() {
				r, err := cas.ParseRef(ref)
				if err != nil {
					continue
				}
				if !yield(cas.Root{Ref: r, File: name}, nil) {
					return
				}
			}
		}
	}
}
