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
	g := boot(t, qemu, img, "")
	console, exited, qmpSocket, port, start := g.console, g.exited, g.qmp, g.port, g.start

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
		if g.exitErr != nil {
			t.Fatalf("qemu exited with %v after system_powerdown, want 0", g.exitErr)
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

// guestRun is one boot of the guest under the machine's qemu.
type guestRun struct {
	console *console
	// exited closes when qemu has; exitErr is Wait's error then.
	exited  chan struct{}
	exitErr error
	pid     int // qemu's
	qmp     string
	port    int
	start   time.Time
}

// boot boots the guest as KubeVirt's launcher would, but with the
// machine's qemu: Ensure's kernel and initramfs, q35, software emulation
// only (TCG), one virtio NIC whose DHCP server hands out 10.0.2.0/24 and
// a hostname, and where disk is set that raw file as a virtio disk, as
// KubeVirt gives a VM its claim's disk.img. qemu is killed when t ends.
func boot(t *testing.T, qemu string, img guest.Image, disk string) *guestRun {
	t.Helper()
	g := &guestRun{console: newConsole(), exited: make(chan struct{}), qmp: filepath.Join(t.TempDir(), "qmp.sock"), port: freePort(t)}
	args := []string{"-accel", "tcg", "-machine", "q35", "-m", "256", "-nographic", "-no-reboot",
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", guest.KernelArgs,
		"-netdev", "user,id=net0,net=10.0.2.0/24,hostname=" + hostname + ",hostfwd=tcp:127.0.0.1:" + strconv.Itoa(g.port) + "-:80",
		// romfile= spares qemu the NIC's boot ROM (package ipxe-qemu): the
		// kernel is loaded directly.
		"-device", "virtio-net-pci,netdev=net0,romfile=",
		"-qmp", "unix:" + g.qmp + ",server=on,wait=off"}
	if disk != "" {
		args = append(args, "-drive", "file="+disk+",format=raw,if=none,id=data", "-device", "virtio-blk-pci,drive=data")
	}
	cmd := exec.Command(qemu, args...)
	cmd.Stdout, cmd.Stderr = g.console, g.console
	// Killed with the test's process, should it die before the cleanup.
	cmd.SysProcAttr = testcluster.SysProcAttr()
	g.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.pid = cmd.Process.Pid
	go func() {
		g.exitErr = cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no longer running once it powered off
		<-g.exited
		if t.Failed() {
			t.Logf("the guest's console:\n%s", g.console.String())
		}
	})
	return g
}

// TestGuestKeepsItsTokenOnItsDisk boots the guest twice on one blank raw
// disk, as a VM's claim is blank at first and the same on every later
// boot: the first boot writes a token to it and says so, the second finds
// the same token. A guest's data survives its VM only where its disk does.
func TestGuestKeepsItsTokenOnItsDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "the guest's test runs as root, as make e2e does (hack/node-deps.sh installs qemu then)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	img, err := guest.Ensure(ctx, "", logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Fatalf("no qemu-system-x86_64: run hack/node-deps.sh as root (it installs qemu-system-x86): %v", err)
	}
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 1<<20); err != nil {
		t.Fatal(err)
	}
	var token string
	for i, want := range []string{"written to /dev/vda", "found on /dev/vda"} {
		g := boot(t, qemu, img, disk)
		if err := g.console.waitFor("vmctl-guest: "+hostname+" up", g.exited, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		got := tokenLine(g.console.String())
		if !strings.HasSuffix(got, want) || i == 1 && got != "token "+token+" "+want {
			t.Fatalf("boot %d: the console says %q of the disk, want \"token %s %s\"", i+1, got, token, want)
		}
		token = strings.Fields(got)[1]
		if err := powerdown(g.qmp); err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("qemu still runs 30s after system_powerdown")
		}
	}
}

// tokenLine is what the guest's console says of its data disk's token,
// after "vmctl-guest: ", or "".
func tokenLine(console string) string {
	for _, l := range strings.Split(console, "\n") {
		if _, rest, ok := strings.Cut(l, "vmctl-guest: token "); ok {
			return "token " + strings.TrimSpace(rest)
		}
	}
	return ""
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
