// Command vmctl-prebuild builds, once, what the e2e packages need after
// their first tests, into the repository's .cache: what the real node needs
// to boot real guests (see package internal/e2e/realguest), that is the
// virt-api and virt-controller of the release the node runs
// (kubevirt.NodeRelease), then its node-side commands
// (kubevirt.EnsureNodeSide), which reuse most of the packages the first
// build compiled, the virt-launcher and virt-handler images (package images)
// and the guest (package guest); then every other KubeVirt release but the
// newest, for the tests that run on each release; last the real node's
// kubelet, kube-proxy and container runtime (node.EnsureBinaries), which
// the real node's packages, after the e2e package, would otherwise build
// before their first test. `make e2e` runs it in the
// background while the e2e package runs on the newest release, which it
// builds itself; what needs a build waits for it on the caches' locks, or
// builds what is missing itself.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/guest"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt/images"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vmctl-prebuild:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if _, err := kubevirt.EnsureRelease(ctx, kubevirt.NodeRelease, "", os.Stderr); err != nil {
		return err
	}
	if _, err := images.EnsureNode(ctx, os.Stderr); err != nil {
		return err
	}
	if _, err := guest.Ensure(ctx, "", os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vmctl-prebuild: KubeVirt's node side, its images and the guest ready in %s\n", time.Since(start).Round(time.Second))
	// Last, when the e2e package has long built the newest release: the
	// others without cgo take most of their packages from that build.
	for _, r := range kubevirt.Releases {
		if r == kubevirt.Newest || r == kubevirt.NodeRelease {
			continue
		}
		if _, err := kubevirt.EnsureRelease(ctx, r, "", os.Stderr); err != nil {
			return err
		}
	}
	if _, err := node.EnsureBinaries(ctx, "", os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vmctl-prebuild: done in %s\n", time.Since(start).Round(time.Second))
	return nil
}
