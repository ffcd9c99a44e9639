//go:build e2e

package realguest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guest"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt/images"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// env is the cluster, node and guest every test shares.
type env struct {
	cluster *testcluster.Cluster
	node    *node.Node
	kv      *kvharness.KubeVirt
	kube    kubernetes.Interface
	virt    kubevirt.Interface
	binary  string // kubectl-vmctl
	image   string // the agent image's name, as `make image` tagged it
	guest   guest.Image
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
	start := time.Now()
	builds, err := ensureBuilds(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "realguest: builds ready in %s\n", time.Since(start).Round(time.Second))
	e.guest = builds.guest
	c, err := testcluster.Start(ctx, testcluster.Options{Binaries: builds.cluster, CRDs: []string{builds.kubevirt.CRDs}, BindAddress: "0.0.0.0", Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		return 2
	}
	n, err := node.Start(ctx, c, node.Options{
		Binaries:        builds.node,
		Images:          []string{archive, builds.images.Tarball, builds.guest.Tarball},
		Log:             os.Stderr,
		Timeout:         5 * time.Minute,
		OwnPIDNamespace: true,
	})
	if err != nil {
		_ = c.Stop()
		fmt.Fprintln(os.Stderr, "start the real node:", err)
		return 2
	}
	stopOnSignal := n.StopOnSignal(func() { _ = c.Stop() })
	defer func() {
		stopOnSignal()
		if e.kv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := e.kv.StopHandler(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "stop virt-handler:", err)
			}
			cancel()
		}
		if err := n.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the real node:", err)
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the control plane:", err)
		}
	}()
	e.cluster, e.node = c, n
	if e.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.virt, err = kubevirt.NewForConfig(c.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Every Pod of the tests lands on the real node; the kwok node stays as
	// one kwok manages.
	if err := taintKwokNodes(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.kv, err = kvharness.Start(ctx, c, kvharness.Options{Binaries: builds.kubevirt, Emulation: true, Log: os.Stderr}); err != nil {
		fmt.Fprintln(os.Stderr, "start KubeVirt:", err)
		return 2
	}
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Minute)
	err = e.kv.StartHandler(hctx, kvharness.HandlerNode{Name: n.Name, KubeletRoot: n.KubeletRoot(), StateDir: filepath.Join(n.Dir, "kubevirt")})
	hcancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start virt-handler:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "realguest: cluster, node %s and virt-handler up, kubeconfig %s\n", n.Name, c.Kubeconfig)
	return m.Run()
}

// builds are what the package runs, built once and cached.
type builds struct {
	cluster  testcluster.Binaries
	kubevirt kvharness.Binaries
	node     node.Binaries
	images   images.Images
	guest    guest.Image
}

// ensureBuilds builds, or finds in the cache, everything the package runs.
func ensureBuilds(ctx context.Context) (builds, error) {
	var b builds
	var err error
	if b.cluster, err = testcluster.EnsureBinaries(ctx, "", os.Stderr); err != nil {
		return b, fmt.Errorf("build the control plane: %w", err)
	}
	if b.kubevirt, err = kvharness.EnsureRelease(ctx, kvharness.NodeRelease, "", os.Stderr); err != nil {
		return b, fmt.Errorf("build KubeVirt: %w", err)
	}
	if b.node, err = node.EnsureBinaries(ctx, "", os.Stderr); err != nil {
		return b, fmt.Errorf("build the node's runtime: %w", err)
	}
	if b.images, err = images.EnsureNode(ctx, os.Stderr); err != nil {
		return b, fmt.Errorf("build KubeVirt's node side and its images: %w", err)
	}
	if b.guest, err = guest.Ensure(ctx, "", os.Stderr); err != nil {
		return b, fmt.Errorf("build the guest: %w", err)
	}
	return b, nil
}

// kwokTaint keeps the tests' Pods off the kwok nodes.
var kwokTaint = corev1.Taint{Key: "vmctl.test/kwok", Effect: corev1.TaintEffectNoSchedule}

func taintKwokNodes(ctx context.Context) error {
	for _, name := range e.cluster.Nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nd, err := e.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			nd.Spec.Taints = append(nd.Spec.Taints, kwokTaint)
			_, err = e.kube.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("taint kwok node %s: %w", name, err)
		}
	}
	return nil
}
