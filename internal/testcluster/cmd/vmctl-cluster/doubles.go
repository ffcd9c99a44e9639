package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
)

// runDoubles runs the virt-controller double (VMs to VMIs) and the kubelet
// double (runs the real agent for vmctl agent Pods) until ctx ends.
func runDoubles(ctx context.Context, c *testcluster.Cluster, vmctlBinary string, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		defer cancel()
		errs[0] = doubles.RunVirtController(ctx, c.RESTConfig, log)
	})
	wg.Go(func() {
		defer cancel()
		errs[1] = doubles.NewKubelet(c.RESTConfig, doubles.KubeletOptions{
			Binary: vmctlBinary,
			Dir:    filepath.Join(c.Dir, "kubelet"),
			Log:    log,
		}).Run(ctx)
	})
	wg.Wait()
	return errors.Join(errs...)
}
