package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/internal/jsonscan"
	"github.com/trovekit/trove/runlog"
)

// Run logs (runs/YYYY/MM/DD/<run_id>.jsonl) are catalogued beside the
// sessions: a file row per run (its run id, the session it belongs to,
// the cwd of its runtime) and an entry per record that holds text: the
// input (run.start, role user), what the model answered (llm.response,
// role assistant), tool outputs (tool.output, role tool; outputs kept as
// blobs by their text), the final answer (run.end) and errors. Requests
// (llm.request) repeat the conversation and events are for playback:
// neither is indexed. Stats leave runs out: a run repeats its session.
//
// A day directory is listed again only when its time moved, as a cwd
// directory is; the runs it holds that have no run.end yet may still
// grow, and only they are looked at (a run killed before its end is
// looked at every refresh: one stat).

// isRunPath reports whether path is a run log's.
func isRunPath(path string) bool { return strings.HasPrefix(path, runlog.RunsDir+"/") }

// listRuns adds the run files to l: runs/YYYY/MM/DD/*.jsonl, each day
// directory unchanged since saved taken as it was.
func (c *Catalog) listRuns(ctx context.Context, l *listing, saved map[string]dirState, all, dirTimes bool, now time.Time) error {
	var days []backend.Info
	for _, depth := range []int{0, 1, 2} {
		parents := []string{runlog.RunsDir}
		if depth > 0 {
			parents = parents[:0]
			for _, d := range days {
				parents = append(parents, d.Name)
			}
		}
		days = days[:0:0]
		for _, parent := range parents {
			for fi, err := range c.st.List(ctx, parent) {
				if errors.Is(err, fs.ErrNotExist) {
					break // no runs yet, or removed meanwhile
				}
				if err != nil {
					return err
				}
				if fi.IsDir && digitsOnly(fi.Base()) {
					days = append(days, fi)
				}
			}
		}
	}
	for _, day := range days {
		if err := c.listDir(ctx, l, day, saved, all, dirTimes, now); err != nil {
			return err
		}
	}
	return nil
}

func digitsOnly(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// openRunsQuery lists the runs read without their end, by the partial
// index files_open_runs: not a scan of every file's row.
const openRunsQuery = "SELECT path FROM files WHERE run != '' AND done = 0"

// runsOpen sets each listed run directory's open files: its runs the
// catalog has read no run.end of.
func runsOpen(ctx context.Context, db *sql.DB, l *listing) error {
	if !slices.ContainsFunc(slices.Collect(maps.Keys(l.dirs)), isRunPath) {
		return nil
	}
	open := map[string][]string{}
	rows, err := db.QueryContext(reading(ctx), openRunsQuery)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var path string
		if err := rows.Scan(&path); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		open[backend.Dir(path)] = append(open[backend.Dir(path)], path)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	for name, d := range l.dirs {
		if isRunPath(name) {
			d.open = open[name]
			slices.Sort(d.open)
			l.dirs[name] = d
		}
	}
	return nil
}

// parseRunHeader reads a run log's header: the session it belongs to
// (id), its runtime's cwd, its start; run is the run id.
func parseRunHeader(line []byte) (h header, run string, ok bool) {
	valid, _, top := jsonscan.ScanObject(line, nil)
	if !valid || top == nil {
		return h, "", false
	}
	if t, _ := top.Str("type"); t != runlog.TypeHeader {
		return h, "", false
	}
	if run, ok = top.Str("run_id"); !ok || run == "" {
		return h, "", false
	}
	h.id, _ = top.Str("session_id")
	if rt, ok := jsonscan.SplitObject(top.Get("runtime")); ok {
		h.cwd, _ = rt.Str("cwd")
	}
	h.ts = parseTime(top.Get("started_at"))
	return h, run, true
}

func parseTime(raw []byte) int64 {
	if s, ok := jsonscan.String(raw); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UnixMilli()
		}
	}
	return 0
}

// parseRunRecord reads one record of a run log at offset off: ok false
// for one that holds nothing to index; end true for run.end.
func parseRunRecord(line []byte, off int64) (d doc, ok, end bool) {
	valid, _, top := jsonscan.ScanObject(line, nil)
	if !valid || top == nil {
		return d, false, false
	}
	typ, _ := top.Str("type")
	d.id = "@" + strconv.FormatInt(off, 10)
	d.ts = parseTime(top.Get("ts"))
	switch typ {
	case runlog.TypeRunStart:
		d.role = RoleUser
		if in, ok := jsonscan.SplitObject(top.Get("input")); ok {
			d.addString(in.Get("text"))
		}
	case runlog.TypeLLMResponse:
		d.role = RoleAssistant
		out, _ := jsonscan.SplitObject(top.Get("output"))
		d.addValues(out.Get("messages"))
		if u, ok := jsonscan.SplitObject(out.Get("usage")); ok {
			d.model, _ = u.Str("model")
		}
	case runlog.TypeToolOutput:
		d.role = RoleTool
		if name, ok := top.Str("tool"); ok {
			d.tools = append(d.tools, name)
		}
		if ref, ok := jsonscan.SplitObject(top.Get("output_ref")); ok {
			if id, _ := ref.Str("id"); strings.HasPrefix(id, "blob:") {
				d.refs = append(d.refs, id)
				d.texts = append(d.texts, "") // resolved in its place
				break
			}
		}
		d.addString(top.Get("result_raw"))
	case runlog.TypeRunEnd:
		d.role = RoleAssistant
		d.addString(top.Get("final"))
		end = true
	case runlog.TypeRunError:
		d.role = RoleOther
		if e, ok := jsonscan.SplitObject(top.Get("error")); ok {
			d.addString(e.Get("name"))
			d.addString(e.Get("message"))
		}
	case runlog.TypeRunStatus:
		d.role = RoleOther
		d.addString(top.Get("message"))
	}
	return d, len(d.texts) > 0, end
}
