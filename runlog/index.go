package runlog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonl"
)

// RunInfo is what the index knows of a run without reading it: its file and
// its header's first fields.
type RunInfo struct {
	RunID         string    `json:"run_id"`
	SessionID     string    `json:"session_id,omitempty"`
	StartedAt     Time      `json:"started_at,omitzero"`
	SchemaVersion int       `json:"schema_version,omitempty"`
	Path          string    `json:"path"`
	Size          int64     `json:"size_bytes"`
	ModTime       time.Time `json:"mod_time"`
}

// ListOption filters Runs and Summaries.
type ListOption func(*listConfig)

type listConfig struct {
	session      string
	since, until time.Time
	limit        int
}

// ForSession keeps the runs whose header names session id.
func ForSession(id string) ListOption { return func(c *listConfig) { c.session = id } }

// Since keeps the runs started at or after t.
func Since(t time.Time) ListOption { return func(c *listConfig) { c.since = t } }

// Until keeps the runs started before t.
func Until(t time.Time) ListOption { return func(c *listConfig) { c.until = t } }

// Limit stops after n runs; n <= 0 means no limit.
func Limit(n int) ListOption { return func(c *listConfig) { c.limit = n } }

// Runs yields the runs of the store newest first: by date directory, then by
// started_at within a day. It lists directories and reads a prefix of each
// run file (the header's first fields; trove writes run_id, session_id and
// started_at first), never a whole run, so the index by date and by session
// costs one small read per run and no sidecar that could disagree with the
// runs after a crash. Date filters prune whole directories first.
//
// Files that do not look like runs are skipped. An error ends the
// iteration.
func (s *Store) Runs(ctx context.Context, opts ...ListOption) iter.Seq2[RunInfo, error] {
	var cfg listConfig
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(RunInfo, error) bool) {
		n := 0
		for day, err := range s.days(ctx, cfg.since, cfg.until) {
			if err != nil {
				yield(RunInfo{}, err)
				return
			}
			var infos []RunInfo
			for fi, err := range s.st.List(ctx, day) {
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						break // removed while listing
					}
					yield(RunInfo{}, err)
					return
				}
				if fi.IsDir {
					continue
				}
				if _, ok := runIDOf(fi.Name); !ok {
					continue
				}
				ri, err := s.headInfo(ctx, fi)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					yield(RunInfo{}, err)
					return
				}
				if cfg.keep(ri) {
					infos = append(infos, ri)
				}
			}
			slices.SortFunc(infos, func(a, b RunInfo) int {
				if c := b.StartedAt.Compare(a.StartedAt.Time); c != 0 {
					return c
				}
				return cmp.Compare(b.RunID, a.RunID)
			})
			for _, ri := range infos {
				if !yield(ri, nil) {
					return
				}
				if n++; cfg.limit > 0 && n >= cfg.limit {
					return
				}
			}
		}
	}
}

func (c *listConfig) keep(ri RunInfo) bool {
	if c.session != "" && ri.SessionID != c.session {
		return false
	}
	if !ri.StartedAt.IsZero() {
		if !c.since.IsZero() && ri.StartedAt.Before(c.since) {
			return false
		}
		if !c.until.IsZero() && !ri.StartedAt.Before(c.until) {
			return false
		}
	}
	return true
}

// days yields the day directories runs/YYYY/MM/DD, newest first, that may
// hold runs started in [since, until).
func (s *Store) days(ctx context.Context, since, until time.Time) iter.Seq2[string, error] {
	lo, hi := "", "~"
	if !since.IsZero() {
		lo = since.UTC().Format("2006/01/02")
	}
	if !until.IsZero() {
		hi = until.UTC().Format("2006/01/02")
	}
	return func(yield func(string, error) bool) {
		years, err := s.subdirs(ctx, RunsDir, 4)
		if err != nil {
			yield("", err)
			return
		}
		for _, y := range slices.Backward(years) {
			if y < lo[:min(4, len(lo))] || y > hi[:min(4, len(hi))] {
				continue
			}
			months, err := s.subdirs(ctx, RunsDir+"/"+y, 2)
			if err != nil {
				yield("", err)
				return
			}
			for _, m := range slices.Backward(months) {
				ym := y + "/" + m
				if ym < lo[:min(7, len(lo))] || ym > hi[:min(7, len(hi))] {
					continue
				}
				days, err := s.subdirs(ctx, RunsDir+"/"+ym, 2)
				if err != nil {
					yield("", err)
					return
				}
				for _, d := range slices.Backward(days) {
					ymd := ym + "/" + d
					if ymd < lo || ymd > hi {
						continue
					}
					if !yield(RunsDir+"/"+ymd, nil) {
						return
					}
				}
			}
		}
	}
}

