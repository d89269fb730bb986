package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/trovekit/trove/backend/open"
	"github.com/trovekit/trove/cmd/internal/oneproc"
)

// Option configures Main.
type Option func(*config)

type config struct{ companion string }

// WithCompanion names the program that serves the bucket schemes this one
// does not link (open.Missing): a command line that names such a store is
// run by that program instead, found beside this one or on PATH. Without
// it, the command runs here and says what to install.
func WithCompanion(name string) Option { return func(c *config) { c.companion = name } }

// Main runs the trove command line of os.Args and exits with its code.
func Main(opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.companion != "" && os.Getenv(companionEnv) == "" && bucketScheme(os.Args[1:], open.Missing) != "" {
		if path, ok := findCompanion(cfg.companion); ok {
			err := execCompanion(path, os.Args[1:])
			fmt.Fprintf(os.Stderr, "trove: run %s: %v\n", path, err)
			os.Exit(exitFailure)
		}
	}
	quietGC(64 << 20)
	// A search runs on one P from its start (oneproc); one that runs
	// past signalDelay gets its Ps back, on the timer already there.
	ctx, _ := cancelOnSignal(signalDelay, oneproc.Restore)
	os.Exit((&app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, exits: true}).run(ctx, os.Args[1:]))
}

// signalDelay is how long a command runs before SIGINT and SIGTERM cancel
// its context instead of ending the process. Catching them costs a
// process about 0.3 ms of CPU (os/signal starts two threads), a tenth of
// what a hook's command does beyond its stat pass; a command that is done
// sooner ends on them as it would during the runtime's start, which every
// write to a store survives (temporary files, flock, SQLite's WAL).
// serve and watch catch them from their start.
const signalDelay = 50 * time.Millisecond

// cancelOnSignal returns a context that SIGINT and SIGTERM cancel once
// delay has passed, and a channel closed when they do. The first signal
// cancels; the catching then stops, so that a second ends the process at
// once, even while its command waits on a call that never returns (a
// dead mount): the runtime's signal handler does that on its own thread.
// after, if not nil, is called when delay has passed.
func cancelOnSignal(delay time.Duration, after func()) (context.Context, <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	caught := make(chan struct{})
	time.AfterFunc(delay, func() {
		if after != nil {
			after()
		}
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		close(caught)
		<-c
		signal.Stop(c)
		cancel()
	})
	return ctx, caught
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
