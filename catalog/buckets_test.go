package catalog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLenBucketMonotone(t *testing.T) {
	prev := -1
	for n := int64(0); n < 1<<16; n++ {
		b := lenBucket(n)
		if b < prev || b > prev+1 {
			t.Fatalf("lenBucket(%d) = %d after %d", n, b, prev)
		}
		prev = b
	}
	if b := lenBucket(1<<62 + 5); b < prev || b > 125 {
		t.Errorf("lenBucket(2^62+5) = %d", b)
	}
}

// TestBucketedQueries: asked bucket by bucket, a query gives the hits it
// gives in one pass, in the same order with the same scores, and the
// same entries a brute-force scan finds; no term matches a bucket token.
func TestBucketedQueries(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 34))
	st := newMem()
	sessions := randomStore(t, st, r, 60)
	c := openCatalog(t, t.TempDir(), st)
	run := func(q Query, bucketAbove int) []string {
		t.Helper()
		c.cfg.bucketAbove = bucketAbove
		var out []string
		for h, err := range c.Search(ctx, q) {
			if err != nil {
				t.Fatalf("search %q: %v", q.Text, err)
			}
			out = append(out, fmt.Sprintf("%s/%s %.6f", h.SessionID, h.EntryID, h.Score))
		}
		return out
	}
	queries := []string{"a*", "z*", "x*", "e*", "0*"}
	for range 80 {
		queries = append(queries, randomQuery(r))
	}
	for i, text := range queries {
		q := Query{Text: text, Limit: 1 + i%12}
		one, bucketed := run(q, 1<<30), run(q, -1)
		if !slices.Equal(one, bucketed) {
			t.Fatalf("query %q limit %d:\n one pass %q\n bucketed %q", text, q.Limit, one, bucketed)
		}
		c.cfg.bucketAbove = -1
		if got, want := hitKeys(t, c, Query{Text: text}), bruteForce(t, sessions, text, nil); !slices.Equal(got, want) {
			t.Fatalf("query %q bucketed:\n got %q\nwant %q", text, got, want)
		}
	}
}
