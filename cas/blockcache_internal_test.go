package cas

import (
	"fmt"
	"slices"
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
	c.get(key(0), entry{}) // used again: block 1 is now the oldest
	c.put(key(n), cachedBlock{data: make([]byte, size), full: true})
	if len(c.kept(key(1))) != 0 {
		t.Fatal("the least recently used block was kept past the budget")
	}
	for _, i := range []int{0, 2, n} {
		if b := c.first(key(i)); !b.full || len(b.data) != size {
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
	if c.len() != 1 || c.first(key(n+1)).data == nil {
		t.Fatalf("%d blocks after one over the budget, want it alone", c.len())
	}
}

// Frames of one block are kept side by side, each counted once, and a
// start or the whole block replaces them.
func TestBlockCacheKeepsFrames(t *testing.T) {
	var c blockCache
	k := blockKey{"pack", 0}
	frame := func(at, n int64) cachedBlock {
		return cachedBlock{data: make([]byte, n), at: at, frames: true}
	}
	c.put(k, frame(100, 50))
	c.put(k, frame(300, 70))
	c.put(k, frame(100, 50)) // read twice at once
	if got := c.kept(k); len(got) != 2 || c.bytes != 120 {
		t.Fatalf("kept %d parts in %d bytes, want the 2 frames in 120", len(got), c.bytes)
	}
	for _, e := range []entry{{inner: 120, size: 30}, {inner: 310, size: 60}} {
		if b, ok, _ := c.get(k, e); !ok || b.at > e.inner {
			t.Fatalf("the blob at %d+%d was not found in its frame", e.inner, e.size)
		}
	}
	if _, ok, some := c.get(k, entry{inner: 200, size: 10}); ok || !some {
		t.Fatalf("a blob between the frames: found %v, some kept %v; want not found, some", ok, some)
	}
	c.put(k, cachedBlock{data: make([]byte, 400), full: true})
	if got := c.kept(k); len(got) != 1 || !got[0].full || c.bytes != 400 {
		t.Fatalf("after the whole block, %d parts in %d bytes", len(got), c.bytes)
	}
}

// kept returns what the cache keeps of block k.
func (c *blockCache) kept(k blockKey) []cachedBlock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl, ok := c.m[k]; ok {
		return slices.Clone(sl.parts)
	}
	return nil
}

// first returns the first part kept of block k.
func (c *blockCache) first(k blockKey) cachedBlock {
	if p := c.kept(k); len(p) > 0 {
		return p[0]
	}
	return cachedBlock{}
}
