// Command vmctl-cluster runs the loopback control plane of package testcluster,
// with KubeVirt's real virt-api and virt-controller (package kubevirt), for a
// person: `vmctl-cluster up` keeps one running until Ctrl-C, `make demo`
// runs `vmctl-cluster demo`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "vmctl-cluster",
		Short:         "Run a local Kubernetes control plane with fake nodes and KubeVirt's real virt-api and virt-controller for trying kubectl-vmctl",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(newCmdUp(), newCmdDemo())
	return cmd
}
