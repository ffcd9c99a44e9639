//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// env is the cluster and real node every test shares.
type env struct {
	cluster *testcluster.Cluster
	node    *node.Node
	kube    kubernetes.Interface
	virt    kubevirt.Interface
	binary  string // kubectl-vmctl
	image   string // the agent image's name, as `make image` tagged it
}

var e env

// skipReason is why the package's tests skip, if they do.
var skipReason string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e.binary, e.image = os.Getenv("VMCTL_BINARY"), os.Getenv("VMCTL_IMAGE")
	archive := os.Getenv("VMCTL_IMAGE_ARCHIVE")
	switch {
	case os.Geteuid() != 0:
		skipReason = "a real node needs root"
	case e.binary == "" || e.image == "" || archive == "":
		skipReason = "needs VMCTL_BINARY, VMCTL_IMAGE and VMCTL_IMAGE_ARCHIVE: run `make e2e`, which builds the agent image first"
	}
	if skipReason != "" {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bins, err := testcluster.EnsureBinaries(ctx, "", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the control plane:", err)
		return 2
	}
	kvBins, err := kvharness.EnsureBinaries(ctx, "", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build KubeVirt:", err)
		return 2
	}
	nodeBins, err := node.EnsureBinaries(ctx, "", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the node's runtime:", err)
		return 2
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Binaries: bins, CRDs: []string{kvBins.CRDs}, BindAddress: "0.0.0.0", Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		return 2
	}
	n, err := node.Start(ctx, c, node.Options{
		Binaries: nodeBins,
		Images:   []string{archive, nodeBins.LauncherImage, nodeBins.ContainerDiskImage},
		// What virt-handler's node labeller and device plugins would give
		// the node; KubeVirt's launcher Pods ask for them.
		Labels: map[string]string{"kubevirt.io/schedulable": "true", "machine-type.node.kubevirt.io/q35": "true"},
		ExtendedResources: corev1.ResourceList{
			"devices.kubevirt.io/kvm":       resource.MustParse("1k"),
			"devices.kubevirt.io/tun":       resource.MustParse("1k"),
			"devices.kubevirt.io/vhost-net": resource.MustParse("1k"),
		},
		Log: os.Stderr,
	})
	if err != nil {
		_ = c.Stop()
		fmt.Fprintln(os.Stderr, "start the real node:", err)
		return 2
	}
	stopOnSignal := n.StopOnSignal(func() { _ = c.Stop() })
	defer func() {
		stopOnSignal()
		if err := n.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the real node:", err)
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the control plane:", err)
		}
	}()
	kv, err := kvharness.Start(ctx, c, kvharness.Options{Binaries: kvBins, LauncherImage: node.LauncherImage, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start KubeVirt:", err)
		return 2
	}
	e.cluster, e.node = c, n
	if e.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.virt, err = kubevirt.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The kwok node stays, as a node kwok manages beside the real one; a
	// taint keeps the tests' Pods off it, so every scaffolded Pod lands on
	// the real node.
	if err := taintKwokNodes(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logFile, err := os.Create(filepath.Join(c.Dir, "doubles.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = logFile.Close() }()
	virtDone := make(chan error, 1)
	go func() {
		virtDone <- doubles.RunVirtHandler(ctx, kv, slog.New(slog.NewTextHandler(logFile, nil)))
	}()
	if err := c.InstallVmctlCRD(ctx, e.binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "realnode: cluster and node %s up, kubeconfig %s, image %s\n", n.Name, c.Kubeconfig, e.image)

	code := m.Run()
	cancel()
	if err := <-virtDone; err != nil {
		fmt.Fprintln(os.Stderr, "virt-handler stand-in:", err)
		code = 2
	}
	return code
}

func taintKwokNodes(ctx context.Context) error {
	for _, name := range e.cluster.Nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nd, err := e.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			nd.Spec.Taints = append(nd.Spec.Taints, corev1.Taint{Key: "vmctl.test/kwok", Effect: corev1.TaintEffectNoSchedule})
			_, err = e.kube.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("taint kwok node %s: %w", name, err)
		}
	}
	return nil
}

// settle bounds every wait for the cluster to converge.
const settle = 90 * time.Second
