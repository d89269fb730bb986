package catalog

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// write writes a batch of parsed files in one transaction. An item whose
// file row is no longer the state it was planned from (another process
// got there first) is left out: the next refresh sees the file anew.
func (c *Catalog) write(ctx context.Context, db *sql.DB, batch []*parsed) error {
	if len(batch) == 0 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer tx.Rollback()
	w, err := newWriter(ctx, tx)
	if err != nil {
		return err
	}
	defer w.close()
	for _, p := range batch {
		if err := w.file(ctx, p); err != nil {
			return err
		}
	}
	if err := w.flushFTS(ctx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	c.gen.Add(1)
	if c.cfg.afterBatch != nil {
		c.cfg.afterBatch()
	}
	return nil
}

// writer holds a transaction's prepared statements.
type writer struct {
	tx                                  *sql.Tx
	state, insFile, updFile, insEntry   *sql.Stmt
	insFTS, delFTS, delEntries, delFile *sql.Stmt
	insRef, delRefs, lastKey            *sql.Stmt
	next                                map[int64]int64 // length to the next free rank key
	fts                                 []ftsRow        // to insert, at the end
}

// ftsRow is a row of fts to insert.
type ftsRow struct {
	rk     int64
	stream []byte
}

func newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{tx: tx, next: map[int64]int64{}}
	for _, s := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&w.state, "SELECT id, size, tail, last, forked FROM files WHERE path = ?"},
		{&w.insFile, "INSERT INTO files(path) VALUES(?)"},
		{&w.updFile, `UPDATE files SET session = ?, cwd = ?, title = ?, parent = ?, created = ?,
			updated = max(updated, ?), size = ?, mtime = ?, tail = ?, skip = ?, nent = ?, ntok = ?, run = ?, done = ?,
			last = ?, forked = ? WHERE id = ?`},
		{&w.insEntry, `INSERT INTO entries(id, file, eid, parent, ts, role, tools, model, off, len, ntok, pairs,
			messages, tool_calls, tool_errors, input, output, cache_read, cache_write, cost)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`},
		{&w.insFTS, "INSERT INTO fts(rowid, body) VALUES(?, ?)"},
		{&w.delFTS, "DELETE FROM fts WHERE rowid IN (SELECT id FROM entries WHERE file = ?)"},
		{&w.delEntries, "DELETE FROM entries WHERE file = ?"},
		{&w.delFile, "DELETE FROM files WHERE id = ?"},
		{&w.insRef, "INSERT INTO refs(file, ref) VALUES(?, ?)"},
		{&w.delRefs, "DELETE FROM refs WHERE file = ?"},
		{&w.lastKey, "SELECT max(id) FROM entries WHERE id BETWEEN ? AND ?"},
	} {
		st, err := tx.PrepareContext(ctx, s.sql)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("catalog: %w", err)
		}
		*s.dst = st
	}
	return w, nil
}

func (w *writer) close() {
	for _, s := range []*sql.Stmt{w.state, w.insFile, w.updFile, w.insEntry, w.insFTS, w.delFTS, w.delEntries, w.delFile, w.insRef, w.delRefs, w.lastKey} {
		if s != nil {
			s.Close()
		}
	}
}

