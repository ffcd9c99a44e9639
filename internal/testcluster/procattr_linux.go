package testcluster

import "syscall"

// SysProcAttr puts a component in its own process group, so a terminal's Ctrl-C
// reaches only the test (which then stops the cluster in order), and has the
// kernel kill it if the process that started it dies without stopping it.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
