package catalog

import (
	"context"
	"database/sql"
	"fmt"
)

// Statements a query runs are prepared once per database handle: a
// warm process's search then parses no SQL (a quarter of its time).

// prepared returns query prepared on db, preparing it the first time.
func (c *Catalog) prepared(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.stmtMu.Lock()
	defer c.stmtMu.Unlock()
	if c.stmtDB != db {
		c.closeStmtsLocked()
		c.stmtDB, c.stmts = db, map[string]*sql.Stmt{}
	}
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// rows runs a prepared query that only reads (reading). Errors are
// SQLite's, for the caller to wrap.
func (c *Catalog) rows(ctx context.Context, db *sql.DB, query string, args ...any) (*sql.Rows, error) {
	st, err := c.prepared(ctx, db, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(reading(ctx), args...)
}

// reading is ctx for a statement that only reads, without its
// cancellation: database/sql watches a cancellable context of each Rows
// on a goroutine of its own, and in a new process each such goroutine
// wakes a second thread (0.2 ms of CPU a search). A read in WAL mode
// does not wait for writers; a loop over many rows checks ctx itself.
func reading(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// eachRow calls scan on every row of rows, then closes them. The query's
// error (err), scan's and the iteration's come back wrapped as catalog's.
func eachRow(rows *sql.Rows, err error, scan func(*sql.Rows) error) error {
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

func (c *Catalog) closeStmtsLocked() {
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts, c.stmtDB = nil, nil
}

// closeStmts closes the prepared statements (before their database).
func (c *Catalog) closeStmts() {
	c.stmtMu.Lock()
	defer c.stmtMu.Unlock()
	c.closeStmtsLocked()
}
