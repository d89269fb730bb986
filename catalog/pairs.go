package catalog

import (
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"slices"

	"modernc.org/sqlite"
)

// An entry's pair filter is a Bloom filter of the adjacent pairs of its
// token stream, kept in its row (entries.pairs). The index keeps no
// positions, so a phrase's candidates are the entries holding all its
// words, and each is read back from its file to check their order: most
// of a phrase query's time. A candidate lacking one of the phrase's
// adjacent pairs cannot match: the query's statement tests its filter
// (pairCond) and passes over it before joining its file's row, and
// nothing of it is read. The filter only ever passes over entries that
// cannot match: an entry it lets through is checked against its text as
// before.
const (
	pairBits      = 6    // bits a distinct pair
	pairProbes    = 4    // bits set a pair: about 5.6% of absent pairs pass
	maxPairFilter = 1536 // bytes (2,048 pairs); a longer entry has none, and is always read
)

// pairHash hashes two adjacent tokens (FNV-1a, 64 bits): a filter is
// kept on disk, so its hash must not change between processes.
func pairHash(a, b []byte) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, c := range a {
		h = (h ^ uint64(c)) * prime
	}
	h = (h ^ ' ') * prime
	for _, c := range b {
		h = (h ^ uint64(c)) * prime
	}
	return h
}

// pairFilter makes the filter of a token stream (each token after a
// space). An entry of fewer than two tokens has one byte of zeros:
// no pair passes. It reuses hashes, returned for the next call; nil
// means no filter (too many pairs).
func pairFilter(stream []byte, hashes []uint64) (filter []byte, reuse []uint64) {
	hashes = hashes[:0]
	var prev []byte
	for i := 0; i < len(stream); {
		start, end := nextToken(stream, i)
		tok := stream[start:end]
		if prev != nil {
			hashes = append(hashes, pairHash(prev, tok))
		}
		prev, i = tok, end
	}
	distinct := countDistinct(hashes)
	size := max(1, (distinct*pairBits+7)/8)
	if size > maxPairFilter {
		return nil, hashes
	}
	filter = make([]byte, size)
	for _, h := range hashes {
		setPair(filter, h)
	}
	return filter, hashes
}

// countDistinct counts the distinct values of hs, sorting them.
func countDistinct(hs []uint64) int {
	slices.Sort(hs)
	n := 0
	for i, h := range hs {
		if i == 0 || h != hs[i-1] {
			n++
		}
	}
	return n
}

// pairProbe is the i-th of a pair's bits before the modulo by the
// filter's size: its hash's low half plus i times its high half (double
// hashing).
func pairProbe(h uint64, i int) uint64 {
	return h&0xffffffff + uint64(i)*(h>>32)
}

func setPair(f []byte, h uint64) {
	m := uint64(len(f)) * 8
	for i := range pairProbes {
		b := pairProbe(h, i) % m
		f[b/8] |= 1 << (b % 8)
	}
}

// hasPair reports whether f may hold the pair of hash h: false only if
// the entry's stream has no such pair. A nil filter may hold anything.
func hasPair(f []byte, h uint64) bool {
	if f == nil {
		return true
	}
	m := uint64(len(f)) * 8
	for i := range pairProbes {
		if b := pairProbe(h, i) % m; f[b/8]&(1<<(b%8)) == 0 {
			return false
		}
	}
	return true
}

// phrasePairs are the hashes of the adjacent pairs each phrase that e
// needs must have: the phrases e is an AND of (a phrase whose last token
// is a prefix, its pairs but the last). Under OR and NOT nothing is
// needed for certain.
func phrasePairs(e *expr, out [][]uint64) [][]uint64 {
	switch e.op {
	case opAnd:
		return phrasePairs(e.kids[1], phrasePairs(e.kids[0], out))
	case opPhrase:
		n := len(e.toks) - 1
		if e.prefix {
			n--
		}
		var hs []uint64
		for i := range n {
			hs = append(hs, pairHash([]byte(e.toks[i]), []byte(e.toks[i+1])))
		}
		if len(hs) > 0 {
			out = append(out, hs)
		}
	}
	return out
}

// pairCond is an SQL condition on the entries row e: true when its
// filter may hold every pair of needed (hasPair), or it has none. It
// calls the catalog's own SQL function (pairsFunc) with the pairs'
// hashes as one argument, ?at: a test written in SQL (each probe a byte
// found by instr in a blob of the 256 bytes, shifted and masked) took
// 0.2 ms to prepare and 0.1 ms to first run in a new process.
func pairCond(needed [][]uint64, at int) (string, []any) {
	var hs []byte
	for _, n := range needed {
		for _, h := range n {
			hs = binary.LittleEndian.AppendUint64(hs, h)
		}
	}
	if len(hs) == 0 {
		return "1", nil
	}
	return fmt.Sprintf("%s(e.pairs, ?%d)", pairsFuncName, at), []any{hs}
}

// pairsFuncName is the SQL function pairsFunc is registered as on the
// catalog's connections (catalogDriver).
const pairsFuncName = "trove_pairs"

// pairsFunc is trove_pairs(filter, hashes): 1 when the filter (a blob,
// or NULL: none) may hold every pair whose hash is in hashes (a blob of
// little-endian uint64s), else 0.
func pairsFunc(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	hs, ok := args[1].([]byte)
	if !ok || len(hs)%8 != 0 {
		return nil, fmt.Errorf("%s: hashes must be a blob of uint64s", pairsFuncName)
	}
	f, ok := args[0].([]byte)
	if !ok && args[0] != nil {
		return nil, fmt.Errorf("%s: the filter must be a blob", pairsFuncName)
	}
	if len(f) == 0 {
		return int64(1), nil // no filter (NULL; none is empty): may hold anything
	}
	for ; len(hs) > 0; hs = hs[8:] {
		if !hasPair(f, binary.LittleEndian.Uint64(hs)) {
			return int64(0), nil
		}
	}
	return int64(1), nil
}
