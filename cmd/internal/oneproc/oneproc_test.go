package oneproc

import (
	"runtime"
	"testing"
)

func TestHasArg(t *testing.T) {
	lowered := []string{
		"trove\x00--store\x00/s\x00search\x00--all\x00\"a b\"\x00",
		"trove\x00search\x00",
		"trove\x00search", // no final NUL
	}
	kept := []string{
		"search\x00ls\x00", // the program's name is not an argument
		"trove\x00searches\x00research\x00",
		"trove\x00--version\x00",
		"",
	}
	for _, cmdline := range lowered {
		if !hasArg([]byte(cmdline), "search") {
			t.Errorf("hasArg(%q) = false, want true", cmdline)
		}
	}
	for _, cmdline := range kept {
		if hasArg([]byte(cmdline), "search") {
			t.Errorf("hasArg(%q) = true, want false", cmdline)
		}
	}
}

// TestRestore checks that Restore gives back the Ps lower took, once.
func TestRestore(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	if was < 2 {
		runtime.GOMAXPROCS(2)
		was = 2
	}
	lower()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after lower, want 1", n)
	}
	Restore()
	if n := runtime.GOMAXPROCS(0); n != was {
		t.Fatalf("GOMAXPROCS %d after Restore, want %d", n, was)
	}
	runtime.GOMAXPROCS(3)
	Restore() // nothing left to give back
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Fatalf("a second Restore set GOMAXPROCS %d, want it left at 3", n)
	}
}
