//go:build unix

package cputime

import "testing"

// A busy loop must show up as CPU time: a Self that always said 0 would
// leave every benchmark's CPU column empty.
func TestSelfGrows(t *testing.T) {
	start := Self()
	x := uint64(1)
	for Self() == start {
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x)
	}
	if Self() <= start {
		t.Fatalf("Self did not grow: %v then %v", start, Self())
	}
}
