package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// rolloutFieldManager owns the fields rollout restart sets.
const rolloutFieldManager = "kubectl-vmctl-rollout"

// NewCmdRollout returns `kubectl vmctl rollout`, with restart and status.
func NewCmdRollout(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Roll a prototype's change through the VMs derived from it",
		Long: `Roll a changed prototype through its VMs, with the workloads whose Pods run
its agents, as kubectl rollout does for Pods.

A derived VM keeps the spec it was made with. "rollout restart PROTOTYPE"
restarts every Deployment, StatefulSet and DaemonSet whose agents derive from
PROTOTYPE, so each new Pod's agent derives its VM afresh; "rollout status
PROTOTYPE" waits until every Pod is Ready with a VM of the prototype's
current generation. A Pod is Ready only while its VM is, so the workload's
strategy (maxUnavailable, maxSurge, partition) bounds how many VMs are down
at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdRolloutRestart(streams), NewCmdRolloutStatus(streams))
	return cmd
}

// RolloutRestartOptions are the options of `kubectl vmctl rollout restart`.
type RolloutRestartOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	// NewClients makes the clientsets; by default from ConfigFlags.
	NewClients ClientsFunc
	// Now is time.Now outside tests: the restartedAt annotation.
	Now func() time.Time

	AllNamespaces bool

	prototype string
	namespace string
	dryRun    cmdutil.DryRunStrategy
	printer   printers.ResourcePrinter
	clients   status.Clients

	genericiooptions.IOStreams
}

// NewRolloutRestartOptions returns RolloutRestartOptions with their defaults.
func NewRolloutRestartOptions(streams genericiooptions.IOStreams) *RolloutRestartOptions {
	o := &RolloutRestartOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		PrintFlags:  genericclioptions.NewPrintFlags("restarted").WithTypeSetter(scheme.Scheme),
		Now:         time.Now,
		IOStreams:   streams,
	}
	o.NewClients = clientsFromFlags(o.ConfigFlags)
	return o
}

// NewCmdRolloutRestart returns `kubectl vmctl rollout restart`.
func NewCmdRolloutRestart(streams genericiooptions.IOStreams) *cobra.Command {
	return NewCmdRolloutRestartWithOptions(NewRolloutRestartOptions(streams))
}

// NewCmdRolloutRestartWithOptions returns `kubectl vmctl rollout restart` bound to o.
func NewCmdRolloutRestartWithOptions(o *RolloutRestartOptions) *cobra.Command {
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
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.ValidArgsFunction = CompletePrototypes(o.ConfigFlags)
	f := cmd.Flags()
	o.ConfigFlags.AddFlags(f)
	o.PrintFlags.AddFlags(cmd)
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Restart the prototype's workloads in all namespaces.")
	cmdutil.AddDryRunFlag(cmd)
	RegisterNamespaceCompletion(cmd, o.ConfigFlags)
	return cmd
}

// Complete resolves the prototype, the namespace, the dry-run strategy, the
// printer and the clients.
func (o *RolloutRestartOptions) Complete(cmd *cobra.Command, args []string) error {
	o.prototype = args[0]
	var err error
	if o.namespace, err = scopeNamespace(o.ConfigFlags, o.AllNamespaces); err != nil {
		return err
	}
	if o.dryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.printer, err = cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.dryRun).ToPrinter(); err != nil {
		return err
	}
	o.clients, err = o.NewClients()
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
	gens, err := rollout.Versions(ctx, o.clients, workloads)
	if err != nil {
		return err
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
		if d, ok := w.Object.(*appsv1.Deployment); ok && d.Spec.Paused {
			errs = append(errs, fmt.Errorf("%s is paused: run kubectl rollout resume deployment/%s -n %s first", w, d.Name, d.Namespace))
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
	patch, err := rollout.RestartPatch(now, gen)
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: rolloutFieldManager}
	if o.dryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	apps := o.clients.Kube.AppsV1()
	ns, name := w.Meta().GetNamespace(), w.Meta().GetName()
	switch w.Object.(type) {
	case *appsv1.StatefulSet:
		return apps.StatefulSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	case *appsv1.DaemonSet:
		return apps.DaemonSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	default:
		return apps.Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	}
}

// findWorkloads finds the workloads of prototype in namespace, and says
// clearly when there are none: whether the prototype itself is there.
func findWorkloads(ctx context.Context, c status.Clients, namespace, prototype string) ([]rollout.Workload, error) {
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

// DefaultRolloutTimeout is rollout status's --timeout: wait for good, as
// kubectl rollout status does.
const DefaultRolloutTimeout = time.Duration(0)

// RolloutStatusOptions are the options of `kubectl vmctl rollout status`.
type RolloutStatusOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	// NewClients makes the clientsets; by default from ConfigFlags.
	NewClients ClientsFunc

	AllNamespaces bool
	Timeout       time.Duration
	Watch         bool

	prototype string
	namespace string
	clients   status.Clients

	genericiooptions.IOStreams
}

// NewRolloutStatusOptions returns RolloutStatusOptions with their defaults.
func NewRolloutStatusOptions(streams genericiooptions.IOStreams) *RolloutStatusOptions {
	o := &RolloutStatusOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		Timeout:     DefaultRolloutTimeout,
		Watch:       true,
		IOStreams:   streams,
	}
	o.NewClients = clientsFromFlags(o.ConfigFlags)
	return o
}

// NewCmdRolloutStatus returns `kubectl vmctl rollout status`.
func NewCmdRolloutStatus(streams genericiooptions.IOStreams) *cobra.Command {
	return NewCmdRolloutStatusWithOptions(NewRolloutStatusOptions(streams))
}

// NewCmdRolloutStatusWithOptions returns `kubectl vmctl rollout status` bound to o.
func NewCmdRolloutStatusWithOptions(o *RolloutStatusOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "status PROTOTYPE [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Wait until every VM of a prototype is ready and derived from its current generation",
		Long: `Show the rollout of PROTOTYPE's workloads and wait until it is done: each
workload rolled out (as kubectl rollout status says) and every one of its Pods
paired with a ready VM derived from the prototype's current generation. It
prints a line whenever a workload's progress changes, and exits 0 when all
are done, 1 when --timeout passes first or a rollout cannot finish (a
Deployment past its progress deadline, an OnDelete update strategy, the
workload deleted). It watches; it does not poll.`,
		Example: `  # Wait at most five minutes for testvm's fleet to run the new spec
  kubectl vmctl rollout status testvm --timeout 5m

  # Where it stands now, without waiting
  kubectl vmctl rollout status testvm --watch=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.ValidArgsFunction = CompletePrototypes(o.ConfigFlags)
	f := cmd.Flags()
	o.ConfigFlags.AddFlags(f)
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Follow the prototype's workloads in all namespaces.")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait before giving up, exit code 1; zero means forever.")
	f.BoolVarP(&o.Watch, "watch", "w", o.Watch, "Wait until the rollout is done; with --watch=false, print where it stands and exit 0.")
	RegisterNamespaceCompletion(cmd, o.ConfigFlags)
	return cmd
}

