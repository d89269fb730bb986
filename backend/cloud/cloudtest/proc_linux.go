package cloudtest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group and has the kernel
// kill it when the test binary dies. (Pdeathsig follows the thread that
// forked, which in Go lives as long as the process unless a goroutine locked
// to it exits; no goroutine here locks a thread.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
