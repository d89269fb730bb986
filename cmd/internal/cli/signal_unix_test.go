//go:build unix

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestCancelOnSignal checks that a SIGTERM after the delay cancels the
// context instead of ending the process, and that the delay's function
// ran before the catching began.
func TestCancelOnSignal(t *testing.T) {
	after := make(chan struct{})
	ctx, caught := cancelOnSignal(0, func() { close(after) })
	<-caught
	select {
	case <-after:
	default:
		t.Fatal("the catching began before after was called")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("cancelled before any signal: %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
}

// TestSecondSignalEnds checks that a second SIGTERM ends a process whose
// command does not return after the first (blocked in a read here, as on
// a dead mount), by the signal, not an exit the command chose.
func TestSecondSignalEnds(t *testing.T) {
	if os.Getenv("TROVE_TEST_SIGNAL_CHILD") == "1" {
		ctx, caught := cancelOnSignal(0, nil)
		<-caught
		fmt.Println("armed")
		go func() {
			<-ctx.Done()
			fmt.Println("cancelled")
		}()
		os.Stdin.Read(make([]byte, 1)) // the parent never writes
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalEnds$")
	cmd.Env = append(os.Environ(), "TROVE_TEST_SIGNAL_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	for _, want := range []string{"armed", "cancelled"} {
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child ended with %v, want the signal", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child ended with %v, want killed by SIGTERM", err)
	}
}