// subdirs returns the names of the directories of dir made of n digits, in
// ascending order; a missing dir has none.
func (s *Store) subdirs(ctx context.Context, dir string, n int) ([]string, error) {
	var out []string
	for fi, err := range s.st.List(ctx, dir) {
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if b := fi.Base(); fi.IsDir && digits(b, n) {
			out = append(out, b)
		}
	}
	return out, nil
}

// headInfo reads the header fields of the run file fi from a prefix of it,
// and reads the whole first line only when the prefix ends inside a header
// that has not yet named its session.
func (s *Store) headInfo(ctx context.Context, fi backend.Info) (RunInfo, error) {
	id, _ := runIDOf(fi.Name)
	ri := RunInfo{RunID: id, Path: fi.Name, Size: fi.Size, ModTime: fi.ModTime}
	data, err := s.st.ReadPrefix(ctx, fi.Name, headerPrefix)
	if err != nil {
		return ri, backend.PathErr("read", fi.Name, err)
	}
	h := scanHeader(data)
	if !h.complete && !h.sawSession && bytes.IndexByte(data, '\n') < 0 && len(data) == headerPrefix {
		line, err := s.firstLine(ctx, fi.Name)
		if err != nil {
			return ri, err
		}
		h = scanHeader(line)
	}
	if h.typ == TypeHeader {
		ri.SessionID, ri.StartedAt, ri.SchemaVersion = h.sessionID, h.startedAt, h.schema
	}
	return ri, nil
}

func (s *Store) firstLine(ctx context.Context, name string) ([]byte, error) {
	rc, err := s.st.Open(ctx, name)
	if err != nil {
		return nil, backend.PathErr("read", name, err)
	}
	defer rc.Close()
	lr := jsonl.NewReader(rc, s.maxLine)
	line, _, err := lr.Next()
	if err != nil && !errors.Is(err, jsonl.ErrLineTooLong) && !errors.Is(err, io.EOF) {
		return nil, backend.PathErr("read", name, err)
	}
	return line, nil
}

type headerFields struct {
	typ, sessionID string
	startedAt      Time
	schema         int
	sawSession     bool
	complete       bool
}

// scanHeader reads the top-level fields of the JSON object data starts with,
// as far as data goes: a prefix may end in the middle of the object.
func scanHeader(data []byte) headerFields {
	var h headerFields
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return h
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return h
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return h
		}
		switch key {
		case "type":
			_ = json.Unmarshal(raw, &h.typ)
		case "session_id":
			h.sawSession = true
			_ = json.Unmarshal(raw, &h.sessionID)
		case "started_at":
			_ = json.Unmarshal(raw, &h.startedAt)
		case "schema_version":
			_ = json.Unmarshal(raw, &h.schema)
		}
	}
	if tok, err := dec.Token(); err == nil && tok == json.Delim('}') {
		h.complete = true
	}
	return h
}

// Find returns the run whose id is id, or the only run whose id starts with
// it. It lists the date directories newest first (one List each; an exact
// match ends the search) and reads no run file but the one it returns (its
// header prefix). A missing run is fs.ErrNotExist; a prefix shared by
// several runs is ErrAmbiguous.
func (s *Store) Find(ctx context.Context, id string) (RunInfo, error) {
	if err := checkID("run id", id); err != nil {
		return RunInfo{}, backend.PathErr("find", id, err)
	}
	var matches []backend.Info
	for day, err := range s.days(ctx, time.Time{}, time.Time{}) {
		if err != nil {
			return RunInfo{}, backend.PathErr("find", id, err)
		}
		for fi, err := range s.st.List(ctx, day) {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return RunInfo{}, backend.PathErr("find", id, err)
			}
			rid, ok := runIDOf(fi.Name)
			if !ok || fi.IsDir {
				continue
			}
			if rid == id {
				return s.headInfo(ctx, fi)
			}
			if strings.HasPrefix(rid, id) {
				matches = append(matches, fi)
			}
		}
	}
	switch len(matches) {
	case 0:
		return RunInfo{}, backend.PathErr("find", id, fs.ErrNotExist)
	case 1:
		return s.headInfo(ctx, matches[0])
	}
	names := make([]string, 0, 4)
	for _, m := range matches[:min(len(matches), 4)] {
		rid, _ := runIDOf(m.Name)
		names = append(names, rid)
	}
	return RunInfo{}, backend.PathErr("find", id, fmt.Errorf("%w: %d runs (%s...)", ErrAmbiguous, len(matches), strings.Join(names, ", ")))
}
