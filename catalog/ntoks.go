package catalog

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
)

// Each indexed entry's length in tokens, which ranking orders by, is
// also kept in table ntoks, packed: row chunk k holds the entries with
// ids k*chunkLen to k*chunkLen+chunkLen-1, two bytes each (the length
// plus one, at most satNtok+1; 0: no entry in the index), a row to a
// page. Ordering a query's candidates then reads one small row per two
// thousand entries instead of each candidate's row of entries (a page
// read each in a new process).
const chunkLen = 2000

// satNtok is the length kept of an entry of satNtok tokens or more: such
// entries are ordered by their rows' lengths.
const satNtok = 1<<16 - 2

// ntokSlots gathers a transaction's changes to ntoks: entry id to its
// slot value (0 clears it), the last change of an id winning.
type ntokSlots map[int64]uint16

func (s ntokSlots) set(id, ntok int64) { s[id] = uint16(min(max(ntok, 0), satNtok)) + 1 }

func (s ntokSlots) clear(id int64) { s[id] = 0 }

// write applies the changes, one read and one write per chunk touched.
func (s ntokSlots) write(ctx context.Context, tx *sql.Tx) error {
	byChunk := map[int64][]int64{}
	for id := range s {
		byChunk[id/chunkLen] = append(byChunk[id/chunkLen], id)
	}
	for k, ids := range byChunk {
		var blob []byte
		err := tx.QueryRowContext(ctx, "SELECT n FROM ntoks WHERE chunk = ?", k).Scan(&blob)
		if err != nil && err != sql.ErrNoRows {
			return fmt.Errorf("catalog: %w", err)
		}
		if len(blob) != 2*chunkLen {
			blob = make([]byte, 2*chunkLen)
		}
		for _, id := range ids {
			binary.LittleEndian.PutUint16(blob[2*(id%chunkLen):], s[id])
		}
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO ntoks(chunk, n) VALUES(?, ?)", k, blob); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	clear(s)
	return nil
}

// ntokOf returns the lengths of entries ids (ascending), satNtok for
// satNtok or more, -1 for an id the table has no length of.
func (c *Catalog) ntokOf(ctx context.Context, db *sql.DB, ids []int64) ([]int64, error) {
	out := make([]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var chunks []int64
	for _, id := range ids {
		if k := id / chunkLen; len(chunks) == 0 || chunks[len(chunks)-1] != k {
			chunks = append(chunks, k)
		}
	}
	// One statement for every chunk (a statement each costs more than
	// the page it reads): a range scan when they are dense, else a
	// look-up each.
	var rows *sql.Rows
	var err error
	if first, last := chunks[0], chunks[len(chunks)-1]; int64(len(chunks))*8 >= last-first+1 {
		rows, err = c.rows(ctx, db, "SELECT chunk, n FROM ntoks WHERE chunk BETWEEN ? AND ?", first, last)
	} else {
		rows, err = c.rows(ctx, db, "SELECT chunk, n FROM ntoks WHERE chunk IN (SELECT value FROM json_each(?))", jsonIDs(chunks))
	}
	blobs := make(map[int64][]byte, len(chunks))
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var k int64
		var b []byte
		if err := rows.Scan(&k, &b); err != nil {
			return err
		}
		if _, ok := slices.BinarySearch(chunks, k); ok {
			blobs[k] = b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		out[i] = -1
		if b := blobs[id/chunkLen]; len(b) == 2*chunkLen {
			out[i] = int64(binary.LittleEndian.Uint16(b[2*(id%chunkLen):])) - 1
		}
	}
	return out, nil
}

// jsonIDs is ids as a JSON array, for json_each.
func jsonIDs(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// bucketSizes returns how many indexed entries each length bucket holds.
func (c *Catalog) bucketSizes(ctx context.Context, db *sql.DB) ([]float64, error) {
	rows, err := c.rows(ctx, db, "SELECT n FROM ntoks")
	var sizes []float64
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return err
		}
		for i := 0; i+2 <= len(b); i += 2 {
			v := binary.LittleEndian.Uint16(b[i:])
			if v == 0 {
				continue
			}
			k := lenBucket(int64(v) - 1)
			if k >= len(sizes) {
				sizes = append(sizes, make([]float64, k+1-len(sizes))...)
			}
			sizes[k]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sizes, nil
}

// byLength orders candidate ids (ascending) as ranking does, shorter
// entries first, ties in entry order, as far as their lengths tell, and
// returns how many come first in that order: the rest (of satNtok tokens
// or more, or without a length) are to be ordered by their rows.
func byLength(ids, ntoks []int64) int {
	// Packed keys sort several times faster than structs through a
	// comparison function: length above, id below.
	keys := make([]uint64, len(ids))
	exact := 0
	for i, id := range ids {
		n := ntoks[i]
		if n < 0 || n >= satNtok {
			n = satNtok
		} else {
			exact++
		}
		keys[i] = uint64(n)<<idBits | uint64(id)&(1<<idBits-1)
	}
	slices.Sort(keys)
	for i, k := range keys {
		ids[i], ntoks[i] = int64(k&(1<<idBits-1)), int64(k>>idBits)
	}
	return exact
}

// idBits is the bits of an entry id in byLength's keys, the length's
// sixteen above them: ids reach 2^47 only after 140 trillion entries.
const idBits = 47
