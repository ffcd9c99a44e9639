//go:build e2e

package guest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guest"
)

// TestGuestBusyAndIdle boots the guest under the machine's qemu, as
// TestGuestBootsServesAndPowersOff does, and holds its CGI programs to what
// the autoscaling tests need of them: GET /cgi-bin/busy makes qemu take
// most of a core, a second call names the same loop, and GET /cgi-bin/idle
// brings qemu back to the idle guest's share.
func TestGuestBusyAndIdle(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "the guest's test runs as root, as make e2e does (hack/node-deps.sh installs qemu then)")
	}
	img, err := guest.Ensure(t.Context(), "", logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Fatalf("no qemu-system-x86_64: run hack/node-deps.sh as root (it installs qemu-system-x86): %v", err)
	}
	g := boot(t, qemu, img, "")
	if err := g.console.waitFor("vmctl-guest: "+hostname+" up", g.exited, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", g.port)
	get := func(path string) string {
		t.Helper()
		body, err := getUntil(base+path, g.exited, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	// What qemu takes of the machine's CPU over a few seconds, in cores.
	const window = 5 * time.Second
	cores := func() float64 {
		t.Helper()
		before, at := cpuSeconds(t, g.pid), time.Now()
		time.Sleep(window)
		return (cpuSeconds(t, g.pid) - before) / time.Since(at).Seconds()
	}
	idle := cores()
	first, again := get("/cgi-bin/busy"), get("/cgi-bin/busy")
	if !strings.HasPrefix(first, "busy ") || again != first {
		t.Errorf("GET /cgi-bin/busy twice answered %q, then %q; want \"busy <PID>\" twice, one loop", first, again)
	}
	busy := cores()
	if body := get("/cgi-bin/idle"); body != "idle\n" {
		t.Errorf("GET /cgi-bin/idle answered %q, want \"idle\\n\"", body)
	}
	// The loop's last instructions, and qemu's own settling.
	time.Sleep(time.Second)
	after := cores()
	t.Logf("qemu took %.2f cores idle, %.2f busy, %.2f after /cgi-bin/idle", idle, busy, after)
	if busy < 0.6 {
		t.Errorf("qemu took %.2f cores with the guest busy, want most of one", busy)
	}
	if after > busy/3 || after > idle+0.2 {
		t.Errorf("qemu took %.2f cores after /cgi-bin/idle (%.2f idle before, %.2f busy), want the idle figure back", after, idle, busy)
	}
	if body := get("/"); body != hostname+"\n" {
		t.Errorf("GET / after the CGI calls answered %q, want the hostname", body)
	}
}

// cpuSeconds is the user and system CPU time process pid has taken, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s, Linux's
// USER_HZ on every architecture Go runs this test on).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing one, where field 3 begins.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	utime, err1 := strconv.ParseFloat(f[14-3], 64)
	stime, err2 := strconv.ParseFloat(f[15-3], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse /proc/%d/stat: %q", pid, data)
	}
	return (utime + stime) / 100
}
