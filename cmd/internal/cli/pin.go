package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func newPinCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "pin [ID...]",
		Short: "Keep sessions, runs or checkpoints whatever the retention policy (no ID: list pins)",
		Long: "Pin what each ID names: a session or run id (or unique prefix), a checkpoint as prune\n" +
			"prints it (<workspace key>/<name>) or by a name only one workspace has, or kind/id.\n" +
			"Without an ID, list the pins.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				pins, err := ts.Pins(ctx)
				if err != nil {
					return err
				}
				for _, key := range sortedKeys(pins) {
					kind, id, _ := cutKey(key)
					if a.jsonOut {
						if err := a.printLine(itemJSON{kind, id}); err != nil {
							return err
						}
					} else {
						a.printf("%s %s\n", kind, id)
					}
				}
				return nil
			}
			for _, ref := range args {
				kind, id, err := ts.Lookup(ctx, ref)
				if err != nil {
					return storeErr(err)
				}
				if err := ts.Pin(ctx, kind, id); err != nil {
					return err
				}
				a.printf("pinned %s %s\n", kind, id)
			}
			return nil
		},
	}
}

func newUnpinCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "unpin ID...",
		Short: "Let the retention policy judge pinned items again",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			pins, err := ts.Pins(ctx)
			if err != nil {
				return err
			}
			for _, ref := range args {
				kind, id, err := ts.Lookup(ctx, ref)
				if err != nil {
					// A pin can outlive what it named (deleted by hand).
					if pins[ref] {
						kind, id, _ = cutKey(ref)
					} else {
						return storeErr(err)
					}
				}
				if err := ts.Unpin(ctx, kind, id); err != nil {
					return err
				}
				a.printf("unpinned %s %s\n", kind, id)
			}
			return nil
		},
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cutKey splits a pin's "kind/id" key.
func cutKey(key string) (kind, id string, ok bool) { return strings.Cut(key, "/") }
