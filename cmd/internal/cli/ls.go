package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/internal/jsonw"
	"github.com/trovekit/trove/session"
)

func newLsCmd(a *app) *cobra.Command {
	var cwd, since, match string
	var all, refresh bool
	var limit int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List sessions, newest first (default: the current directory's)",
		Long: `List sessions, newest first, from the listing index (rebuilt from the
session files where they changed). The first column is each id's shortest
unique abbreviation, accepted wherever an id is.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if all && cwd != "" {
				return usageErr("--all and --cwd exclude each other")
			}
			if limit < 0 {
				return usageErr("--limit %d: want 0 (all) or more", limit)
			}
			q := session.Query{Cwd: cwd, Match: match, Limit: limit, Refresh: refresh}
			moving := false // --since a duration ago: a time that moves with every run
			if since != "" {
				t, ago, err := parseSince(since, time.Now())
				if err != nil {
					return usageErr("--since %q: %v", since, err)
				}
				q.Since, moving = t, ago
			}
			if !all && cwd == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				q.Cwd = wd
			}
			if all {
				q.Cwd = ""
			}
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			key := "" // no cached listing: it would never be asked for again
			if !refresh && !moving {
				key = listingKey(q, a.jsonOut)
			}
			out := &pipeGrower{w: a.stdout}
			return s.CachedListing(ctx, key, out, func(ctx context.Context, w io.Writer) error {
				return a.listSessions(ctx, s, q, w)
			})
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "sessions of this working directory")
	cmd.Flags().BoolVar(&all, "all", false, "sessions of every working directory")
	cmd.Flags().IntVarP(&limit, "limit", "n", 0, "at most this many sessions (0: all)")
	cmd.Flags().StringVar(&since, "since", "", "sessions updated since a time (RFC 3339, a date, or a duration ago such as 36h)")
	cmd.Flags().StringVar(&match, "match", "", "sessions whose title or first message contains this text (any case)")
	cmd.Flags().BoolVar(&refresh, "refresh", false, "check every session file against the index (files other programs changed in place)")
	return cmd
}

// listSessions writes the listing of q to w, as a table or as JSON.
func (a *app) listSessions(ctx context.Context, s *session.Store, q session.Query, w io.Writer) error {
	// A listing allocates about 2 KB a session, all of it live
	// until the command ends: collecting meanwhile frees nothing
	// and its write barriers fault fresh pages in twice (a third
	// of the time of 10,000 sessions). The limit still bounds a
	// huge store.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	list, err := s.Select(ctx, q)
	if err != nil {
		return err
	}
	// Abbreviations must be unique across the store, not the listing.
	every := list
	filtered := q.Cwd != "" || q.Limit != 0 || !q.Since.IsZero() || q.Match != ""
	if filtered {
		if every, err = s.Select(ctx, session.Query{}); err != nil {
			return err
		}
	}
	ids := make([]string, len(every))
	for i, m := range every {
		ids[i] = m.ID
	}
	// short[i] abbreviates every[i], then list[i].
	short := session.Abbrev(ids)
	if filtered {
		of := make(map[string]string, len(ids))
		for i, id := range ids {
			of[id] = short[i]
		}
		short = make([]string, len(list))
		for i, m := range list {
			short[i] = of[m.ID]
		}
	}
	if a.jsonOut {
		return writeListed(w, list, short)
	}
	width := 4
	for _, a := range short {
		width = max(width, len(a))
	}
	// One write per 64 KiB, not per session.
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, m := range list {
		fmt.Fprintf(bw, "%-*s  %s  %4d msgs  %s  %s\n", width, short[i], m.UpdatedAt.Local().Format(time.DateTime), m.MessageCount,
			clean(m.Cwd, 80), clean(cmp.Or(m.Title, m.FirstMessage), 100))
	}
	return bw.Flush()
}

// listingKey names everything a listing's output depends on besides the
// sessions: the query, the format, the zone its times are printed in and
// this program (its build and its file), so that a new trove never
// replays an older one's output.
func listingKey(q session.Query, jsonOut bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ls\x00json=%t\x00cwd=%s\x00since=%s\x00match=%s\x00limit=%d\x00", jsonOut, q.Cwd, q.Since.Format(time.RFC3339Nano), q.Match, q.Limit)
	if !jsonOut {
		name, off := time.Now().Zone()
		fmt.Fprintf(&b, "tz=%s,%s,%d\x00", os.Getenv("TZ"), name, off)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&b, "build=%s", bi.Main.Version)
		for _, kv := range bi.Settings {
			if strings.HasPrefix(kv.Key, "vcs.") {
				fmt.Fprintf(&b, ",%s=%s", kv.Key, kv.Value)
			}
		}
		b.WriteByte(0)
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(&b, "exe=%s,%d,%d", exe, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// pipeGrower grows the pipe w is, if it is one, at the first large write:
// a long listing then goes out in a few large reads.
type pipeGrower struct {
	w     io.Writer
	grown bool
}

func (p *pipeGrower) Write(b []byte) (int, error) {
	if !p.grown && len(b) >= 64<<10 {
		p.grown = true
		growPipe(p.w, 1<<20) // the limit for unprivileged users by default
	}
	return p.w.Write(b)
}

// parseSince reads --since: a duration ago (ago true), an RFC 3339 time or
// a date.
func parseSince(s string, now time.Time) (t time.Time, ago bool, err error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, false, errors.New("a negative duration")
		}
		return now.Add(-d), true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, errors.New("want a duration (36h), an RFC 3339 time or a date (2026-11-24)")
}

// writeListed writes `trove ls --json`: an array of the sessions'
// metadata with their short ids, one session per line, keys in snake_case
// and sorted, times in UTC milliseconds, as printJSON would say it, by
// hand: ten thousand sessions print in milliseconds. Two encoders take
// turns at chunks of the list, written in order as they come, so a long
// listing is never whole in memory.
func writeListed(w io.Writer, list []session.Metadata, short []string) error {
	if len(list) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	if _, err := io.WriteString(w, "[\n"); err != nil {
		return err
	}
	const chunk, workers = 256, 2
	n := (len(list) + chunk - 1) / chunk
	stop := make(chan struct{})
	defer close(stop)
	var out, free [workers]chan []byte
	for k := range workers {
		out[k], free[k] = make(chan []byte, 1), make(chan []byte, 2)
		free[k] <- nil
		free[k] <- nil
		go func() {
			for i := k; i < n; i += workers {
				var b []byte
				select {
				case b = <-free[k]:
				case <-stop:
					return
				}
				lo, hi := i*chunk, min((i+1)*chunk, len(list))
				b = appendSessions(b[:0], list[lo:hi], short[lo:hi])
				if i == n-1 {
					b = append(b[:len(b)-2], '\n') // no comma after the last
				}
				select {
				case out[k] <- b:
				case <-stop:
					return
				}
			}
		}()
	}
	for i := range n {
		b := <-out[i%workers]
		if _, err := w.Write(b); err != nil {
			return err
		}
		free[i%workers] <- b
	}
	_, err := io.WriteString(w, "]\n")
	return err
}

// appendSessions writes one JSON object per session, each followed by
// ",\n".
func appendSessions(b []byte, list []session.Metadata, short []string) []byte {
	str := func(b []byte, key, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		b = append(b, key...)
		return append(jsonw.AppendString(b, v), ',')
	}
	num := func(b []byte, key string, v int64) []byte {
		b = append(b, key...)
		return append(strconv.AppendInt(b, v, 10), ',')
	}
	for i, m := range list {
		b = append(b, '{')
		b = str(b, `"agent_name":`, m.AgentName, true)
		b = append(jsonw.AppendTime(append(b, `"created_at":`...), m.CreatedAt), ',')
		b = str(b, `"cwd":`, m.Cwd, false)
		b = str(b, `"exit_reason":`, m.ExitReason, true)
		b = str(b, `"first_message":`, m.FirstMessage, true)
		b = str(b, `"id":`, m.ID, false)
		b = num(b, `"input_tokens":`, m.InputTokens)
		b = num(b, `"message_count":`, int64(m.MessageCount))
		b = str(b, `"model":`, m.Model, true)
		b = num(b, `"output_tokens":`, m.OutputTokens)
		b = str(b, `"parent_id":`, m.ParentID, true)
		b = str(b, `"path":`, m.Path, false)
		b = str(b, `"project_hash":`, m.ProjectHash, false)
		b = str(b, `"short_id":`, short[i], false)
		b = str(b, `"title":`, m.Title, true)
		b = append(b, `"total_cost_usd":`...)
		if c := m.CostUSD; math.IsNaN(c) || math.IsInf(c, 0) {
			b = append(b, '0')
		} else {
			b = strconv.AppendFloat(b, c, 'g', -1, 64)
		}
		b = num(append(b, ','), `"total_tokens":`, m.TotalTokens)
		b = num(b, `"turn_count":`, int64(m.TurnCount))
		b = jsonw.AppendTime(append(b, `"updated_at":`...), m.UpdatedAt)
		b = append(b, "},\n"...)
	}
	return b
}
