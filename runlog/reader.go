package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
	"github.com/trovekit/trove/internal/jsonl"
)

// ReadOption tunes Records and Load.
type ReadOption func(*readConfig)

type readConfig struct {
	resolve bool
}

// Unresolved leaves externalized tool outputs as refs (ResultRaw holds the
// notice trove wrote); OpenOutput streams them when needed.
func Unresolved() ReadOption { return func(c *readConfig) { c.resolve = false } }

// Records yields the records of the run runID (an id or a unique prefix, as
// Find takes) in file order. Each entry keeps its raw JSON. Records of unknown
// types come as *Unknown; unknown fields and enum values are ignored by the
// typed value and kept in Raw. Blank lines and a torn last line (a crash
// mid-append) are skipped without a word.
//
// An error wrapping ErrCorrupt (a line that is not a record, with its Raw) or
// ErrBlob (an output whose blob is unreadable, the entry still given) is
// about one line, and iteration goes on after it. Any other error (the run
// is missing: fs.ErrNotExist; I/O; ctx) ends the iteration.
func (s *Store) Records(ctx context.Context, runID string, opts ...ReadOption) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		info, err := s.Find(ctx, runID)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		s.RecordsAt(ctx, info.Path, opts...)(yield)
	}
}

// RecordsAt is Records for the run file at path (a RunInfo.Path).
func (s *Store) RecordsAt(ctx context.Context, path string, opts ...ReadOption) iter.Seq2[Entry, error] {
	cfg := readConfig{resolve: true}
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(Entry, error) bool) {
		_, err := s.scan(ctx, path, cfg.resolve, yield)
		if err != nil {
			yield(Entry{}, err)
		}
	}
}

// Run is a whole run read into memory.
type Run struct {
	Path     string
	Header   *Header // nil when the file has no readable header
	Entries  []Entry // every record, the header first when there is one
	Problems []error // lines skipped or outputs unresolved (ErrCorrupt, ErrBlob)
	Torn     bool    // the last line was torn and skipped
	Summary  Summary
}

