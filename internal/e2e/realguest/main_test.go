//go:build e2e

package realguest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guestnode"
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
	env, err := guestnode.Start(context.Background(), guestnode.Options{Images: []string{archive}, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	stopOnSignal := env.StopOnSignal()
	defer func() {
		stopOnSignal()
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the cluster:", err)
		}
	}()
	e.cluster, e.node = env.Cluster, env.Node
	if e.kube, err = kubernetes.NewForConfig(e.cluster.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if e.virt, err = kubevirt.NewForConfig(e.cluster.RESTConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := e.cluster.InstallVmctlCRD(context.Background(), e.binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "realguest: cluster, node %s and virt-handler up, kubeconfig %s\n", e.node.Name, e.cluster.Kubeconfig)
	return m.Run()
}
