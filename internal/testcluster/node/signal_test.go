//go:build e2e

package node_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// helperEnv makes TestHelperNode run: it starts a cluster and a node in its
// own process, which the tests below interrupt or kill.
const helperEnv = "VMCTL_NODE_TEST_HELPER_DIR"

func TestHelperNode(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("only run by the tests below, in a process of its own")
	}
	ctx := context.Background()
	c, err := testcluster.Start(ctx, testcluster.Options{Dir: dir, BindAddress: "0.0.0.0", Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(ctx, c, node.Options{Log: os.Stderr})
	if err != nil {
		_ = c.Stop()
		t.Fatal(err)
	}
	n.StopOnSignal(func() { _ = c.Stop() })
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	runPause(t, cs, n) // containers, shims, mounts and a veth to clean up
	_, _ = os.Stdout.WriteString("READY\n")
	select {}
}

// startHelper runs TestHelperNode and returns once its node is Ready.
func startHelper(t *testing.T) *exec.Cmd {
	t.Helper()
	// Not t.TempDir: its path is too long for containerd's shim sockets.
	dir, err := os.MkdirTemp("", "vmctl-node-") //nolint:usetesting // see above
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNode$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "READY" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the helper ended before its node was Ready")
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the helper's node not Ready within 3 minutes")
	}
	return cmd
}

func TestInterruptedNodeLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "a real node needs root")
	}
	if _, err := testcluster.EnsureBinaries(t.Context(), "", os.Stderr); err != nil {
		t.Fatal(err)
	}
	if _, err := node.EnsureBinaries(t.Context(), "", os.Stderr); err != nil {
		t.Fatal(err)
	}
	before := machineState(t)
	cmd := startHelper(t)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("the interrupted helper exited: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the interrupted helper did not exit within a minute")
	}
	compare(t, before, machineState(t))
}

func TestKilledNodeIsSweptByTheNextStart(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skip(t, "a real node needs root")
	}
	bins, err := testcluster.EnsureBinaries(t.Context(), "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	before := machineState(t)
	cmd := startHelper(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat("/sys/class/net/" + node.Bridge); err != nil {
		t.Fatalf("a killed node left no bridge (%v): the test shows nothing", err)
	}
	c, err := testcluster.Start(t.Context(), testcluster.Options{Binaries: bins, BindAddress: "0.0.0.0", Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	n, err := node.Start(t.Context(), c, node.Options{Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	compare(t, before, machineState(t))
}

func compare(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed:\nbefore:\n%s\nafter:\n%s", k, v, after[k])
		}
	}
}
