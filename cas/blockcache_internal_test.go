package cas

import (
	"fmt"
	"testing"
)

// The block cache keeps what fits in its budget, drops the least recently
// used first, and counts a longer prefix of a kept block once.
func TestBlockCacheKeepsRecentWithinBudget(t *testing.T) {
	var c blockCache
	const size = 256 << 10 // a cold block
	n := blockCacheBytes / size
	key := func(i int) blockKey { return blockKey{fmt.Sprintf("pack%d", i%3), int64(i)} }
	for i := range n {
		c.put(key(i), cachedBlock{data: make([]byte, size), full: true})
	}
	if c.len() != n || c.bytes != blockCacheBytes {
		t.Fatalf("%d blocks, %d bytes kept; want all %d in %d bytes", c.len(), c.bytes, n, blockCacheBytes)
	}
	c.get(key(0)) // used again: block 1 is now the oldest
	c.put(key(n), cachedBlock{data: make([]byte, size), full: true})
	if c.get(key(1)).data != nil {
		t.Fatal("the least recently used block was kept past the budget")
	}
	for _, i := range []int{0, 2, n} {
		if b := c.get(key(i)); !b.full || len(b.data) != size {
			t.Fatalf("block %d dropped or changed: %d bytes, full %v", i, len(b.data), b.full)
		}
	}
	// A longer start of a kept block replaces the shorter one.
	c.put(key(2), cachedBlock{data: make([]byte, size/2)})
	c.put(key(2), cachedBlock{data: make([]byte, size), full: true})
	if c.bytes > blockCacheBytes {
		t.Fatalf("%d bytes kept, over the budget %d", c.bytes, blockCacheBytes)
	}
	// A block bigger than the whole budget is still kept, alone.
	c.put(key(n+1), cachedBlock{data: make([]byte, blockCacheBytes+1), full: true})
	if c.len() != 1 || c.get(key(n+1)).data == nil {
		t.Fatalf("%d blocks after one over the budget, want it alone", c.len())
	}
}
