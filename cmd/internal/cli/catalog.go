package cli

import (
	"sync"
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
	copts := []catalog.Option{catalog.WithProgress(a.indexBar())}
	if a.exits {
		// A process that only read leaves SQLite's teardown to its exit.
		copts = append(copts, catalog.WithExitAfterClose(true))
	}
	return append(opts, troveapi.WithCatalogOptions(copts...)), nil
}

// defaultIndexBarFiles is how many files a catalog refresh indexes, at
// least, for a bar to show: a first build, or the rebuild after an
// upgrade, takes seconds a thousand sessions, and a search waiting for it
// should say why; the few files most searches read show none.
const defaultIndexBarFiles = 500

// indexBar shows the catalog's progress (catalog.WithProgress) as a bar
// on a terminal, for refreshes of many files.
func (a *app) indexBar() func(done, total int) {
	var mu sync.Mutex // refreshes may overlap (serve)
	var b *bar
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		least := a.indexBarFiles
		if least <= 0 {
			least = defaultIndexBarFiles
		}
		if b == nil && done == 0 && total >= least {
			b = a.progress(total, "indexing sessions for search")
		}
		b.set(done, total)
		if done >= total {
			b.done()
			b = nil
		}
	}
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
