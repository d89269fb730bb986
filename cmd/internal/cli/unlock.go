package cli

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/session"
)

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
			ref := args[0]
			h, held, err := s.Holder(ctx, ref)
			if id, ok := a.agentRef(ctx, ref, err); ok {
				ref = id
				h, held, err = s.Holder(ctx, ref)
			}
			if err != nil {
				return storeErr(err)
			}
			switch {
			case !held:
				if a.jsonOut {
					return a.printJSON(map[string]any{"session": args[0], "removed": false})
				}
				a.printf("%s: nothing to unlock\n", args[0])
				return nil
			case !h.Lease:
				return fmt.Errorf("%s: a live process holds its writer lock; the lock goes when that process exits (nothing to remove)", args[0])
			}
			who := fmt.Sprintf("host %s, pid %d, since %s", cmp.Or(h.Host, "?"), h.PID, h.Since.Local().Format(time.DateTime))
			if !force && leaseLooksAlive(h) {
				return usageErr("%s: its lease (%s) looks alive; --force removes it anyway", args[0], who)
			}
			if err := s.BreakLock(ctx, ref); err != nil {
				return storeErr(err)
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"session": args[0], "removed": true,
					"holder": map[string]any{"host": h.Host, "pid": h.PID, "since": h.Since}})
			}
			a.printf("%s: removed the lease of %s\n", args[0], who)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove a lease whose writer may still be running")
	return cmd
}

// leaseLooksAlive: a lease that has not expired, or (an older lease
// without expiry) of this host whose process still runs, or of another
// host (which this one cannot check).
func leaseLooksAlive(h session.LockHolder) bool {
	if !h.Expires.IsZero() {
		return true // a lease that expires is reported held only until it does
	}
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
