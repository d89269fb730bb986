package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/importer"
	"github.com/trovekit/trove/session"
	"github.com/trovekit/trove/session/tree"
)

// sessionStore opens the session store of the --store root, with its cas.
func (a *app) sessionStore(ctx context.Context) (*session.Store, error) {
	ts, err := a.troveStore(ctx)
	if err != nil {
		return nil, err
	}
	return ts.Sessions(), nil
}

// agentSessionIDs are the ids of the sessions an import of the agent
// session whose own id is ref makes, one for each agent whose sessions
// trove imports under their own ids (Claude Code, Codex, pi).
func agentSessionIDs(ref string) []string {
	var ids []string
	for _, format := range []string{"claude", "codex", "pi"} {
		ids = append(ids, importer.SessionID(format, ref))
	}
	return ids
}

// agentRef says, after err from looking up the session ref, whether ref
// is the id an agent gave a session trove imported (Claude Code's and
// Codex's are what their users know: claude --resume ID), and the
// session's id in trove to look up instead.
func (a *app) agentRef(ctx context.Context, ref string, err error) (string, bool) {
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	s, serr := a.sessionStore(ctx)
	if serr != nil {
		return "", false
	}
	for _, id := range agentSessionIDs(ref) {
		if _, ferr := s.Find(ctx, id); ferr == nil {
			return id, true
		}
	}
	return "", false
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
	if errors.Is(err, tree.ErrInvalid) {
		return usageErr("%v", err)
	}
	return err
}

// troveStore wires the layers on the --store root once.
func (a *app) troveStore(ctx context.Context) (*troveapi.Store, error) {
	if a.ts != nil {
		return a.ts, nil
	}
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	opts, err := a.catalogOptions()
	if err != nil {
		return nil, err
	}
	ts, err := troveapi.New(ctx, st, append(opts, troveapi.WithLogger(a.log))...)
	if err != nil {
		return nil, err
	}
	a.ts = ts
	return ts, nil
}
