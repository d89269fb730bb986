package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/catalog"
	"github.com/trovekit/trove/session"
)

// searchJSON is one line of `trove search --json`.
type searchJSON struct {
	SessionID string   `json:"session_id"`
	RunID     string   `json:"run_id,omitempty"`
	EntryID   string   `json:"entry_id"`
	Branch    string   `json:"branch,omitempty"`
	Path      string   `json:"path"`
	Cwd       string   `json:"cwd"`
	Title     string   `json:"title,omitempty"`
	Role      string   `json:"role"`
	Tools     []string `json:"tools,omitempty"`
	Time      string   `json:"time,omitempty"`
	Snippet   string   `json:"snippet"`
	Score     float64  `json:"score"`
}

func newSearchCmd(a *app) *cobra.Command {
	var q catalog.Query
	var cwd, since string
	var all bool
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the text of sessions: messages, thinking, tool calls and outputs, summaries, titles",
		Long: `Search every session's text through the store's catalog (brought up to
date first: new messages are found at once), best matches first.

Query syntax: words (all must match), "a phrase", prefix*, AND, OR, NOT
(upper case), parentheses. Run logs are searched too: a run's input,
answers, tool outputs and final answer (a hit names the run). Identifiers match whole and by part: parseRef,
parse_ref and PARSE_REF find each other, and parse finds all three;
cas/ref.go is the phrase "cas ref go". Matches are marked «so» in snippets.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if all && cwd != "" {
				return usageErr("--all and --cwd exclude each other")
			}
			if q.Limit < 0 {
				return usageErr("--limit %d: want 0 (the default, %d) or more", q.Limit, catalog.DefaultLimit)
			}
			q.Text = strings.Join(args, " ")
			q.NoScores = !a.jsonOut // people are shown no scores
			if since != "" {
				t, _, err := parseSince(since, time.Now())
				if err != nil {
					return usageErr("--since %q: %v", since, err)
				}
				q.Since = t
			}
			switch {
			case cwd != "":
				q.Cwd = cwd
			case !all:
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				q.Cwd = wd
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			// One write for all the hits, not one a hit.
			out := bufio.NewWriter(a.stdout)
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			var hits []catalog.Hit
			for h, err := range ts.Search(ctx, q) {
				if errors.Is(err, catalog.ErrBadQuery) {
					return usageErr("%v", err)
				}
				if err != nil {
					out.Flush()
					return err
				}
				if a.jsonOut {
					if err := enc.Encode(hitJSON(h)); err != nil {
						return err
					}
					continue
				}
				hits = append(hits, h)
			}
			if !a.jsonOut {
				a.printHits(out, hits)
			}
			return out.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cwd, "cwd", "", "sessions of this working directory (default: the current one)")
	f.BoolVar(&all, "all", false, "sessions of every working directory")
	f.StringVar(&since, "since", "", "entries since a time (RFC 3339, a date, or a duration ago such as 36h)")
	f.StringVar(&q.Model, "model", "", "sessions that used this model")
	f.StringVar(&q.Role, "role", "", "entries of this role: user, assistant or tool (tool results)")
	f.StringVar(&q.Tool, "tool", "", "entries calling this tool, or its results")
	f.IntVarP(&q.Limit, "limit", "n", 0, fmt.Sprintf("at most this many hits (0: %d)", catalog.DefaultLimit))
	f.BoolVar(&q.Refresh, "refresh", false, "read again session files changed in place by other programs")
	return cmd
}

func hitJSON(h catalog.Hit) searchJSON {
	j := searchJSON{SessionID: h.SessionID, RunID: h.RunID, EntryID: h.EntryID, Branch: h.Branch, Path: h.Path, Cwd: h.Cwd,
		Title: h.Title, Role: h.Role, Tools: h.Tools, Snippet: h.Snippet, Score: h.Score}
	if !h.Time.IsZero() {
		j.Time = h.Time.Format(time.RFC3339Nano)
	}
	return j
}

// printHits prints hits for people to w: the session's shortest unique
// id, the entry, when and who, then the snippet.
func (a *app) printHits(w io.Writer, hits []catalog.Hit) {
	if len(hits) == 0 {
		fmt.Fprintln(a.stderr, "no matches")
		return
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.SessionID
	}
	short := session.Abbrev(ids)
	for i, h := range hits {
		entry := h.EntryID
		switch {
		case h.RunID != "":
			entry = "run " + h.RunID + " " + entry
		case entry == "":
			entry = "(title)"
		}
		when := "-"
		if !h.Time.IsZero() {
			when = h.Time.Local().Format("2006-01-02 15:04")
		}
		who := h.Role
		if len(h.Tools) > 0 {
			who += " " + strings.Join(h.Tools, ",")
		}
		fmt.Fprintf(w, "%s %s  %s  %s  %s\n    %s\n", short[i], entry, when, who, strings.Join(strings.Fields(h.Title), " "), h.Snippet)
	}
}
