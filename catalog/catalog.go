package catalog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/trovekit/trove/backend"
	"github.com/trovekit/trove/cas"
)

// schemaVersion is the catalog's PRAGMA user_version. A catalog of any
// other version is emptied and rebuilt: it is derived, never the only copy.
const schemaVersion = 15

// FileName is the catalog's database file in its directory; SQLite keeps
// FileName-wal and FileName-shm beside it.
const FileName = "catalog.db"

// Blobs is what the catalog reads of the blob store: tool outputs kept as
// refs are indexed by their text.
type Blobs interface {
	Get(ctx context.Context, ref cas.Ref) ([]byte, error)
	Stat(ctx context.Context, ref cas.Ref) (cas.Info, error)
}

// Catalog is the search and listing catalog of one store. It is safe for
// concurrent use, and several processes may share one catalog directory.
type Catalog struct {
	path  string
	st    backend.Storage
	blobs Blobs
	cfg   config

	mu sync.Mutex // guards db across a reset
	db *sql.DB

	stmtMu sync.Mutex
	stmtDB *sql.DB              // the handle stmts are prepared on
	stmts  map[string]*sql.Stmt // by query

	gen atomic.Int64 // counts this process's writes to the catalog

	advised atomic.Bool // the file's mapping is read at random (adviseMapping)
}

// Option configures Open.
type Option func(*config)

type config struct {
	log        *slog.Logger
	now        func() time.Time
	maxBlob    int    // bytes of a blob's text indexed
	batchLen   int    // files per write transaction
	afterBatch func() // called after each commit (tests)
	progress   func(done, total int)
	// tokens a refresh writes, at least, to merge the index (optimize)
	optimizeAbove  int
	exitAfterClose bool // WithExitAfterClose
	// a word's document count counted at most (ranking's IDF): counting
	// walks the word's list of entries, 8 ms for one in half of them, and
	// all hits of a query share the IDF, so it changes scores, not order
	maxCount int
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock sets the clock (the age of directory times).
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithProgress has f told how far a refresh that indexes files has got:
// done of total files, 0 once it knows its work, then after each
// transaction it commits, total when it is through. A first build, or
// the rebuild after an upgrade, takes seconds per thousand sessions: the
// CLI shows a bar for those, not for the few files most queries read.
// Refreshes of one Catalog may overlap, so f may be called from several
// goroutines at once.
func WithProgress(f func(done, total int)) Option {
	return func(c *config) { c.progress = f }
}

// WithExitAfterClose(true) says the process exits soon after Close (a
// command line tool). A Close with nothing to fold back, the WAL empty as when
// this process only read, then leaves the SQLite files to the exit, as a
// kill would (the catalog stays consistent: the next process reads it as
// it is), sparing the unmapping of the file and the closing of the WAL:
// a tenth of a command's catalog work. A WAL with frames is folded back
// by a full close, so it stays bounded.
func WithExitAfterClose(exit bool) Option {
	return func(c *config) { c.exitAfterClose = exit }
}

// Open opens (creating it if missing) the catalog in directory dir, of the
// sessions in st, resolving blob refs through blobs (nil: tool outputs
// kept as blobs are not indexed). A catalog that is damaged or of another
// schema is rebuilt; one that is missing is built by the first query.
func Open(ctx context.Context, dir string, st backend.Storage, blobs Blobs, opts ...Option) (*Catalog, error) {
	cfg := config{log: slog.Default(), now: time.Now, maxBlob: 4 << 20, batchLen: 256, optimizeAbove: 1 << 20, maxCount: 2000}
	for _, o := range opts {
		o(&cfg)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c := &Catalog{path: filepath.Join(dir, FileName), st: st, blobs: blobs, cfg: cfg}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Path is the catalog's database file.
func (c *Catalog) Path() string { return c.path }

// Close closes the database.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		return nil
	}
	c.closeStmts()
	if c.cfg.exitAfterClose && c.walEmpty() {
		// Left open: the exit closes its files and drops its locks.
		c.db = nil
		return nil
	}
	err := c.db.Close()
	c.db = nil
	return err
}

// walEmpty reports whether the catalog's WAL holds no frames: a close
// would have nothing to fold back into the file.
func (c *Catalog) walEmpty() bool {
	fi, err := os.Stat(c.path + "-wal")
	return err == nil && fi.Size() == 0
}

// dsn opens the catalog, and, with mapped, reads it through a mapping of
// its file (up to 1 GiB) rather than by a read and a copy into a fresh
// page cache a page: a new process's query reads a few hundred pages. A
// build reads the whole file: every page it touched through the mapping
// would count in its RSS (247 MiB, against 141). WAL mode is kept in the
// file: migrate sets it once, not every connection (each PRAGMA is a
// statement a new process parses and runs).
func (c *Catalog) dsn(mapped bool) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(60000)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	if mapped {
		q.Add("_pragma", "mmap_size(1073741824)")
	}
	q.Set("_txlock", "immediate")
	return "file:" + c.path + "?" + q.Encode()
}

