//go:build unix

package fs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trovekit/trove/backend"
	trovefs "github.com/trovekit/trove/backend/fs"
)

func mustLock(t *testing.T, s backend.Storage, name string) backend.Unlocker {
	t.Helper()
	u, err := s.Lock(context.Background(), name, false)
	if err != nil {
		t.Fatalf("Lock(%q): %v", name, err)
	}
	return u
}

func TestLockExclusive(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, s *trovefs.Storage) {
		u := mustLock(t, s, "locks/a")
		_, err := s.Lock(ctx, "locks/a", false)
		wantErr(t, err, "lock", "locks/a", backend.ErrLocked)
		other := mustLock(t, s, "locks/b") // another name is independent
		other.Unlock()

		// A waiter gets the lock once it is released.
		got := make(chan error, 1)
		go func() {
			u2, err := s.Lock(ctx, "locks/a", true)
			if err == nil {
				err = u2.Unlock()
			}
			got <- err
		}()
		if err := u.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Errorf("waiting Lock: %v", err)
		}
		if err := u.Unlock(); err != nil {
			t.Errorf("second Unlock: %v", err)
		}

		// A waiter gives up when its ctx ends.
		u = mustLock(t, s, "locks/a")
		defer u.Unlock()
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			_, err := s.Lock(cctx, "locks/a", true)
			got <- err
		}()
		cancel()
		wantErr(t, <-got, "lock", "locks/a", context.Canceled)

		// A lock on a directory is refused.
		if err := s.EnsureDir(ctx, "dir"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Lock(ctx, "dir", false)
		wantErr(t, err, "lock", "dir", backend.ErrIsDir)
	})
}

// TestLockTwoStorages: two Storage values on one root exclude each other on
// the OS (flock per open file description), not only goroutines of one.
func TestLockTwoStorages(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s1, s2 := openOS(t, root), openOS(t, root)
	u := mustLock(t, s1, "l")
	_, err := s2.Lock(ctx, "l", false)
	wantErr(t, err, "lock", "l", backend.ErrLocked)

	got := make(chan error, 1)
	go func() {
		u2, err := s2.Lock(ctx, "l", true) // polls s1's flock
		if err == nil {
			err = u2.Unlock()
		}
		got <- err
	}()
	u.Unlock()
	if err := <-got; err != nil {
		t.Errorf("waiting Lock on the second Storage: %v", err)
	}

	u = mustLock(t, s2, "l")
	defer u.Unlock()
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := s1.Lock(cctx, "l", true)
		got <- err
	}()
	cancel()
	wantErr(t, <-got, "lock", "l", context.Canceled)
}

// TestLockMutualExclusion hammers one lock from goroutines on two Storage
// values and checks no two holders ever overlap.
func TestLockMutualExclusion(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	stores := []*trovefs.Storage{openOS(t, root), openOS(t, root)}
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[i%2]
			for range 20 {
				u, err := s.Lock(ctx, "hot", true)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				if err := u.Unlock(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping holders", n)
	}
}

// The helper process: takes a lock and reports on stdout; with the lock held
// it waits for a line on stdin, then unlocks.
const (
	helperEnv     = "TROVE_FS_LOCK_HELPER"
	helperRootEnv = "TROVE_FS_LOCK_ROOT"
)

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("only run as a helper process")
	}
	s, err := trovefs.NewOS(os.Getenv(helperRootEnv))
	if err != nil {
		fmt.Println("helper: error", err)
		os.Exit(2)
	}
	u, err := s.Lock(context.Background(), "sessions/x.lock", mode == "wait")
	switch {
	case errors.Is(err, backend.ErrLocked):
		fmt.Println("helper: busy")
		os.Exit(0)
	case err != nil:
		fmt.Println("helper: error", err)
		os.Exit(2)
	}
	fmt.Println("helper: locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := u.Unlock(); err != nil {
		fmt.Println("helper: error", err)
		os.Exit(2)
	}
	fmt.Println("helper: unlocked")
	os.Exit(0)
}

type helper struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

func startHelper(t *testing.T, root, mode string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperRootEnv+"="+root)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
	t.Cleanup(func() {
		_ = h.in.Close()
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	return h
}

// next returns the helper's next report, skipping the test binary's chatter.
func (h *helper) next(t *testing.T) string {
	t.Helper()
	for h.lines.Scan() {
		if line, ok := strings.CutPrefix(h.lines.Text(), "helper: "); ok {
			return line
		}
	}
	t.Fatalf("helper ended without a report: %v", h.lines.Err())
	return ""
}

func (h *helper) release(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(h.in, "\n"); err != nil {
		t.Fatal(err)
	}
	if got := h.next(t); got != "unlocked" {
		t.Fatalf("helper: %s, want unlocked", got)
	}
}

func TestLockCrossProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper")
	}
	ctx := context.Background()
	root := t.TempDir()
	s := openOS(t, root)
	const name = "sessions/x.lock"

	// We hold it: another process is refused.
	u := mustLock(t, s, name)
	if got := startHelper(t, root, "try").next(t); got != "busy" {
		t.Fatalf("helper while we hold the lock: %s, want busy", got)
	}
	// A waiting process gets it once we release.
	h := startHelper(t, root, "wait")
	u.Unlock()
	if got := h.next(t); got != "locked" {
		t.Fatalf("waiting helper: %s, want locked", got)
	}
	// It holds it: we are refused, and a waiting Lock gets it at release.
	_, err := s.Lock(ctx, name, false)
	wantErr(t, err, "lock", name, backend.ErrLocked)
	got := make(chan error, 1)
	go func() {
		u, err := s.Lock(ctx, name, true)
		if err == nil {
			err = u.Unlock()
		}
		got <- err
	}()
	h.release(t)
	if err := <-got; err != nil {
		t.Fatalf("waiting for the helper's lock: %v", err)
	}

	// A holder that dies releases the lock.
	h = startHelper(t, root, "try")
	if got := h.next(t); got != "locked" {
		t.Fatalf("helper: %s, want locked", got)
	}
	if _, err := s.Lock(ctx, name, false); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("while the helper holds it: %v", err)
	}
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	u = mustLock(t, s, name)
	u.Unlock()
}
