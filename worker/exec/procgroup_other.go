//go:build !unix

package exec

import osexec "os/exec"

// killGroupOnCancel kills the program on cancellation (process groups
// are a Unix facility; elsewhere only the program itself is killed).
func killGroupOnCancel(c *osexec.Cmd) {
	c.Cancel = func() error { return c.Process.Kill() }
}