// sqlOpen opens a handle on the database, reading it through a mapping
// of its file when mapped (dsn).
func (c *Catalog) sqlOpen(mapped bool) (*sql.DB, error) {
	d, err := catalogDriver()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return sql.OpenDB(connector{d: d, dsn: c.dsn(mapped)}), nil
}

// catalogDriver is the SQLite driver of the catalog's connections:
// modernc's, with the catalog's SQL function (pairsFunc) registered on
// it alone, not on the driver every user of the package shares. Made
// once: what a driver registers lives as long as the process.
var catalogDriver = sync.OnceValues(func() (*sqlite.Driver, error) {
	d := &sqlite.Driver{}
	err := d.RegisterFunction(pairsFuncName, &sqlite.FunctionImpl{NArgs: 2, Deterministic: true, Scalar: pairsFunc, VolatileArgs: true})
	return d, err
})

// connector opens connections to dsn through d.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.d.Open(c.dsn)
}

func (c connector) Driver() driver.Driver { return c.d }

// open opens the database and brings it to schemaVersion, starting afresh
// when it is damaged.
func (c *Catalog) open(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.openLocked(ctx)
	if err != nil && damaged(err) {
		c.cfg.log.Warn("trove/catalog: rebuilding a damaged catalog", "path", c.path, "err", err)
		c.removeLocked()
		err = c.openLocked(ctx)
	}
	return err
}

func (c *Catalog) openLocked(ctx context.Context) error {
	// A new file is private: it holds the text of conversations.
	if f, err := os.OpenFile(c.path, os.O_CREATE|os.O_RDONLY, 0o600); err == nil {
		f.Close()
	}
	db, err := c.sqlOpen(true)
	if err != nil {
		return err
	}
	if err := c.migrate(ctx, db); err != nil {
		db.Close()
		return err
	}
	c.db = db
	return nil
}

// migrate checks the file, puts it in WAL mode (readers never wait for
// the writer) and creates the schema, emptying a catalog of another
// version.
func (c *Catalog) migrate(ctx context.Context, db *sql.DB) error {
	// PRAGMA user_version alone: a pragma read as a table (pragma_...)
	// prepares its PRAGMA again inside, a parse each in a new process;
	// the rest comes from the file's header.
	var version int64
	if err := db.QueryRowContext(reading(ctx), "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	h, err := readHeader(c.path)
	if err != nil {
		return err
	}
	if !h.wal {
		// A new file (or one another program took out of WAL mode): the
		// mode is kept in the file, for every later connection.
		if err := setWAL(ctx, db, h.fileSize == 0); err != nil {
			return err
		}
	}
	// A truncated file: its header promises pages it lacks (the WAL may
	// hold them, so only without one).
	if h.size > 0 && h.fileSize < h.size {
		if _, werr := os.Stat(c.path + "-wal"); errors.Is(werr, fs.ErrNotExist) {
			return fmt.Errorf("catalog: %s is %d bytes, its header says %d: %w", c.path, h.fileSize, h.size, errDamaged)
		}
	}
	if version == schemaVersion {
		return nil
	}
	// Dropping the old tables reads their every page: not through the
	// mapping (dsn).
	mdb, err := c.sqlOpen(false)
	if err != nil {
		return err
	}
	defer mdb.Close()
	tx, err := mdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer tx.Rollback()
	// Another process may have migrated it meanwhile.
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version == schemaVersion {
		return err
	}
	if version != 0 {
		c.cfg.log.Info("trove/catalog: rebuilding a catalog of another schema", "path", c.path, "version", version)
	}
	rows, err := tx.QueryContext(ctx, "SELECT type, name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'fts_%'")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	var drops []string
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return fmt.Errorf("catalog: %w", err)
		}
		drops = append(drops, fmt.Sprintf("DROP %s IF EXISTS %q", typ, name))
	}
	rows.Close()
	for _, s := range append(drops, schema...) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("catalog: %s: %w", s, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return tx.Commit()
}

