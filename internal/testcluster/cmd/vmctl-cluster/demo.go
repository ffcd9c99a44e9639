package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// demoNamespace is where the walkthrough puts the prototype and its workloads:
// the kubeconfig's default, so the printed commands work as shown.
const demoNamespace = "default"

// demoTimeout bounds each wait of the walkthrough.
const demoTimeout = 2 * time.Minute

func newCmdDemo() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a cluster, walk through kubectl-vmctl on it, and keep it running until Ctrl-C",
		Args:  cobra.NoArgs,
	}
	o := newUpOptions(cmd)
	o.addFlags(cmd)
	var adapterBinary string
	cmd.Flags().StringVar(&adapterBinary, "adapter-binary", adapterBinary, "vmctl-metrics-adapter binary the autoscaling step runs (default: vmctl-metrics-adapter beside --vmctl-binary)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if o.VmctlBinary == "" {
			return fmt.Errorf("demo needs a kubectl-vmctl binary: run `make build` or pass --vmctl-binary")
		}
		if adapterBinary == "" {
			adapterBinary = filepath.Join(filepath.Dir(o.VmctlBinary), "vmctl-metrics-adapter")
		}
		if !fileExists(adapterBinary) {
			return fmt.Errorf("demo needs a vmctl-metrics-adapter binary, and %s is missing: run `make build` or pass --adapter-binary", adapterBinary)
		}
		// Begun before the cluster's own builds and start, niced: see
		// backgroundBuild.
		build := startMetricsServerBuild(cmd.Context(), o.ErrOut)
		return o.Run(cmd.Context(), func(ctx context.Context, c *testcluster.Cluster) error {
			err := demo(ctx, o, c, build, adapterBinary)
			if ctx.Err() != nil {
				return nil // Ctrl-C during the walkthrough: stop quietly
			}
			return err
		})
	}
	return cmd
}

// demo walks through kubectl-vmctl once the cluster and the doubles are up:
// a prototype VM, a DaemonSet of agents (one VM per node), a Deployment
// scaled from 2 to 4 (VMs follow the Pods), `kubectl vmctl status` along
// the way, and an HPA that scales the Deployment on its guests' CPU
// (demoRunner.autoscale). It returns so that Run keeps the cluster until
// Ctrl-C.
func demo(ctx context.Context, o *UpOptions, c *testcluster.Cluster, build *backgroundBuild, adapterBinary string) error {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return fmt.Errorf("finding testdata/testvm.yaml: %w", err)
	}
	r, err := newDemoRunner(o, c)
	if err != nil {
		return err
	}
	const proto = "testvm"

	if err := r.installCRD(ctx); err != nil {
		return err
	}
	r.step("A prototype VM: a template that stays Halted; agents derive running copies of it")
	if err := r.run(ctx, "kubectl", "apply", "-f", filepath.Join(root, "testdata", "testvm.yaml")); err != nil {
		return err
	}

	r.step("A DaemonSet of agents: one derived VM per node")
	if err := r.pipe(ctx, []string{"kubectl", "vmctl", "scaffold", "daemonset", proto}, []string{"kubectl", "apply", "-f", "-"}); err != nil {
		return err
	}
	if err := r.waitPaired(ctx, proto, "vmctl-"+proto, len(c.Nodes)); err != nil {
		return err
	}
	if err := r.run(ctx, "kubectl", "vmctl", "status"); err != nil {
		return err
	}

	r.step("A Deployment of agents: VMs follow its Pods as it scales")
	if err := r.pipe(ctx, []string{"kubectl", "vmctl", "scaffold", "deployment", proto, "--name", "web", "--replicas", "2"}, []string{"kubectl", "apply", "-f", "-"}); err != nil {
		return err
	}
	if err := r.waitPaired(ctx, proto, "web", 2); err != nil {
		return err
	}
	if err := r.run(ctx, "kubectl", "scale", "deployment/web", "--replicas", "4"); err != nil {
		return err
	}
	if err := r.waitPaired(ctx, proto, "web", 4); err != nil {
		return err
	}
	if err := r.run(ctx, "kubectl", "vmctl", "status"); err != nil {
		return err
	}
	r.step("KubeVirt's own virt-controller runs each VM as a VMI in a virt-launcher Pod on its agent's node")
	if err := r.run(ctx, "kubectl", "get", "vm,vmi"); err != nil {
		return err
	}
	if err := r.run(ctx, "kubectl", "get", "pods", "-o", "wide", "-l", "kubevirt.io=virt-launcher"); err != nil {
		return err
	}
	if err := r.autoscale(ctx, c, proto, "web", build, adapterBinary); err != nil {
		return err
	}

	r.printf("\nYour turn. The cluster keeps running; in another terminal:\n\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n  kubectl vmctl status -A\n  kubectl vmctl top\n  kubectl get hpa\n\n",
		c.Kubeconfig, filepath.Dir(o.VmctlBinary))
	return nil
}
