package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// runDoubles runs the virt-handler stand-in (VMIs whose launcher Pod runs go
// Running) and, given a kubectl-vmctl binary, the kubelet double (runs the
// real agent for vmctl agent Pods) until ctx ends.
func runDoubles(ctx context.Context, c *testcluster.Cluster, kv *kubevirt.KubeVirt, vmctlBinary string, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		defer cancel()
		errs[0] = doubles.RunVirtHandler(ctx, kv, log)
	})
	if vmctlBinary != "" {
		wg.Go(func() {
			defer cancel()
			errs[1] = doubles.NewKubelet(c.DoublesConfig, doubles.KubeletOptions{
				Binary: vmctlBinary,
				Dir:    filepath.Join(c.Dir, "kubelet"),
				Log:    log,
			}).Run(ctx)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
