package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

func newCmdDemo() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a cluster, walk through kubectl-vmctl on it, and keep it running until Ctrl-C",
		Args:  cobra.NoArgs,
	}
	o := newUpOptions(cmd)
	o.addFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		return o.Run(cmd.Context(), func(ctx context.Context, c *testcluster.Cluster) error {
			return demo(ctx, o, c)
		})
	}
	return cmd
}

// demo is the hook for the walkthrough: it runs once the cluster (and, with a
// kubectl-vmctl binary, the doubles) are up and before waiting for Ctrl-C.
// Planned steps: apply a prototype VM, `kubectl vmctl scaffold` a Deployment
// for it, apply that, then show `kubectl vmctl status`.
func demo(_ context.Context, o *UpOptions, c *testcluster.Cluster) error {
	fmt.Fprintf(o.Out, "demo: the cluster is ready (KUBECONFIG=%s); the walkthrough is not wired up yet\n", c.Kubeconfig)
	return nil
}
