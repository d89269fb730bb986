// Command trove keeps what AI coding agents must not lose: sessions, blobs,
// checkpoints and run logs, on local disk, in memory or in buckets.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// A short-lived process: collecting garbage less often is cheaper
	// than the memory it keeps (listings of thousands of sessions).
	debug.SetGCPercent(400)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