// Complete resolves the prototype, the namespace and the clients.
func (o *RolloutStatusOptions) Complete(args []string) error {
	o.prototype = args[0]
	var err error
	if o.namespace, err = scopeNamespace(o.ConfigFlags, o.AllNamespaces); err != nil {
		return err
	}
	o.clients, err = o.NewClients()
	return err
}

// Validate checks the prototype's name and the timeout.
func (o *RolloutStatusOptions) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative, not %v", o.Timeout)
	}
	return validatePrototypeName(o.prototype)
}

// Run prints the rollout's progress and, with --watch, waits until it is
// done or --timeout passes.
func (o *RolloutStatusOptions) Run(ctx context.Context) error {
	workloads, err := findWorkloads(ctx, o.clients, o.namespace, o.prototype)
	if err != nil {
		return err
	}
	if !o.Watch {
		return o.once(ctx, workloads)
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	last := make([]string, len(workloads))
	var failed error
	err = rollout.Watch(ctx, o.clients, workloads, func(progress []rollout.Progress) bool {
		done := true
		for i, p := range progress {
			if p.Err != nil {
				failed = p.Err
				return true
			}
			if p.Message != last[i] {
				last[i] = p.Message
				if _, err := fmt.Fprintln(o.Out, p.Message); err != nil {
					failed = err
					return true
				}
			}
			done = done && p.Done
		}
		return done
	})
	switch {
	case failed != nil:
		return failed
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timed out waiting for the condition")
	}
	return err
}

// once prints where each workload's rollout stands, read with LISTs.
func (o *RolloutStatusOptions) once(ctx context.Context, workloads []rollout.Workload) error {
	gens, err := rollout.Versions(ctx, o.clients, workloads)
	if err != nil {
		return err
	}
	vms, err := rollout.VMs(ctx, o.clients, agentNamespaces(workloads), o.prototype)
	if err != nil {
		return err
	}
	for _, w := range workloads {
		pods, err := rollout.Pods(ctx, o.clients, w)
		if err != nil {
			return err
		}
		p := rollout.Observe(w, gens[w.Prototype()], pods, vms)
		if p.Err != nil {
			return p.Err
		}
		if _, err := fmt.Fprintln(o.Out, p.Message); err != nil {
			return err
		}
	}
	return nil
}
