package catalog

import (
	"fmt"
	"math/bits"
	"strings"
)

// Length buckets: each entry's token stream ends with a token naming the
// bucket of its length, two buckets per doubling. Hits are ordered by
// length (shorter first), and ordering every candidate of a common word
// joins each with its entry row; asked for bucket by bucket, shortest
// first, a query joins only the candidates of the buckets its hits come
// from. A bucket token starts with U+E000, a private-use character:
// SQLite's unicode61 keeps it in a token, the catalog's tokenizer never
// does, so no query term, word or prefix, can match one.
const bucketMark = "\ue000"

// lenBucket is the bucket of an entry of ntok tokens: monotone in ntok.
func lenBucket(ntok int64) int {
	if ntok < 2 {
		return int(max(ntok, 0))
	}
	k := bits.Len64(uint64(ntok)) // ntok is in [2^(k-1), 2^k)
	return 2*k - 2 + int(ntok>>(k-2)&1)
}

// appendBucket appends the bucket token of an entry of ntok tokens to its
// stream.
func appendBucket(stream []byte, ntok int64) []byte {
	return fmt.Appendf(append(stream, ' '), "%s%03d", bucketMark, lenBucket(ntok))
}

// bucketPasses groups the length buckets (sizes[k]: the entries in
// bucket k) into passes, each expected to hold four times the candidates
// of the one before (the first, first): a query that finds its hits
// among short entries reads few candidates, one that does not asks FTS5
// a few times, not once a bucket. bound is the query's candidates at
// most, n the entries: a bucket of d entries is expected to hold
// bound*d/n of them. Each pass is an FTS5 clause to follow the query's
// expression: "AND (buckets)", the last "NOT (every earlier bucket)", so
// that the passes cover every entry whatever the sizes say.
func bucketPasses(sizes []float64, bound, n, first float64) []string {
	var passes []string
	var cur, earlier strings.Builder
	closed := ""
	acc, target := 0.0, first
	for k, d := range sizes {
		tok := fmt.Sprintf(`"%s%03d"`, bucketMark, k)
		for _, b := range []*strings.Builder{&cur, &earlier} {
			if b.Len() > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(tok)
		}
		if n > 0 {
			acc += bound * d / n
		}
		if acc >= target && k < len(sizes)-1 {
			passes = append(passes, "AND ("+cur.String()+")")
			closed = earlier.String()
			cur.Reset()
			acc, target = 0, target*4
		}
	}
	if len(passes) == 0 {
		return []string{""}
	}
	return append(passes, "NOT ("+closed+")")
}

// bound is at least the number of entries e matches, from the number
// holding each of its terms (all entries, n, for a term not counted).
func (e *expr) bound(docs map[*expr]float64, n float64) float64 {
	switch e.op {
	case opWord, opPrefix, opPhrase:
		if d, ok := docs[e]; ok {
			return d
		}
		return n
	case opAnd:
		return min(e.kids[0].bound(docs, n), e.kids[1].bound(docs, n))
	case opOr:
		return e.kids[0].bound(docs, n) + e.kids[1].bound(docs, n)
	}
	return e.kids[0].bound(docs, n) // NOT
}
