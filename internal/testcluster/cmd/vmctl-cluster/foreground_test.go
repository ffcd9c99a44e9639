//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// takeTerminalEnv makes the test binary stand in for vmctl-cluster under
// make: "1" with takeTerminal, as main runs, "0" without it.
const takeTerminalEnv = "VMCTL_CLUSTER_TAKE_TERMINAL"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(takeTerminalEnv); ok {
		runUntilInterrupted(v == "1")
		return
	}
	os.Exit(m.Run())
}

// runUntilInterrupted does what main does around the command: it takes the
// terminal, waits for Ctrl-C, gives the terminal back and exits 0.
func runUntilInterrupted(take bool) {
	giveBack := func() {}
	if take {
		giveBack = takeTerminal()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	fmt.Println("ready")
	<-ctx.Done()
	stop()
	giveBack()
	fmt.Println("stopped cleanly")
	os.Exit(0)
}

// TestCtrlCUnderMakeExitsZero runs `make demo` on a pseudo-terminal, as a
// person does, and types Ctrl-C: with takeTerminal make exits 0; without it
// make dies of the SIGINT it receives too, although its recipe exited 0.
func TestCtrlCUnderMakeExitsZero(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		ci.Skip(t, "make is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		take     string
		wantZero bool
	}{{"1", true}, {"0", false}} {
		t.Run(takeTerminalEnv+"="+tc.take, func(t *testing.T) {
			makefile := filepath.Join(t.TempDir(), "Makefile")
			recipe := fmt.Sprintf("demo:\n\t@%s=%s %s\n", takeTerminalEnv, tc.take, exe)
			if err := os.WriteFile(makefile, []byte(recipe), 0o644); err != nil {
				t.Fatal(err)
			}
			ptm, pts := openPTY(t)
			cmd := exec.Command("make", "-f", makefile, "demo")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
			// A session of its own with the pseudo-terminal as its controlling
			// terminal: make's group is the terminal's foreground group.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = pts.Close()
			lines := make(chan string, 16)
			var out strings.Builder
			go func() {
				defer close(lines)
				for s := bufio.NewScanner(ptm); s.Scan(); {
					lines <- s.Text()
				}
			}()
			waitForLine(t, lines, &out, "ready")
			if _, err := ptm.Write([]byte{0x03}); err != nil { // Ctrl-C
				t.Fatal(err)
			}
			err := cmd.Wait()
			for l := range lines {
				out.WriteString(l + "\n")
			}
			var exit *exec.ExitError
			switch {
			case tc.wantZero && err != nil:
				t.Errorf("make: %v, want exit 0; terminal:\n%s", err, out.String())
			case tc.wantZero && strings.Contains(out.String(), "Interrupt"):
				t.Errorf("make reported an interrupt:\n%s", out.String())
			case !tc.wantZero && (!errors.As(err, &exit) || exit.ExitCode() == 0):
				t.Errorf("make: %v; want make to die of the SIGINT, which is what takeTerminal prevents; terminal:\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "stopped cleanly") {
				t.Errorf("the recipe did not stop cleanly; terminal:\n%s", out.String())
			}
		})
	}
}

func waitForLine(t *testing.T, lines <-chan string, out *strings.Builder, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("terminal closed before %q:\n%s", want, out.String())
			}
			out.WriteString(l + "\n")
			if strings.TrimSpace(l) == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within 30s:\n%s", want, out.String())
		}
	}
}

// openPTY opens a pseudo-terminal pair: the master, which the test types on,
// and the slave, which becomes make's terminal.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ci.Skip(t, fmt.Sprintf("no pseudo-terminals here: %v", err))
	}
	t.Cleanup(func() { _ = ptm.Close() })
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ptm, pts
}
