package cli

import (
	"time"

	"github.com/spf13/cobra"

	troveapi "github.com/trovekit/trove"
	"github.com/trovekit/trove/catalog"
)

// catalogOptions places the catalog of a bucket store in the user's
// cache directory, keyed by its URL (a local store's is beside it).
func (a *app) catalogOptions() ([]troveapi.Option, error) {
	dir, err := troveapi.CatalogDir(a.storeURL)
	if err != nil {
		return nil, err
	}
	var opts []troveapi.Option
	if dir != "" {
		opts = append(opts, troveapi.WithCatalogDir(dir))
	}
	if a.exits {
		// A process that only read leaves SQLite's teardown to its exit.
		opts = append(opts, troveapi.WithCatalogOptions(catalog.WithExitAfterClose(true)))
	}
	return opts, nil
}

func newCatalogCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "The search catalog: where it is, rebuild it",
		Long: `The catalog is an SQLite database derived from the store (beside a local
store, in the user's cache directory for a bucket): search and stats read it.
It is kept current by every query and rebuilt when missing or damaged;
deleting it loses nothing.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rebuild",
		Short: "Empty the catalog and index every session again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			c, err := ts.Catalog(ctx)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := c.Rebuild(ctx); err != nil {
				return err
			}
			took := time.Since(start)
			if a.jsonOut {
				return a.printJSON(map[string]any{"path": c.Path(), "seconds": took.Seconds()})
			}
			a.printf("rebuilt %s in %s\n", c.Path(), took.Round(time.Millisecond))
			return nil
		},
	}, &cobra.Command{
		Use:   "path",
		Short: "Print the catalog's database file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := a.troveStore(cmd.Context())
			if err != nil {
				return err
			}
			c, err := ts.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			a.printf("%s\n", c.Path())
			return nil
		},
	})
	return cmd
}
