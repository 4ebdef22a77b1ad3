//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

// killGroupOnCancel starts the program in a process group of its own and
// kills the whole group on cancellation, so that nothing it started
// outlives the invocation.
func killGroupOnCancel(c *osexec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		// The group id is the program's pid; it cannot be reused before
		// Wait reaps the program, and Cancel runs before that.
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}
