package cli

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// quietGC's watch must hand a process whose live heap outgrew a quarter of
// the limit back to GOGC=busyGOGC with no limit, and keep a small one quiet.
func TestQuietGCGivesBackGOGC(t *testing.T) {
	t.Cleanup(func() {
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	const limit = 64 << 20
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	calls := make(chan bool, 16)
	watchGC(limit, func(quiet bool) { calls <- quiet })
	wait := func() bool {
		t.Helper()
		runtime.GC()
		select {
		case q := <-calls:
			return q
		case <-time.After(30 * time.Second):
			t.Fatal("no call after a collection")
			return false
		}
	}
	if !wait() {
		t.Fatal("a small heap left quiet mode")
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC %d while quiet, want off", got)
	}
	keep := make([]byte, limit/2) // live: more than a quarter of the limit
	for i := range keep {
		keep[i] = byte(i)
	}
	if wait() {
		t.Fatal("a large live heap stayed quiet")
	}
	runtime.KeepAlive(keep)
	if got := debug.SetGCPercent(busyGOGC); got != busyGOGC {
		t.Fatalf("GOGC %d after a large heap, want %d", got, busyGOGC)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit %d after a large heap, want none", got)
	}
}

func TestQuietGCHonoursEnvironment(t *testing.T) {
	t.Setenv("GOGC", "150")
	old := debug.SetGCPercent(123)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	quietGC(64 << 20)
	if got := debug.SetGCPercent(old); got != 123 {
		t.Fatalf("quietGC changed GOGC to %d with GOGC set", got)
	}
}
