//go:build !unix

package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execCompanion runs path with args on this process's stdio and exits with
// its code: there is no exec(2) here.
func execCompanion(path string, args []string) error {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), companionEnv+"=1")
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		return err
	}
	os.Exit(0)
	return nil
}
