// Command trove keeps what AI coding agents must not lose: sessions, blobs,
// checkpoints and run logs, on local disk, in memory or in buckets.
package main

import (
	"context"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
)

func main() {
	quietGC(64 << 20)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietGC lets a short process run without collecting garbage until its
// heap reaches limit: a checkpoint command allocates a few MB, and one
// collection on a busy machine costs it more than all the rest of its
// work but the stat pass. After each collection, a heap that kept more
// than a quarter of limit goes back to GOGC=busyGOGC (no limit), so a
// process with a large live heap never collects over and over at the limit.
// GOGC or GOMEMLIMIT in the environment win.
func quietGC(limit int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	watchGC(limit, nil)
}

// gcSentinel is garbage from its birth: its cleanup runs after the next
// collection. A pointer field keeps it out of the tiny allocator, whose
// blocks may outlive it.
type gcSentinel struct{ _ *byte }

// watchGC calls afterGC after the next collection, and again after each
// while the heap stays small; done (tests) hears of each call.
func watchGC(limit int64, done func(quiet bool)) {
	runtime.AddCleanup(new(gcSentinel), func(limit int64) {
		quiet := afterGC(limit)
		if done != nil {
			done(quiet)
		}
		if quiet {
			watchGC(limit, done)
		}
	}, limit)
}

// busyGOGC is the GOGC of a process whose live heap outgrew the quiet
// start. A catalog build keeps about 40 MB live: at 400 its heap peaked
// near 190 MB and its RSS passed issue 34's 256 MiB under load; at 200 it
// peaks at 145 MiB for the same CPU time (10,000 sessions, gctrace).
const busyGOGC = 200

// afterGC restores GOGC=busyGOGC and no limit when the collection just done kept
// more than a quarter of limit live, and says whether it did not.
func afterGC(limit int64) (quiet bool) {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() <= uint64(limit/4) {
		return true
	}
	debug.SetGCPercent(busyGOGC)
	debug.SetMemoryLimit(math.MaxInt64)
	return false
}
