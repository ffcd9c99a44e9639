package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
)

// rolloutFieldManager owns the fields rollout restart sets.
const rolloutFieldManager = "kubectl-vmctl-rollout"

// RolloutRestartOptions are the options of `kubectl vmctl rollout restart`.
type RolloutRestartOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	// Now is time.Now outside tests: the restartedAt annotation.
	Now func() time.Time

	AllNamespaces bool

	prototype string
	namespace string
	dryRun    cmdutil.DryRunStrategy
	printer   printers.ResourcePrinter
	clients   kube.Clients

	genericiooptions.IOStreams
}

// NewRolloutRestartOptions returns RolloutRestartOptions with their defaults.
func NewRolloutRestartOptions(streams genericiooptions.IOStreams) *RolloutRestartOptions {
	return &RolloutRestartOptions{
		PrintFlags: genericclioptions.NewPrintFlags("restarted").WithTypeSetter(scheme.Scheme),
		Now:        time.Now,
		IOStreams:  streams,
	}
}

// NewCmdRolloutRestart returns `kubectl vmctl rollout restart`.
func NewCmdRolloutRestart(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdRolloutRestart(f, NewRolloutRestartOptions(streams))
}

func newCmdRolloutRestart(f kube.Factory, o *RolloutRestartOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "restart PROTOTYPE [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Restart the workloads of a prototype, so their VMs are derived from it afresh",
		Long: `Restart every Deployment, StatefulSet and DaemonSet whose agents derive VMs
from PROTOTYPE and hold a VM of an older prototype generation, the way
kubectl rollout restart does (the Pod template's
kubectl.kubernetes.io/restartedAt annotation), recording the generation it
rolls to (vmctl.kubevirt.io/restarted-for-generation) and the prototype's UID
(vmctl.kubevirt.io/restarted-for-prototype-uid: a prototype deleted and made
again starts again at generation 1). A workload already
restarted for the current generation, or whose VMs all derive from it, is
left alone: running it again when nothing changed does nothing.

Workloads are found by their agent's arguments (scaffold also labels them
vmctl.kubevirt.io/agent-prototype=PROTOTYPE): one LIST of each kind, then
the Pods and VMs of those that may need a restart.`,
		Example: `  # Change the prototype, then roll the change out and wait for it
  kubectl patch vm testvm --type merge -p '{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"512Mi"}}}}}}'
  kubectl vmctl rollout restart testvm
  kubectl vmctl rollout status testvm

  # What would be restarted, in every namespace
  kubectl vmctl rollout restart testvm -A --dry-run=server`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.ValidArgsFunction = CompletePrototypes(f)
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Restart the prototype's workloads in all namespaces.")
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// Complete resolves the prototype, the namespace, the dry-run strategy, the
// printer and the clients.
func (o *RolloutRestartOptions) Complete(f kube.Factory, cmd *cobra.Command, args []string) error {
	o.prototype = args[0]
	var err error
	if o.namespace, err = scopeNamespace(f, o.AllNamespaces); err != nil {
		return err
	}
	if o.dryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.printer, err = cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.dryRun).ToPrinter(); err != nil {
		return err
	}
	o.clients, err = f.Clients()
	return err
}

// Validate checks the prototype's name.
func (o *RolloutRestartOptions) Validate() error {
	return validatePrototypeName(o.prototype)
}

// Run restarts what needs it, one line per workload, and returns the
// failures together after trying every workload.
func (o *RolloutRestartOptions) Run(ctx context.Context) error {
	workloads, err := findWorkloads(ctx, o.clients, o.namespace, o.prototype)
	if err != nil {
		return err
	}
	gens, err := rollout.Prototypes(ctx, o.clients, workloads)
	if err != nil {
		return err
	}
	for _, note := range rollout.Notes(gens) {
		_, _ = fmt.Fprintf(o.ErrOut, "Warning: %s\n", note)
	}
	var vms []kubevirtv1.VirtualMachine // read once, when a workload needs them
	vmsRead := false
	var errs []error
	for _, w := range workloads {
		gen := gens[w.Prototype()]
		if gen.Generation < 0 {
			errs = append(errs, fmt.Errorf("%s: prototype %s not found; nothing to roll out", w, w.Prototype()))
			continue
		}
		if err := rollout.Restartable(w); err != nil {
			errs = append(errs, err)
			continue
		}
		var pods []corev1.Pod
		if !rollout.RestartedFor(w, gen) {
			if pods, err = rollout.Pods(ctx, o.clients, w); err != nil {
				errs = append(errs, err)
				continue
			}
			if !vmsRead {
				if vms, err = rollout.VMs(ctx, o.clients, agentNamespaces(workloads), o.prototype); err != nil {
					return err
				}
				vmsRead = true
			}
		}
		plan := rollout.PlanRestart(w, gen, pods, vms)
		if !plan.Restart {
			if o.PrintFlags.OutputFormat == nil || *o.PrintFlags.OutputFormat == "" {
				if _, err := fmt.Fprintf(o.Out, "%s unchanged (%s)\n", w.Name(), plan.Why); err != nil {
					return err
				}
			}
			continue
		}
		restarted, err := o.restart(ctx, w, gen)
		if err != nil {
			errs = append(errs, fmt.Errorf("restart %s: %w", w, err))
			continue
		}
		if err := o.printer.PrintObj(restarted, o.Out); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// restart patches w's Pod template, or for a client-side dry run changes a
// copy as the patch would, and returns the workload as it is then.
func (o *RolloutRestartOptions) restart(ctx context.Context, w rollout.Workload, gen rollout.Version) (runtime.Object, error) {
	now := o.Now()
	if o.dryRun == cmdutil.DryRunClient {
		w.Object = w.Object.DeepCopyObject()
		rollout.ApplyRestart(w.Template(), now, gen)
		return w.Object, nil
	}
	opts := metav1.PatchOptions{FieldManager: rolloutFieldManager}
	if o.dryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return rollout.Restart(ctx, o.clients.Kube, w, now, gen, opts)
}
