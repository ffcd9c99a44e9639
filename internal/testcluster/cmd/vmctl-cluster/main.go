// Command vmctl-cluster runs the loopback control plane of package testcluster,
// with KubeVirt's real virt-api and virt-controller (package kubevirt), for a
// person: `vmctl-cluster up` keeps one running until Ctrl-C, `make demo`
// runs `vmctl-cluster demo`. Both exit 0 when Ctrl-C (SIGINT) or SIGTERM
// stopped them cleanly, 1 on an error; on a terminal a Ctrl-C reaches only
// vmctl-cluster, so `make demo` exits 0 too.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	giveBack := takeTerminal()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCmd().ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	stop()
	giveBack()
	switch {
	case err == nil:
	case interrupted && errors.Is(err, context.Canceled):
		// Ctrl-C before the cluster was up ends the build or the start, and
		// what was started is gone again: a clean stop, as it is later. The
		// error only lists the waits the interrupt cut short.
		fmt.Fprintln(os.Stderr, "interrupted; what was started is stopped and removed")
	default:
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
	cmd.AddCommand(newCmdUp(), newCmdDemo(), newCmdDemoReal())
	return cmd
}
