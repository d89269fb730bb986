//go:build !linux

package oneproc

// cmdline is Linux's alone (/proc/self/cmdline): elsewhere no command is
// lowered.
func cmdline() []byte { return nil }
