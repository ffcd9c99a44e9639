//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeTerminal moves vmctl-cluster into a process group of its own and makes
// that the terminal's foreground group, so that a Ctrl-C reaches it and not
// the make that started it. GNU make dies of a SIGINT it receives itself,
// with "*** [demo] Interrupt", even after its recipe stopped cleanly and
// exited 0; a shell does the same for a job it runs. The returned func gives
// the terminal back to the group it came from.
//
// Without a terminal on stdin, or when started in the background, it does
// nothing: there is no Ctrl-C to route.
func takeTerminal() (giveBack func()) {
	fd := int(os.Stdin.Fd())
	foreground, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || foreground != unix.Getpgrp() {
		return func() {}
	}
	// A process outside the foreground group that sets the terminal's
	// foreground group is sent SIGTTOU, which stops it by default. Ctrl-Z
	// would stop this group, where neither make nor the shell would notice
	// (they wait on their own group), and leave the terminal hung.
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTSTP)
	if err := unix.Setpgid(0, 0); err != nil {
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpid()); err != nil {
		_ = unix.Setpgid(0, foreground)
		return func() {}
	}
	return func() {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, foreground)
		_ = unix.Setpgid(0, foreground)
	}
}