// Load reads the whole run runID (an id or a unique prefix, see Find).
// Lines that are not records are reported in Problems, never fatal.
func (s *Store) Load(ctx context.Context, runID string, opts ...ReadOption) (*Run, error) {
	info, err := s.Find(ctx, runID)
	if err != nil {
		return nil, err
	}
	cfg := readConfig{resolve: true}
	for _, o := range opts {
		o(&cfg)
	}
	run := &Run{Path: info.Path}
	sum := newSummarizer(info)
	torn, err := s.scan(ctx, info.Path, cfg.resolve, func(e Entry, err error) bool {
		sum.add(e, err)
		if err != nil {
			run.Problems = append(run.Problems, err)
			if e.Record == nil {
				return true
			}
		}
		if h, ok := e.Record.(*Header); ok && run.Header == nil && len(run.Entries) == 0 {
			run.Header = h
		}
		run.Entries = append(run.Entries, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	run.Torn = torn
	sum.torn = torn
	if run.Header == nil {
		run.Problems = append(run.Problems, backend.PathErr("read", info.Path, fmt.Errorf("%w: no header", ErrCorrupt)))
	}
	run.Summary = sum.summary()
	return run, nil
}

// OpenOutput streams the full output of t: from the blob store when it was
// externalized (and not resolved), else from ResultRaw.
func (s *Store) OpenOutput(ctx context.Context, t *ToolOutput) (io.ReadCloser, error) {
	if t == nil {
		return nil, fmt.Errorf("runlog: open output: %w: nil tool output", ErrInvalid)
	}
	if t.resolved || t.OutputRef == nil {
		return io.NopCloser(strings.NewReader(t.ResultRaw)), nil
	}
	ref, err := cas.ParseRef(t.OutputRef.ID)
	if err != nil {
		return io.NopCloser(strings.NewReader(t.ResultRaw)), nil
	}
	if s.blobs == nil {
		return nil, backend.PathErr("open", t.OutputRef.ID, fmt.Errorf("%w: no blob store", ErrBlob))
	}
	rc, err := s.blobs.Open(ctx, ref)
	if err != nil {
		return nil, backend.PathErr("open", t.OutputRef.ID, fmt.Errorf("%w: %w", ErrBlob, err))
	}
	return rc, nil
}

// scan reads the run file at path line by line and yields each entry. It
// returns whether a torn last line was skipped, and the error that ended the
// scan, if any (per-line errors go to yield).
func (s *Store) scan(ctx context.Context, path string, resolve bool, yield func(Entry, error) bool) (bool, error) {
	rc, err := s.st.Open(ctx, path)
	if err != nil {
		return false, backend.PathErr("read", path, err)
	}
	defer rc.Close()
	lr := jsonl.NewReader(rc, s.maxLine)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return false, backend.PathErr("read", path, err)
		}
		line, complete, err := lr.Next()
		if err == io.EOF {
			return false, nil
		}
		if errors.Is(err, jsonl.ErrLineTooLong) {
			if !yield(Entry{Line: n}, lineErr(path, n, fmt.Errorf("%w: %w", ErrCorrupt, err))) {
				return false, nil
			}
			continue
		}
		if err != nil {
			return false, backend.PathErr("read", path, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		e, perr := parseLine(line)
		e.Line = n
		if perr != nil {
			if !complete {
				// The last line, cut short by a crash: skipped, as spec
				// 004 section 4 asks, not reported as corrupt.
				s.log.Debug("runlog: torn last line skipped", "path", path, "line", n, "bytes", len(line))
				return true, nil
			}
			if !yield(e, lineErr(path, n, perr)) {
				return false, nil
			}
			continue
		}
		var rerr error
		if t, ok := e.Record.(*ToolOutput); ok && resolve {
			if err := s.resolve(ctx, t); err != nil {
				s.log.Warn("runlog: tool output not resolved", "path", path, "line", n, "err", err)
				rerr = lineErr(path, n, err)
			}
		}
		if !yield(e, rerr) {
			return false, nil
		}
	}
}

// parseLine decodes one line. A line that is not a JSON object with a string
// "type", or a known record whose fields have the wrong JSON types, is
// ErrCorrupt; the entry still carries Raw and Type.
func parseLine(line []byte) (Entry, error) {
	e := Entry{Raw: json.RawMessage(line)}
	e.Type = peekType(line)
	if e.Type == "" {
		if !json.Valid(line) {
			return e, fmt.Errorf("%w: not JSON", ErrCorrupt)
		}
		return e, fmt.Errorf("%w: not an object with a string type", ErrCorrupt)
	}
	rec := newRecord(e.Type)
	if rec == nil {
		if !json.Valid(line) {
			return e, fmt.Errorf("%w: not JSON", ErrCorrupt)
		}
		e.Record = &Unknown{Type: e.Type, Raw: e.Raw}
		return e, nil
	}
	if err := json.Unmarshal(line, rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return e, fmt.Errorf("%w: not JSON: %v", ErrCorrupt, err)
		}
		return e, fmt.Errorf("%w: %s record: %v", ErrCorrupt, e.Type, err)
	}
	e.Record = rec
	return e, nil
}

// resolve loads an externalized output back into t.ResultRaw. Outputs whose
// id is not a blob ref (the run log spec's own example uses the tool call id) and
// outputs above the resolve bound are left as they are.
func (s *Store) resolve(ctx context.Context, t *ToolOutput) error {
	if t.OutputRef == nil || s.blobs == nil {
		return nil
	}
	ref, err := cas.ParseRef(t.OutputRef.ID)
	if err != nil || t.OutputRef.ByteSize > s.maxResolve {
		return nil
	}
	rc, err := s.blobs.Open(ctx, ref)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBlob, ref, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, s.maxResolve+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBlob, ref, err)
	}
	if int64(len(data)) > s.maxResolve {
		return nil
	}
	t.stored, t.ResultRaw, t.resolved = t.ResultRaw, string(data), true
	return nil
}
