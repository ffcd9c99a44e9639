package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
)

// NewCmdRollout returns `kubectl vmctl rollout`, with restart and status.
func NewCmdRollout(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Roll a prototype's change through the VMs derived from it",
		Long: `Roll a changed prototype through its VMs, with the workloads whose Pods run
its agents, as kubectl rollout does for Pods.

A derived VM keeps the spec it was made with. "rollout restart PROTOTYPE"
restarts every Deployment, StatefulSet and DaemonSet whose agents derive from
PROTOTYPE, so each new Pod's agent derives its VM afresh; "rollout status
PROTOTYPE" waits until each workload has rolled out and every Pod is Ready
with a VM of the VM revision its template pins. A Pod is Ready only while its VM is, so the workload's
strategy (maxUnavailable, maxSurge, partition) bounds how many VMs are down
at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdRolloutRestart(f, streams), NewCmdRolloutStatus(f, streams))
	return cmd
}

// findWorkloads finds the workloads of prototype in namespace, and says
// clearly when there are none: whether the prototype itself is there.
func findWorkloads(ctx context.Context, c kube.Clients, namespace, prototype string) ([]rollout.Workload, error) {
	workloads, err := rollout.Find(ctx, c, namespace, prototype)
	if err != nil || len(workloads) > 0 {
		return workloads, err
	}
	msg := fmt.Sprintf("no Deployment, StatefulSet or DaemonSet%s runs agents of prototype %s", inNamespace(namespace), prototype)
	if namespace != "" {
		_, err := c.KubeVirt.KubevirtV1().VirtualMachines(namespace).Get(ctx, prototype, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			msg += fmt.Sprintf(", and there is no VM %s%s: check the name, or pass -n or -A", prototype, inNamespace(namespace))
		}
	}
	return nil, errors.New(msg + "; kubectl vmctl status lists the agents")
}

// agentNamespaces are the namespaces where the workloads' agents make VMs.
func agentNamespaces(workloads []rollout.Workload) []string {
	var out []string
	for _, w := range workloads {
		if !slices.Contains(out, w.Agent.Namespace) {
			out = append(out, w.Agent.Namespace)
		}
	}
	return out
}

// validatePrototypeName says what is wrong with a PROTOTYPE argument.
func validatePrototypeName(name string) error {
	if name == "" || strings.ContainsAny(name, "/ ") {
		return fmt.Errorf("invalid prototype name %q: give the name of the prototype VM, with -n for its workloads' namespace", name)
	}
	return nil
}
