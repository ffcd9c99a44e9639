// Command vmctl-prebuild builds, once, into the repository's .cache, what
// the e2e packages need after their first tests, so that they find it built
// instead of building it on their way. `make e2e` (hack/e2e.sh) runs it in
// the background, niced, while the e2e package runs on the newest KubeVirt
// release, which that package builds itself; a test that needs what is
// being built waits for it on the caches' locks, or builds what is missing
// itself.
//
//	vmctl-prebuild node      what the real node needs to boot real guests
//	                         (see package internal/e2e/realguest): the
//	                         virt-api and virt-controller of the release the
//	                         node runs (kubevirt.NodeRelease), its node-side
//	                         commands (kubevirt.EnsureNodeSide), which reuse
//	                         most of the packages that build compiled, the
//	                         virt-launcher and virt-handler images (package
//	                         images), the guest (package guest), and the
//	                         node's kubelet, kube-proxy and container
//	                         runtime (node.EnsureBinaries)
//	vmctl-prebuild releases  every other KubeVirt release but the newest,
//	                         for the tests that run on each release; best
//	                         once the newest is built, as those builds take
//	                         most of their packages from it
//	vmctl-prebuild           both; whatever it is given, it builds in this order
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
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

// steps are what vmctl-prebuild can build, in the order it builds them all.
var steps = []struct {
	name  string
	build func(context.Context) error
}{
	{"node", realNode},
	{"releases", otherReleases},
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	what := os.Args[1:]
	if len(what) == 0 {
		what = names
	}
	for _, w := range what {
		if !slices.Contains(names, w) {
			return fmt.Errorf("unknown argument %q: want one of %s, or nothing for all", w, strings.Join(names, ", "))
		}
	}
	for _, s := range steps {
		if !slices.Contains(what, s.name) {
			continue
		}
		start := time.Now()
		if err := s.build(ctx); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "vmctl-prebuild: %s done in %s\n", s.name, time.Since(start).Round(time.Second))
	}
	return nil
}

// realNode builds what the real node needs to boot real guests.
func realNode(ctx context.Context) error {
	if _, err := kubevirt.EnsureRelease(ctx, kubevirt.NodeRelease, "", os.Stderr); err != nil {
		return err
	}
	if _, err := images.EnsureNode(ctx, os.Stderr); err != nil {
		return err
	}
	if _, err := guest.Ensure(ctx, "", os.Stderr); err != nil {
		return err
	}
	_, err := node.EnsureBinaries(ctx, "", os.Stderr)
	return err
}

// otherReleases builds every KubeVirt release but the newest and the node's.
func otherReleases(ctx context.Context) error {
	for _, r := range kubevirt.Releases {
		if r == kubevirt.Newest || r == kubevirt.NodeRelease {
			continue
		}
		if _, err := kubevirt.EnsureRelease(ctx, r, "", os.Stderr); err != nil {
			return err
		}
	}
	return nil
}
