//go:build unix

package cli

import (
	"os"
	"syscall"
	"testing"
)

// TestCancelOnSignal checks that a SIGTERM after the delay cancels the
// context instead of ending the process.
func TestCancelOnSignal(t *testing.T) {
	ctx, caught := cancelOnSignal(0)
	<-caught
	if err := ctx.Err(); err != nil {
		t.Fatalf("cancelled before any signal: %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
}
