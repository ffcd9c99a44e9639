//go:build unix && !linux

package testcluster

import "syscall"

// SysProcAttr puts a component in its own process group. Without Pdeathsig a
// crashed test can leave components running; Stop and ForTest's signal handler
// cover the ordinary exits.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
