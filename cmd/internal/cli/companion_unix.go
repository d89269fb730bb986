//go:build unix

package cli

import (
	"os"
	"syscall"
)

// execCompanion replaces this process with path, run with args: the same
// pid, stdio, signals and exit code, as if the user had run it.
func execCompanion(path string, args []string) error {
	return syscall.Exec(path, append([]string{path}, args...), append(os.Environ(), companionEnv+"=1"))
}
