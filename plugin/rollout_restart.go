package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
)

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
	// storePrinter prints the revision stores: "configured" in place of
	// "restarted" by name, else as printer.
	storePrinter printers.ResourcePrinter
	clients      kube.Clients

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
		Short:                 "Roll a prototype's change out to its workloads' VMs",
		Long: `Pin every Deployment, StatefulSet and DaemonSet whose agents derive VMs from
PROTOTYPE to the prototype as it is now, and so roll the change out at the
pace of each workload's own strategy (maxUnavailable, maxSurge, partition)
and PodDisruptionBudgets, as kubectl rollout restart does.

A workload's Pod template pins a VM revision: a snapshot of the prototype,
its instancetype and preference expanded by KubeVirt, named by a hash of its
content (vmctl.kubevirt.io/vm-revision). Its agents derive their VMs from
that revision, held in the workload's revision store (the VMRevisionStore
WORKLOAD-vm-revisions), never from the live prototype: a prototype edit
reaches no VM, not even a scale-up's, until it is rolled out.

rollout restart takes the prototype's revision, adds it to each store that
lacks it (one patch; a revision the store holds never changes), then writes it into the template with the placement and the room
for its VMs computed from the same revision, stamps the restart
(kubectl.kubernetes.io/restartedAt) and records the change-cause that
kubectl rollout history shows. A workload that pins the prototype as it is
already is left alone: running it again when nothing changed does nothing.
kubectl rollout undo brings an earlier template, and so its revision, back.
A prototype that carries vmctl's own markers (a copy of a derived VM) is
refused, as scaffold refuses it: every agent would refuse its revision.
The same patch drops the revisions that neither the new nor the current
template, the newest revisionHistoryLimit old ones, nor a live Pod names, as
the controllers truncate their history; kubectl vmctl gc prunes the stores
of deleted workloads.

Workloads are found by their agent's arguments (scaffold also labels them
vmctl.kubevirt.io/agent-prototype=PROTOTYPE): one LIST of each kind.`,
		Example: `  # Change the prototype, then roll the change out and wait for it
  kubectl patch vm testvm --type merge -p '{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"512Mi"}}}}}}'
  kubectl vmctl rollout restart testvm
  kubectl vmctl rollout status testvm

  # What would be restarted, in every namespace
  kubectl vmctl rollout restart testvm -A --dry-run=server

  # What to commit to Git: the revision store and the workload, pinned
  kubectl vmctl rollout restart testvm --dry-run=client -o yaml`,
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
	o.storePrinter = o.printer
	if f := o.PrintFlags.OutputFormat; f == nil || *f == "" || *f == "name" {
		named := *o.PrintFlags.NamePrintFlags
		named.Operation = "configured"
		storeFlags := *o.PrintFlags
		// Each printer its own: a TypeSetterPrinter keeps the last printer
		// it wrapped.
		storeFlags.NamePrintFlags, storeFlags.TypeSetterPrinter = &named, printers.NewTypeSetter(scheme.Scheme)
		if o.storePrinter, err = cmdutil.PrintFlagsWithDryRunStrategy(&storeFlags, o.dryRun).ToPrinter(); err != nil {
			return err
		}
	}
	o.clients, err = f.Clients()
	return err
}

// Validate checks the prototype's name.
func (o *RolloutRestartOptions) Validate() error {
	return validatePrototypeName(o.prototype)
}

// Run pins what needs it, one line per workload, and returns the failures
// together after trying every workload.
func (o *RolloutRestartOptions) Run(ctx context.Context) error {
	workloads, err := findWorkloads(ctx, o.clients, o.namespace, o.prototype)
	if err != nil {
		return err
	}
	targets, err := rollout.Targets(ctx, o.clients, workloads)
	if err != nil {
		return err
	}
	for _, note := range rollout.Notes(targets) {
		_, _ = fmt.Fprintf(o.ErrOut, "Warning: %s\n", note)
	}
	var errs []error
	for _, w := range workloads {
		t := targets[w.Prototype()]
		if t.Missing {
			errs = append(errs, fmt.Errorf("%s: prototype %s not found; nothing to roll out", w, w.Prototype()))
			continue
		}
		if t.Refused != nil {
			errs = append(errs, fmt.Errorf("%s: rollout restart pins no revision its agents would refuse: %w", w, t.Refused))
			continue
		}
		if err := rollout.Restartable(w); err != nil {
			errs = append(errs, err)
			continue
		}
		plan := rollout.PlanRestart(w, t)
		var cur *unstructured.Unstructured
		if !plan.Restart && rollout.PinnedRevision(w) != "" {
			// What the store holds under the hash must be what it names.
			if cur, err = rollout.Store(ctx, o.clients.Dynamic, w.Meta().GetNamespace(), w.Meta().GetName()); err != nil {
				errs = append(errs, fmt.Errorf("restart %s: %w", w, err))
				continue
			}
			if p, ok := rollout.PlanRewrite(w, t, cur); ok {
				plan = p
				_, _ = fmt.Fprintf(o.ErrOut, "Warning: %s: %s\n", w, plan.Why)
			}
		}
		if !plan.Restart {
			if o.PrintFlags.OutputFormat == nil || *o.PrintFlags.OutputFormat == "" {
				if _, err := fmt.Fprintf(o.Out, "%s unchanged (%s)\n", w.Name(), plan.Why); err != nil {
					return err
				}
			}
			continue
		}
		if err := o.restart(ctx, w, t, cur); err != nil {
			errs = append(errs, fmt.Errorf("restart %s: %w", w, err))
		}
	}
	return errors.Join(errs...)
}

// restart pins t's revision in w's revision store, then w's template to
// it, and prints both as they are then; a client-side dry run changes
// copies as the writes would. The store goes first: the Pods of the new
// template find their revision there. cur is the store as read already,
// or nil to read it.
func (o *RolloutRestartOptions) restart(ctx context.Context, w rollout.Workload, t rollout.Target, cur *unstructured.Unstructured) error {
	var err error
	if cur == nil {
		if cur, err = rollout.Store(ctx, o.clients.Dynamic, w.Meta().GetNamespace(), w.Meta().GetName()); err != nil {
			return err
		}
	}
	store, changed, err := rollout.WithRevision(cur, w, t)
	if err != nil {
		return err
	}
	if cur != nil {
		// As the controllers truncate their history in the pass that adds
		// to it, the write that adds a revision drops those no retained
		// template names.
		past, limit, err := rollout.History(ctx, o.clients.Kube, w)
		if err != nil {
			return err
		}
		dropped, err := rollout.Truncate(store, cur, w, t, past, limit)
		if err != nil {
			return err
		}
		changed = changed || dropped
	}
	var dryRun []string
	if o.dryRun == cmdutil.DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	if changed {
		obj, err := store.Object()
		if err != nil {
			return err
		}
		if o.dryRun != cmdutil.DryRunClient {
			if obj, err = rollout.WriteStore(ctx, o.clients.Dynamic, cur, store, o.Now(), dryRun); err != nil {
				return err
			}
		}
		if err := o.storePrinter.PrintObj(obj, o.Out); err != nil {
			return err
		}
	}
	now := o.Now()
	var restarted runtime.Object
	if o.dryRun == cmdutil.DryRunClient {
		if restarted, err = rollout.Manifest(rollout.Restarted(w, now, t).Object); err != nil {
			return err
		}
	} else if restarted, err = rollout.Restart(ctx, o.clients.Kube, w, now, t, metav1.PatchOptions{DryRun: dryRun}); err != nil {
		return err
	}
	return o.printer.PrintObj(restarted, o.Out)
}
