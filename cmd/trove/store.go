package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/session"
)

// sessionStore opens the session store of the --store root, with its cas.
func (a *app) sessionStore(ctx context.Context) (*session.Store, error) {
	ts, err := a.troveStore(ctx)
	if err != nil {
		return nil, err
	}
	return ts.Sessions(), nil
}

// storeErr turns an ambiguous prefix into a usage error that lists the
// candidates.
func storeErr(err error) error {
	var ae *session.AmbiguousError
	if errors.As(err, &ae) {
		var b strings.Builder
		fmt.Fprintf(&b, "%q matches %d sessions:", ae.Prefix, len(ae.Candidates))
		for _, c := range ae.Candidates {
			fmt.Fprintf(&b, "\n  %s  %s  %s", c.ID, c.UpdatedAt.Format(time.DateTime), c.Cwd)
		}
		return usageErr("%s", b.String())
	}
	if errors.Is(err, session.ErrInvalid) {
		return usageErr("%v", err)
	}
	return err
}

func newLsCmd(a *app) *cobra.Command {
	var cwd string
	var all bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List sessions, newest first (default: the current directory's)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && cwd != "" {
				return usageErr("--all and --cwd exclude each other")
			}
			if !all && cwd == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				cwd = wd
			}
			if all {
				cwd = ""
			}
			s, err := a.sessionStore(cmd.Context())
			if err != nil {
				return err
			}
			list := []session.Metadata{}
			for m, err := range s.List(cmd.Context(), cwd) {
				if err != nil {
					return err
				}
				list = append(list, m)
			}
			// Abbreviations must be unique across the store, not the listing.
			all := list
			if cwd != "" {
				all = nil
				for m, err := range s.List(cmd.Context(), "") {
					if err != nil {
						return err
					}
					all = append(all, m)
				}
			}
			ids := make([]string, len(all))
			for i, m := range all {
				ids[i] = m.ID
			}
			short := session.Abbrev(ids)
			if a.jsonOut {
				out := make([]listed, len(list))
				for i, m := range list {
					out[i] = listed{Metadata: m, ShortID: short[m.ID]}
				}
				return a.printJSON(out)
			}
			width := 4
			for _, m := range list {
				width = max(width, len(short[m.ID]))
			}
			for _, m := range list {
				a.printf("%-*s  %s  %4d msgs  %s  %s\n", width, short[m.ID], m.UpdatedAt.Local().Format(time.DateTime), m.MessageCount,
					clean(m.Cwd, 80), clean(firstNonEmpty(m.Title, m.FirstMessage), 100))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "sessions of this working directory")
	cmd.Flags().BoolVar(&all, "all", false, "sessions of every working directory")
	return cmd
}

// listed is one session of `trove ls --json`.
type listed struct {
	session.Metadata
	ShortID string `json:"short_id"`
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func newShowCmd(a *app) *cobra.Command {
	var leaf string
	cmd := &cobra.Command{
		Use:   "show ID-OR-PREFIX",
		Short: "Show a session: its metadata and the conversation at its leaf (or --leaf ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			meta, err := s.Metadata(ctx, args[0])
			if err != nil {
				return storeErr(err)
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			sess, err := session.Open(ctx, ts.Storage(), meta.Path, session.ReadOnly(), session.WithReport(func(session.Problem) {}),
				session.WithBlobStore(ts.Blobs()))
			if err != nil {
				return err
			}
			if err := sess.Err(); err != nil {
				return err
			}
			var path []*session.Entry
			if leaf == "" && sess.Leaf() != nil {
				leaf = sess.Leaf().ID()
			}
			if leaf != "" {
				if path, err = sess.Path(leaf); err != nil {
					return usageErr("--leaf %s: %v", leaf, err)
				}
			}
			if a.jsonOut {
				// The messages are the stored format, passed through as is.
				m, err := normalize(meta)
				if err != nil {
					return err
				}
				msgs := []json.RawMessage{}
				for _, e := range path {
					if e.Type() == session.TypeMessage {
						msgs = append(msgs, e.JSON())
					}
				}
				return a.printRawJSON(map[string]any{"metadata": m, "messages": msgs})
			}
			onPath := 0
			for _, e := range path {
				if e.Type() == session.TypeMessage {
					onPath++
				}
			}
			a.printf("session %s  cwd %s  model %s\n", meta.ID, clean(meta.Cwd, 200), clean(meta.Model, 80))
			if meta.Title != "" {
				a.printf("title: %s\n", clean(meta.Title, 200))
			}
			a.printf("%d messages on this path, %d in the session (%d entries), %d turns, %d tokens, $%.4f",
				onPath, meta.MessageCount, sess.Len(), meta.TurnCount, meta.TotalTokens, meta.CostUSD)
			if meta.ParentID != "" {
				a.printf(", forked from %s", meta.ParentID)
			}
			a.printf("\n\n")
			renderPath(a.stdout, sess, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&leaf, "leaf", "", "show the path to this entry instead of the session's leaf")
	return cmd
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

func newForkCmd(a *app) *cobra.Command {
	var at string
	var last int
	cmd := &cobra.Command{
		Use:   "fork ID-OR-PREFIX",
		Short: "Fork a session (whole, --at MESSAGE, or only the --last N messages) and print the new id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 0 {
				return usageErr("--last must not be negative")
			}
			ctx := cmd.Context()
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			// The fork is durable before its id is printed, and nothing
			// holds it open: no writer lock is taken.
			meta, err := s.ForkSession(ctx, args[0], session.ForkOptions{At: at, Last: last})
			if err != nil {
				return storeErr(err)
			}
			if a.jsonOut {
				return a.printJSON(meta)
			}
			a.printf("%s\n", meta.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "fork up to and including this message id")
	cmd.Flags().IntVar(&last, "last", 0, "keep only the last N messages")
	return cmd
}

func newUnlockCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "unlock ID-OR-PREFIX",
		Short: "Remove the writer lease a dead writer left on a session (stores without locks)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.sessionStore(ctx)
			if err != nil {
				return err
			}
			h, held, err := s.Holder(ctx, args[0])
			if err != nil {
				return storeErr(err)
			}
			switch {
			case !held:
				a.printf("%s: nothing to unlock\n", args[0])
				return nil
			case !h.Lease:
				return fmt.Errorf("%s: a live process holds its writer lock; the lock goes when that process exits (nothing to remove)", args[0])
			}
			who := fmt.Sprintf("host %s, pid %d, since %s", firstNonEmpty(h.Host, "?"), h.PID, h.Since.Local().Format(time.DateTime))
			if !force && leaseLooksAlive(h) {
				return usageErr("%s: its lease (%s) looks alive; --force removes it anyway", args[0], who)
			}
			if err := s.BreakLock(ctx, args[0]); err != nil {
				return storeErr(err)
			}
			a.printf("%s: removed the lease of %s\n", args[0], who)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove a lease whose writer may still be running")
	return cmd
}

// leaseLooksAlive: a lease of this host whose process still runs, or of
// another host (which this one cannot check).
func leaseLooksAlive(h session.LockHolder) bool {
	host, _ := os.Hostname()
	if h.Host == "" || h.PID <= 0 {
		return false // an old lease that records no holder: nothing says it lives
	}
	if h.Host != host {
		return true
	}
	p, err := os.FindProcess(h.PID)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission)
}
