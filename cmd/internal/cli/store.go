package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	troveapi "github.com/trovekit/trove"
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
