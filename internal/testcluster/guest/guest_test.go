//go:build e2e

package guest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guest"
)

// hostname is what qemu's DHCP server hands the guest, as KubeVirt's hands it
// the VMI's name.
const hostname = "vmctl-guest-test"

// TestGuestBootsServesAndPowersOff boots the guest as KubeVirt's launcher
// would, but with the machine's qemu: Ensure's kernel and initramfs, q35,
// software emulation only (TCG), one virtio NIC whose DHCP server hands out
// 10.0.2.0/24 and a hostname. The guest must say it is up on the serial
// console, answer GET / on :80 with that hostname, and power off by itself
// on the ACPI power button (qemu's system_powerdown, KubeVirt's graceful
// shutdown), so qemu exits 0.
func TestGuestBootsServesAndPowersOff(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "the guest's test runs as root, as make e2e does (hack/node-deps.sh installs qemu then)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	ensure := time.Now()
	img, err := guest.Ensure(ctx, "", logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest image ready in %s", time.Since(ensure).Round(10*time.Millisecond))
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Fatalf("no qemu-system-x86_64: run hack/node-deps.sh as root (it installs qemu-system-x86): %v", err)
	}
	dir := t.TempDir()
	port := freePort(t)
	qmpSocket := filepath.Join(dir, "qmp.sock")
	cmd := exec.Command(qemu, "-accel", "tcg", "-machine", "q35", "-m", "256", "-nographic", "-no-reboot",
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", guest.KernelArgs,
		"-netdev", "user,id=net0,net=10.0.2.0/24,hostname="+hostname+",hostfwd=tcp:127.0.0.1:"+strconv.Itoa(port)+"-:80",
		// romfile= spares qemu the NIC's boot ROM (package ipxe-qemu): the
		// kernel is loaded directly.
		"-device", "virtio-net-pci,netdev=net0,romfile=",
		"-qmp", "unix:"+qmpSocket+",server=on,wait=off")
	console := newConsole()
	cmd.Stdout, cmd.Stderr = console, console
	// Killed with the test's process, should it die before the cleanup.
	cmd.SysProcAttr = testcluster.SysProcAttr()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited closes when qemu has; exitErr is Wait's error then.
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no longer running once it powered off
		<-exited
		if t.Failed() {
			t.Logf("the guest's console:\n%s", console.String())
		}
	})

	upLine := "vmctl-guest: " + hostname + " up"
	if err := console.waitFor(upLine, exited, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	boot := time.Since(start)

	body, err := getUntil(fmt.Sprintf("http://127.0.0.1:%d/", port), exited, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if body != hostname+"\n" {
		t.Errorf("GET / answered %q, want the hostname from DHCP, %q", body, hostname+"\n")
	}
	served := time.Since(start)

	pressed := time.Now()
	if err := powerdown(qmpSocket); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("qemu exited with %v after system_powerdown, want 0", exitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("qemu still runs 30s after system_powerdown: the guest ignored the ACPI power button")
	}
	off := time.Since(pressed)
	if !strings.Contains(console.String(), "vmctl-guest: "+hostname+" powering off") {
		t.Error("qemu exited without the guest saying it powers off: it did not stop through the power button")
	}
	t.Logf("boot to the console line %s, to the HTTP answer %s, system_powerdown to qemu's exit %s",
		boot.Round(10*time.Millisecond), served.Round(10*time.Millisecond), off.Round(10*time.Millisecond))
}

// logWriter sends Ensure's progress lines to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// console collects qemu's output, the guest's serial console, and tells
// waiters when it grows.
type console struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newConsole() *console { return &console{changed: make(chan struct{})} }

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	close(c.changed)
	c.changed = make(chan struct{})
	return len(p), nil
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor returns once the console holds line, or fails when qemu exits or
// timeout passes.
func (c *console) waitFor(line string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		found, changed := strings.Contains(c.buf.String(), line), c.changed
		c.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-exited:
			return fmt.Errorf("qemu exited before the console said %q", line)
		case <-deadline:
			return fmt.Errorf("the console did not say %q within %s", line, timeout)
		}
	}
}

// getUntil GETs url until it answers 200 and returns the body.
func getUntil(url string, exited <-chan struct{}, timeout time.Duration) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && rerr == nil {
				return string(b), nil
			}
			err = fmt.Errorf("status %s, body %q", resp.Status, b)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("GET %s did not answer 200 within %s: %w", url, timeout, err)
		}
		select {
		case <-exited:
			return "", fmt.Errorf("qemu exited before GET %s answered", url)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// powerdown presses the guest's ACPI power button through qemu's QMP socket,
// as libvirt does for KubeVirt's graceful shutdown.
func powerdown(socket string) error {
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect to qemu's QMP socket: %w", err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	dec, enc := json.NewDecoder(conn), json.NewEncoder(conn)
	var greeting map[string]json.RawMessage
	if err := dec.Decode(&greeting); err != nil {
		return fmt.Errorf("read qemu's QMP greeting: %w", err)
	}
	if greeting["QMP"] == nil {
		return fmt.Errorf("qemu's QMP socket greeted with %v, not QMP", greeting)
	}
	for _, command := range []string{"qmp_capabilities", "system_powerdown"} {
		if err := enc.Encode(map[string]string{"execute": command}); err != nil {
			return fmt.Errorf("QMP %s: %w", command, err)
		}
		for {
			var reply map[string]json.RawMessage
			if err := dec.Decode(&reply); err != nil {
				return fmt.Errorf("QMP %s: %w", command, err)
			}
			if reply["error"] != nil {
				return errors.New("QMP " + command + ": " + string(reply["error"]))
			}
			if reply["return"] != nil {
				break
			}
		}
	}
	return nil
}
