//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// env is the one cluster every test shares; each test works in a namespace of
// its own, so tests stay independent without paying for a cluster each.
type env struct {
	cluster *testcluster.Cluster
	kv      *kvharness.KubeVirt
	kube    kubernetes.Interface
	virt    kubevirt.Interface
	dyn     dynamic.Interface // the revision stores
	kubelet *doubles.Kubelet
	binary  string
	// agentBinary is vmctl-agent, which the kubelet double runs.
	agentBinary string
}

// e is set once by TestMain before any test runs and never changed after.
var e env

const nodes = 4

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binary, err := built("VMCTL_BINARY", "kubectl-vmctl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	agentBinary, err := built("VMCTL_AGENT_BINARY", "vmctl-agent")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	bins, err := testcluster.EnsureBinaries(ctx, "", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the control plane:", err)
		return 2
	}
	release := kvharness.Newest
	if v := os.Getenv("VMCTL_KUBEVIRT"); v != "" {
		if release, err = kvharness.ReleaseOf(v); err != nil {
			fmt.Fprintln(os.Stderr, "VMCTL_KUBEVIRT:", err)
			return 2
		}
	}
	kvBins, err := kvharness.EnsureRelease(ctx, release, "", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build KubeVirt:", err)
		return 2
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Nodes: nodes, Binaries: bins, CRDs: []string{kvBins.CRDs}, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		return 2
	}
	// Stopping the cluster stops KubeVirt first and removes its webhooks.
	stopOnSignal := c.StopOnSignal()
	defer func() {
		stopOnSignal()
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the control plane:", err)
		}
	}()
	kv, err := kvharness.Start(ctx, c, kvharness.Options{Binaries: kvBins, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start KubeVirt:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "e2e: control plane up in %s, KubeVirt %s's virt-api and virt-controller in %s more; kubeconfig %s\n",
		c.StartupTime.Round(time.Millisecond), kv.Binaries.Version, kv.StartupTime.Round(time.Millisecond), c.Kubeconfig)

	logFile, err := os.Create(filepath.Join(c.Dir, "doubles.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = logFile.Close() }()
	log := slog.New(slog.NewTextHandler(logFile, nil))

	e = env{cluster: c, kv: kv, binary: binary, agentBinary: agentBinary}
	if e.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.virt, err = kubevirt.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.dyn, err = dynamic.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := c.InstallVmctlCRD(ctx, binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	e.kubelet = doubles.NewKubelet(c.DoublesConfig, doubles.KubeletOptions{
		Binary:      binary,
		AgentBinary: agentBinary,
		Dir:         filepath.Join(c.Dir, "kubelet"),
		Args:        agentProfileArgs(),
		Log:         log,
	})
	running := make(chan error, 2)
	go func() { running <- doubles.RunVirtHandler(ctx, kv, log) }()
	go func() { running <- e.kubelet.Run(ctx) }()

	code := m.Run()
	stopReleaseClusters()
	cancel()
	for range 2 {
		if err := <-running; err != nil {
			fmt.Fprintln(os.Stderr, "stand-in:", err)
			code = 2
		}
	}
	return code
}

// built is the binary of command ./cmd/<name> under test: the one env
// names, else a fresh build into a temporary directory. The kubelet double
// runs vmctl-agent, the image's entrypoint, as each agent.
func built(env, name string) (string, error) {
	if b := os.Getenv(env); b != "" {
		return filepath.Abs(b)
	}
	dir, err := os.MkdirTemp("", "vmctl-e2e-bin")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "github.com/kubectl-vmctl/kubectl-vmctl/cmd/"+name)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	return out, nil
}