// pageSize is the page size of a new catalog file. A query seeks a
// b-tree for each candidate's rows, and in a new process each page it
// touches first through the mapping is a page fault: with 4 KiB pages
// the entries table's interior pages are 47 scattered among its 17,000
// leaves, a fault for most seeks; with 16 KiB pages they are four. On
// the 10,000-session store, 50 two-word phrases: -0.25 to -0.47 ms
// wall, -0.34 to -0.36 ms CPU a query; 8 KiB took less off, 32 KiB a
// little more, for twice the bytes each write of a page costs.
const pageSize = 16384

// setWAL puts the database in WAL mode, a new (empty) file with pages of
// pageSize: the size is fixed when the first page is written, and WAL
// mode writes it.
func setWAL(ctx context.Context, db *sql.DB, empty bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer conn.Close()
	if empty {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size=%d", pageSize)); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// The schema (docs/catalog.md). fts is contentless: the text lives in the
// session files, read back by offset for snippets; deleting a row takes
// contentless_delete.
var schema = []string{
	`CREATE TABLE files(
		id INTEGER PRIMARY KEY,
		path TEXT NOT NULL UNIQUE,
		session TEXT NOT NULL DEFAULT '',
		cwd TEXT NOT NULL DEFAULT '',
		title TEXT NOT NULL DEFAULT '',
		parent TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL DEFAULT 0,
		updated INTEGER NOT NULL DEFAULT 0,
		size INTEGER NOT NULL DEFAULT 0,
		mtime INTEGER NOT NULL DEFAULT 0,
		tail BLOB,
		skip INTEGER NOT NULL DEFAULT 0,
		nent INTEGER NOT NULL DEFAULT 0,
		ntok INTEGER NOT NULL DEFAULT 0,
		run TEXT NOT NULL DEFAULT '',
		done INTEGER NOT NULL DEFAULT 0,
		last TEXT NOT NULL DEFAULT '',
		forked INTEGER NOT NULL DEFAULT 0
	)`,
	`CREATE INDEX files_session ON files(session)`,
	`CREATE INDEX files_open_runs ON files(path) WHERE run != '' AND done = 0`,
	// The sums ranking needs, kept by triggers: one row read, not a scan
	// of every file's.
	`CREATE TABLE totals(id INTEGER PRIMARY KEY CHECK (id = 0), nent INTEGER NOT NULL, ntok INTEGER NOT NULL)`,
	`INSERT INTO totals VALUES(0, 0, 0)`,
	`CREATE TRIGGER files_ins AFTER INSERT ON files BEGIN
		UPDATE totals SET nent = nent + new.nent, ntok = ntok + new.ntok; END`,
	`CREATE TRIGGER files_del AFTER DELETE ON files BEGIN
		UPDATE totals SET nent = nent - old.nent, ntok = ntok - old.ntok; END`,
	`CREATE TRIGGER files_upd AFTER UPDATE OF nent, ntok ON files BEGIN
		UPDATE totals SET nent = nent + new.nent - old.nent, ntok = ntok + new.ntok - old.ntok; END`,
	// An entry's id is its rank key (rankKey), fts's rowid: a candidate's
	// row is one b-tree descent away, not an index's and then the table's.
	`CREATE TABLE entries(
		id INTEGER PRIMARY KEY,
		file INTEGER NOT NULL,
		eid TEXT NOT NULL,
		parent TEXT NOT NULL,
		ts INTEGER NOT NULL,
		role TEXT NOT NULL,
		tools TEXT NOT NULL,
		model TEXT NOT NULL,
		off INTEGER NOT NULL,
		len INTEGER NOT NULL,
		ntok INTEGER NOT NULL,
		pairs BLOB,
		messages INTEGER NOT NULL,
		tool_calls INTEGER NOT NULL,
		tool_errors INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		cache_read INTEGER NOT NULL,
		cache_write INTEGER NOT NULL,
		cost REAL NOT NULL
	)`,
	`CREATE TABLE dirs(name TEXT PRIMARY KEY, mtime INTEGER NOT NULL, open TEXT NOT NULL)`,
	`CREATE INDEX entries_file ON entries(file)`,
	`CREATE TABLE refs(file INTEGER NOT NULL, ref TEXT NOT NULL)`,
	`CREATE INDEX refs_file ON refs(file)`,
	`CREATE INDEX entries_model ON entries(model) WHERE model != ''`,
	`CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 0')`,
}

var errDamaged = errors.New("damaged catalog")

// fileHeader is what the catalog checks of the database file's header
// (https://sqlite.org/fileformat.html#the_database_header).
type fileHeader struct {
	wal      bool  // the file is in WAL mode
	size     int64 // the bytes its pages take, if the header says (else 0)
	fileSize int64
}

// readHeader reads the header of the database file at path. A file too
// short or not SQLite's has a zero header: SQLite itself says why.
func readHeader(path string) (fileHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileHeader{}, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileHeader{}, fmt.Errorf("catalog: %w", err)
	}
	h := fileHeader{fileSize: fi.Size()}
	var b [100]byte
	if n, _ := f.ReadAt(b[:], 0); n < len(b) || string(b[:16]) != "SQLite format 3\x00" {
		return h, nil
	}
	h.wal = b[18] == 2 && b[19] == 2
	pageSize := int64(binary.BigEndian.Uint16(b[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	// The page count is valid when the change counter matches the
	// version it was written at.
	if counter := binary.BigEndian.Uint32(b[24:]); counter != 0 && counter == binary.BigEndian.Uint32(b[92:]) {
		h.size = int64(binary.BigEndian.Uint32(b[28:])) * pageSize
	}
	return h, nil
}

// damaged reports whether err says the database file is not a sound
// SQLite database.
func damaged(err error) bool {
	if errors.Is(err, errDamaged) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
			return true
		}
	}
	return false
}

// removeLocked closes and deletes the database and its WAL files.
func (c *Catalog) removeLocked() {
	if c.db != nil {
		c.closeStmts()
		c.db.Close()
		c.db = nil
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(c.path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.cfg.log.Warn("trove/catalog: could not remove", "path", c.path+suffix, "err", err)
		}
	}
}

// Rebuild empties the catalog and indexes every session again. A sound
// catalog is emptied in place, so other processes using it carry on; a
// damaged one is deleted and made anew.
func (c *Catalog) Rebuild(ctx context.Context) error {
	if _, err := c.handle(); err != nil {
		return err
	}
	err := c.empty(ctx)
	if damaged(err) {
		c.mu.Lock()
		c.removeLocked()
		err = c.openLocked(ctx)
		c.mu.Unlock()
	}
	if err != nil {
		return err
	}
	return c.Refresh(ctx, true)
}

func (c *Catalog) empty(ctx context.Context) error {
	// It reads every page: not through the mapping (dsn).
	db, err := c.sqlOpen(false)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer tx.Rollback()
	for _, s := range []string{"DELETE FROM files", "DELETE FROM entries", "DELETE FROM dirs", "DELETE FROM refs", "UPDATE totals SET nent = 0, ntok = 0", "INSERT INTO fts(fts) VALUES('delete-all')"} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	return tx.Commit()
}

// adviseMapping marks the catalog's mapping as read at random
// (adviseRandom) once SQLite made it: after the refresh's first
// statements, before the pages a query reads.
func (c *Catalog) adviseMapping() {
	if !c.advised.Load() && adviseRandom(c.path) {
		c.advised.Store(true)
	}
}

// handle returns the open database, reopening a catalog found damaged.
func (c *Catalog) handle() (*sql.DB, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		return nil, fmt.Errorf("catalog: %w", backend.ErrClosed)
	}
	return c.db, nil
}

// recover rebuilds after err when err says the file is damaged, and
// reports whether it did.
func (c *Catalog) recover(ctx context.Context, err error) bool {
	if !damaged(err) {
		return false
	}
	c.cfg.log.Warn("trove/catalog: rebuilding a damaged catalog", "path", c.path, "err", err)
	return c.Rebuild(ctx) == nil
}
