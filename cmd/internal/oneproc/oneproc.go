// Package oneproc runs a search on one P (GOMAXPROCS=1) from the
// package initialisation on, until Restore.
//
// A search is one goroutine's work of a few milliseconds. With a second
// P idle, each goroutine the process starts (the runtime's finalizer
// and cleanup goroutines during package initialisation, database/sql's
// opener, a timer's) wakes a second thread to run it: a futex wake, an
// idle thread found or cloned, its spin looking for work, then its
// sleep, a few tens of microseconds each on this 2-core VM. On one P no
// goroutine start wakes anyone; a goroutine in a system call still
// loses its P to sysmon after 20 µs, as before. This package's init
// runs before os's (packages are initialised in import path order
// once their imports are: it imports only runtime, sync/atomic and
// syscall), so
// before most of those starts. A process that lives long enough to
// want its cores back (a catalog build parses on three goroutines)
// gets them from Restore, which cmd/internal/cli calls once the
// command has run for a while.
//
// Only a command line with a "search" argument is lowered (trove's
// other commands may work on several goroutines at once from their
// start), and none when GOMAXPROCS is set in the environment.
//
// Imports: the standard library.
package oneproc

import (
	"runtime"
	"sync/atomic"
	"syscall"
)

// prev is GOMAXPROCS before init lowered it to 1, 0 if it did not.
var prev atomic.Int64

func init() {
	if _, set := syscall.Getenv("GOMAXPROCS"); set || !hasArg(cmdline(), "search") {
		return
	}
	lower()
}

// lower runs the process on one P until Restore.
func lower() {
	if n := runtime.GOMAXPROCS(1); n > 1 {
		prev.Store(int64(n))
	}
}

// Restore gives the process back the Ps init took, if it took any.
func Restore() {
	if n := prev.Swap(0); n > 1 {
		runtime.GOMAXPROCS(int(n))
	}
}

// hasArg reports whether the NUL-separated command line (the program's
// name first, as /proc/self/cmdline has it) has arg among its arguments.
func hasArg(cmdline []byte, arg string) bool {
	for i, start := 0, -1; i <= len(cmdline); i++ {
		if i < len(cmdline) && cmdline[i] != 0 {
			continue
		}
		if start >= 0 && string(cmdline[start:i]) == arg {
			return true
		}
		start = i + 1 // the program's name, before the first NUL, is skipped
	}
	return false
}
