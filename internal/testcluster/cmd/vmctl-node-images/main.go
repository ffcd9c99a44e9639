// Command vmctl-node-images builds, once, what the real node needs to boot
// real guests (see package internal/e2e/realguest): virt-api and
// virt-controller of the release the node runs (kubevirt.NodeRelease), then
// its node-side commands (kubevirt.EnsureNodeSide), which reuse most of the
// packages the first build compiled, the virt-launcher and virt-handler
// images (package images) and the guest (package guest), into the
// repository's .cache. `make e2e` runs it in the background while the other
// packages' tests run; the package that needs the builds waits for them on
// the caches' locks, or builds what is missing itself.
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
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vmctl-node-images:", err)
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
	fmt.Fprintf(os.Stderr, "vmctl-node-images: KubeVirt's release and node side, its images and the guest ready in %s\n", time.Since(start).Round(time.Second))
	return nil
}
