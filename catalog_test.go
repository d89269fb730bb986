package trove_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trovekit/trove"
	"github.com/trovekit/trove/catalog"
)

// openCatalogFiles lists the files of the process's open descriptors
// whose path holds part.
func openCatalogFiles(t *testing.T, part string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, part) {
			out = append(out, target)
		}
	}
	return out
}

// A temporary catalog is removed at Close: it is closed first, even for
// a process that exits after Close.
func TestTemporaryCatalogClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("lists open files through /proc/self/fd, Linux's")
	}
	ctx := context.Background()
	t.Setenv("TMPDIR", t.TempDir())
	s, err := trove.Open(ctx, "mem://", trove.WithCatalogOptions(catalog.WithExitAfterClose(true)))
	if err != nil {
		t.Fatal(err)
	}
	plainStore(t, s, 0)
	for _, err := range s.Search(ctx, catalog.Query{Text: "quokka"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(c.Path())
	// Its WAL emptied, as a process that only read finds it.
	db, err := sql.Open("sqlite", c.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fi, err := os.Stat(c.Path() + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the WAL after a checkpoint: %v", err)
	}
	if open := openCatalogFiles(t, dir); len(open) == 0 {
		t.Fatalf("no open file in the catalog's directory %s", dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if open := openCatalogFiles(t, dir); len(open) > 0 {
		t.Errorf("after Close, open: %q", open)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary catalog %s: %v, want it removed", dir, err)
	}
}
