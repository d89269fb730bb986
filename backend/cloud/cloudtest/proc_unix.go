//go:build unix && !linux

package cloudtest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group. Outside Linux there
// is no parent-death signal: a test binary that dies leaves it running.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the server and anything it started.
func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// alive reports whether the process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