// file writes one parsed file.
func (w *writer) file(ctx context.Context, p *parsed) error {
	var id, size int64
	var tail []byte
	var ch chain
	err := w.state.QueryRowContext(ctx, p.path).Scan(&id, &size, &tail, &ch.last, &ch.forked)
	have := err == nil
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("catalog: %w", err)
	}
	if have != p.have || have && (size != p.base.size || !bytes.Equal(tail, p.base.tail)) {
		return nil // changed since planned
	}
	if have && (p.kind == workDelete || p.kind == workReindex) {
		for _, s := range []*sql.Stmt{w.delFTS, w.delEntries, w.delRefs} {
			if _, err := s.ExecContext(ctx, id); err != nil {
				return fmt.Errorf("catalog: %w", err)
			}
		}
	}
	if p.kind == workDelete {
		if have {
			if _, err := w.delFile.ExecContext(ctx, id); err != nil {
				return fmt.Errorf("catalog: %w", err)
			}
		}
		return nil
	}
	if !have {
		res, err := w.insFile.ExecContext(ctx, p.path)
		if err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	for _, ref := range p.refs {
		if _, err := w.insRef.ExecContext(ctx, id, ref); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	if p.kind != workGrow && p.kind != workTouch {
		ch = chain{} // read whole: its old rows are gone
	}
	updated, ntok := int64(0), int64(0)
	for i := range p.docs {
		d := &p.docs[i]
		ch.add(d.id, d.parent)
		updated = max(updated, d.ts)
		u := d.usage
		n := int64(bytes.Count(d.stream, []byte(" ")))
		ntok += n
		rk, err := w.rankKey(ctx, n)
		if err != nil {
			return err
		}
		_, err = w.insEntry.ExecContext(ctx, rk, id, d.id, d.parent, d.ts, d.role, strings.Join(d.tools, " "), d.model, d.off, d.n, n, d.pairs,
			u.messages, u.toolCalls, u.toolErrors, u.input, u.output, u.cacheRead, u.cacheWrite, u.cost)
		if err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		if len(d.stream) == 0 {
			continue
		}
		w.fts = append(w.fts, ftsRow{rk, d.stream})
	}
	h := p.hdr
	if p.hdrLen == 0 && (p.kind == workGrow || p.kind == workTouch) {
		// The header was read before: keep it.
		_, err = w.tx.ExecContext(ctx, `UPDATE files SET updated = max(updated, ?), size = ?, mtime = ?, tail = ?, skip = ?,
			nent = nent + ?, ntok = ntok + ?, done = max(done, ?), last = ?, forked = ? WHERE id = ?`,
			updated, p.size, unixNano(p.fi), p.tail, p.skip, len(p.docs), ntok, p.done, ch.last, ch.forked, id)
	} else {
		_, err = w.updFile.ExecContext(ctx, h.id, h.cwd, h.title, h.parent, h.ts, max(updated, h.ts), p.size, unixNano(p.fi), p.tail, p.skip,
			len(p.docs), ntok, p.run, p.done, ch.last, ch.forked, id)
	}
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// chain follows a file's entries in file order: the last one's id, and
// whether any is not the child of the one before. In a file that is one
// chain, every entry's branch ends at its last entry: a hit's branch is
// read from the file's row, not from its tree.
type chain struct {
	last   string
	forked bool
}

func (c *chain) add(id, parent string) {
	if id == "" {
		return // a header's title, a run's record
	}
	if c.last != "" && parent != c.last {
		c.forked = true
	}
	c.last = id
}

// An entry's rank key, its rowid in fts, is its length in tokens above
// seqBits bits of a number counting the entries of that length: FTS5
// gives the rowids a query matches in ascending order, which is the
// ranking's, shorter entries first, ties in the order they were written.
// A query's best hits are then its first candidates: no length is looked
// up, and a common word's candidates are read only as far as the hits
// need. Counting by length, not overall, keeps the steps between a
// token's rowids small (FTS5 stores them as varints).
const (
	seqBits = 24
	maxNtok = 1<<(62-seqBits) - 1 // longer entries rank as this long
)

// errKeys says a length has no rank key left (2^seqBits entries of it).
var errKeys = errors.New("catalog: no rank key left for an entry of this length")

// rankKey returns the next rank key of an entry of ntok tokens.
func (w *writer) rankKey(ctx context.Context, ntok int64) (int64, error) {
	ntok = min(max(ntok, 0), maxNtok)
	next, ok := w.next[ntok]
	if !ok {
		var last sql.NullInt64
		if err := w.lastKey.QueryRowContext(ctx, ntok<<seqBits, (ntok+1)<<seqBits-1).Scan(&last); err != nil {
			return 0, fmt.Errorf("catalog: %w", err)
		}
		next = ntok << seqBits
		if last.Valid {
			next = last.Int64 + 1
		}
	}
	if next >= (ntok+1)<<seqBits {
		return 0, fmt.Errorf("%w (%d tokens)", errKeys, ntok)
	}
	w.next[ntok] = next + 1
	return next, nil
}

// flushFTS inserts the transaction's rows of fts in rowid order: FTS5
// flushes its pending terms to a new segment whenever a rowid is not
// above the last one.
func (w *writer) flushFTS(ctx context.Context) error {
	slices.SortFunc(w.fts, func(a, b ftsRow) int { return cmp.Compare(a.rk, b.rk) })
	for _, r := range w.fts {
		if _, err := w.insFTS.ExecContext(ctx, r.rk, r.stream); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	w.fts = nil
	return nil
}
