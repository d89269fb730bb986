package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/trovekit/trove/cas"
)

// Group keys for Stats.
const (
	ByNone  = ""
	ByDay   = "day"   // the entry's UTC date
	ByModel = "model" // the assistant message's model (other entries are not counted)
	ByCwd   = "cwd"   // the session's working directory
	ByTool  = "tool"  // calls of each tool and failures of its results
)

// StatsQuery selects what Stats adds up.
type StatsQuery struct {
	By    string    // ByNone, ByDay, ByModel, ByCwd or ByTool
	Since time.Time // entries at or after this time
}

// Usage is what a group of entries adds up to.
type Usage struct {
	Key        string  `json:"key"`
	Sessions   int64   `json:"sessions"`
	Messages   int64   `json:"messages"`
	Input      int64   `json:"input_tokens"`
	Output     int64   `json:"output_tokens"`
	CacheRead  int64   `json:"cache_read_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	Cost       float64 `json:"cost_usd"`
	ToolCalls  int64   `json:"tool_calls"`
	ToolErrors int64   `json:"tool_failures"`

	files map[int64]bool
}

// Stats is the report: one Usage a group (by key), the total, and what
// the store keeps.
type Stats struct {
	Groups []Usage `json:"groups,omitempty"`
	Total  Usage   `json:"total"`
	// SessionBytes is the size of the session files; BlobBytes what the
	// blobs they refer to take on storage (compressed), BlobOriginal their
	// size before; DedupSaved the bytes more that each reference holding
	// its own copy would take.
	SessionBytes int64 `json:"session_bytes"`
	BlobBytes    int64 `json:"blob_bytes"`
	BlobOriginal int64 `json:"blob_original_bytes"`
	DedupSaved   int64 `json:"dedup_saved_bytes"`
	Blobs        int64 `json:"blobs"`
}

// Stats adds up the catalog's entries, after bringing it up to the store.
func (c *Catalog) Stats(ctx context.Context, q StatsQuery) (*Stats, error) {
	switch q.By {
	case ByNone, ByDay, ByModel, ByCwd, ByTool:
	default:
		return nil, fmt.Errorf("%w: stats by %q: want day, model, cwd or tool", fs.ErrInvalid, q.By)
	}
	if err := c.Refresh(ctx, false); err != nil {
		return nil, err
	}
	db, err := c.handle()
	if err != nil {
		return nil, err
	}
	c.adviseMapping()
	rows, err := db.QueryContext(ctx, `SELECT e.file, f.cwd, e.ts, e.role, e.tools, e.model, e.messages, e.tool_calls, e.tool_errors,
		e.input, e.output, e.cache_read, e.cache_write, e.cost FROM entries e JOIN files f ON f.id = e.file WHERE f.run = '' AND e.ts >= ?`, q.Since.UnixMilli())
	if q.Since.IsZero() {
		rows, err = db.QueryContext(ctx, `SELECT e.file, f.cwd, e.ts, e.role, e.tools, e.model, e.messages, e.tool_calls, e.tool_errors,
			e.input, e.output, e.cache_read, e.cache_write, e.cost FROM entries e JOIN files f ON f.id = e.file WHERE f.run = ''`)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	st := &Stats{Total: Usage{files: map[int64]bool{}}}
	groups := map[string]*Usage{}
	group := func(key string) *Usage {
		g := groups[key]
		if g == nil {
			g = &Usage{Key: key, files: map[int64]bool{}}
			groups[key] = g
		}
		return g
	}
	for rows.Next() {
		var file, ts int64
		var cwd, role, tools, model string
		var u Usage
		if err := rows.Scan(&file, &cwd, &ts, &role, &tools, &model, &u.Messages, &u.ToolCalls, &u.ToolErrors,
			&u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		st.Total.add(file, u)
		switch q.By {
		case ByDay:
			if ts != 0 {
				group(time.UnixMilli(ts).UTC().Format(time.DateOnly)).add(file, u)
			}
		case ByModel:
			if model != "" {
				group(model).add(file, u)
			}
		case ByCwd:
			group(cwd).add(file, u)
		case ByTool:
			for _, name := range strings.Fields(tools) {
				g := group(name)
				g.files[file] = true
				if role == RoleTool {
					g.ToolErrors += u.ToolErrors
				} else {
					g.ToolCalls++
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	st.Total.finish()
	for _, g := range groups {
		g.finish()
		st.Groups = append(st.Groups, *g)
	}
	slices.SortFunc(st.Groups, func(a, b Usage) int { return cmp.Compare(a.Key, b.Key) })
	if err := c.storeBytes(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

func (u *Usage) add(file int64, v Usage) {
	u.files[file] = true
	u.Messages += v.Messages
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.Cost += v.Cost
	u.ToolCalls += v.ToolCalls
	u.ToolErrors += v.ToolErrors
}

func (u *Usage) finish() {
	u.Sessions = int64(len(u.files))
	u.files = nil
}

// storeBytes fills in what the sessions and their blobs take: each blob
// the sessions refer to is looked up once.
func (c *Catalog) storeBytes(ctx context.Context, st *Stats) error {
	db, err := c.handle()
	if err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, "SELECT coalesce(sum(size), 0) FROM files WHERE run = ''").Scan(&st.SessionBytes); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if c.blobs == nil {
		return nil
	}
	rows, err := db.QueryContext(ctx, "SELECT ref, count(*) FROM refs GROUP BY ref")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref string
		var n int64
		if err := rows.Scan(&ref, &n); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		r, err := cas.ParseRef(ref)
		if err != nil {
			continue
		}
		info, err := c.blobs.Stat(ctx, r)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a dangling ref: fsck's to report
		}
		if err != nil {
			return err
		}
		st.Blobs++
		st.BlobBytes += info.StoredSize
		st.BlobOriginal += info.Size
		st.DedupSaved += (n - 1) * info.Size
	}
	return rows.Err()
}
