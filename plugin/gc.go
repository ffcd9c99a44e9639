package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/gc"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// DefaultGCMinAge is how old an orphan must be before gc deletes it: an
// agent creates its VM right after it starts, so a young VM without a Pod
// is more likely a race than an orphan. So must a revision store before
// gc prunes it: a rollout writes it right before the template that names
// its new revision.
const DefaultGCMinAge = 60 * time.Second

// GCOptions are the options of `kubectl vmctl gc`.
type GCOptions struct {
	AllNamespaces bool
	MinAge        time.Duration
	Output        string
	// Now is time.Now outside tests.
	Now func() time.Time

	namespace string
	dryRun    cmdutil.DryRunStrategy
	clients   kube.Clients

	genericiooptions.IOStreams
}

// NewGCOptions returns GCOptions with their defaults.
func NewGCOptions(streams genericiooptions.IOStreams) *GCOptions {
	return &GCOptions{MinAge: DefaultGCMinAge, Now: time.Now, IOStreams: streams}
}

// NewCmdGC returns `kubectl vmctl gc`.
func NewCmdGC(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdGC(f, NewGCOptions(streams))
}

func newCmdGC(f kube.Factory, o *GCOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "gc [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Delete derived VMs whose agent Pod is gone, and VM revisions no template names",
		Long: `Delete the derived VMs whose agent Pod no longer exists, or exists with
another UID: VMs an agent could not delete because it was killed without its
grace period, or that live in another namespace than their Pod, where no
ownerReference can clean them up.

Only VMs with vmctl's labels and the Pod they belong to recorded are
considered, and of those only one that has that Pod for controller, as an
agent's VM in its Pod's namespace has, or, without one, bears the name an
agent gives (<prototype>-<pod>). gc trusts these marks, which anyone who may
write a VM's labels and annotations can put on it: run gc --dry-run=server
first, and read what it would delete. VMs younger than --min-age are left alone, so a starting agent is never
raced, and so is any VM that a Pod names as its prototype (a prototype
copied from a derived VM): with -n, before it deletes a VM that no
ownerReference ties to its Pod, gc reads the Pods of all namespaces, as a
fleet elsewhere may use it (--proto-namespace), and where it may not, it
leaves such VMs alone and says so. Each deletion carries the VM's UID as
precondition, so a VM replaced in the meantime is not deleted. Reads one
paged LIST of derived VMs and one of Pods (whatever their labels).

It also deletes the VMIs with vmctl's labels that no VM owns and of whose
name no VM exists: a VM deleted with --cascade=orphan leaves its instance,
and its guest, running. One whose Pod (by its label) lives is left to that
Pod's agent, which makes its VM again. Reads one LIST of those VMIs, and of
the VMs of their names.

Then prune the workloads' VM revision stores (VMRevisionStores
<workload>-vm-revisions): gc never deletes a VM revision that a retained
template names, that of a live Pod, of a Deployment or its ReplicaSets, of a
StatefulSet or DaemonSet or their ControllerRevisions, so kubectl rollout
undo finds every revision it can go back to. It drops the others, updating
the store on condition that it is still the one gc read; it deletes the
store of a workload that no longer exists, and one of whose revisions no
template names any. A store, or a revision in it, younger than --min-age is
left alone: a rollout writes it before the template that names it. Reads
one LIST of VMRevisionStores and, where there is a store, one each of
ControllerRevisions, Deployments, StatefulSets, DaemonSets and ReplicaSets.

gc never deletes a PersistentVolumeClaim. The claims a StatefulSet makes per
replica (scaffold --replica-claim), which its VMs keep their disks on,
outlive the VMs gc deletes: whether a claim stays when its replica is
scaled away or its StatefulSet deleted is the StatefulSet's
persistentVolumeClaimRetentionPolicy's to say, as for any StatefulSet.`,
		Example: `  # See what would be deleted in the current namespace
  kubectl vmctl gc --dry-run=client

  # Delete the orphans of all namespaces, asking the API server to check first
  kubectl vmctl gc -A --dry-run=server
  kubectl vmctl gc -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	flags := cmd.Flags()
	flags.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Collect orphans and VM revisions in all namespaces.")
	flags.DurationVar(&o.MinAge, "min-age", o.MinAge, "Leave VMs and revision stores younger than this alone.")
	flags.StringVarP(&o.Output, "output", "o", o.Output, "Output format. One of: (name).")
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// Complete resolves the namespace, the dry-run strategy and the clients.
func (o *GCOptions) Complete(f kube.Factory, cmd *cobra.Command) error {
	var err error
	if o.namespace, err = scopeNamespace(f, o.AllNamespaces); err != nil {
		return err
	}
	if o.dryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	o.clients, err = f.Clients()
	return err
}

// Validate checks the flags.
func (o *GCOptions) Validate() error {
	if o.MinAge < 0 {
		return fmt.Errorf("--min-age must not be negative, not %v", o.MinAge)
	}
	if o.Output != "" && o.Output != "name" {
		return fmt.Errorf("--output must be name, not %q", o.Output)
	}
	return nil
}

// Run finds the orphans and deletes them, one line per VM, then prunes the
// revision stores, one line per store. A VM or store already gone or
// replaced meanwhile is reported and skipped; other failures are returned
// together after the rest were tried.
func (o *GCOptions) Run(ctx context.Context) error {
	found, err := gc.Find(ctx, o.clients, o.namespace, o.Now(), o.MinAge)
	if err != nil {
		return err
	}
	for _, s := range found.Spared {
		name := vmName(s.Name)
		if s.Kind == gc.KindVMI {
			name = vmiName(s.Name)
		}
		// The Pod's name comes from an annotation or label anyone could have written.
		if _, err := fmt.Fprintf(o.ErrOut, "%s in %s namespace left alone: %s\n", name, s.Namespace, printers.EscapeTerminal(s.Why)); err != nil {
			return err
		}
	}
	for _, u := range found.Unreadable {
		if _, err := fmt.Fprintf(o.ErrOut, "%s in %s namespace left alone: %s\n", storeName(u.Name), u.Namespace, printers.EscapeTerminal(u.Err.Error())); err != nil {
			return err
		}
	}
	if len(found.Orphans) == 0 && len(found.OrphanVMIs) == 0 && len(found.Stores) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "No orphaned VMs or VMIs, nor unused VM revisions, found%s.\n", inNamespace(o.namespace))
		return err
	}
	var dryRun []string
	if o.dryRun == cmdutil.DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	var errs []error
	for _, orphan := range found.Orphans {
		if o.dryRun != cmdutil.DryRunClient {
			err := gc.Delete(ctx, o.clients.KubeVirt, orphan, dryRun)
			if skip, err := o.skipped(vmName(orphan.Name), orphan.Namespace, err); skip || err != nil {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		// The Pod name comes from an annotation anyone could have written.
		if err := o.printDone(vmName(orphan.Name), "deleted from", orphan.Namespace, printers.EscapeTerminal(orphan.Why())); err != nil {
			return err
		}
	}
	for _, orphan := range found.OrphanVMIs {
		if o.dryRun != cmdutil.DryRunClient {
			err := gc.DeleteVMI(ctx, o.clients.KubeVirt, orphan, dryRun)
			if skip, err := o.skipped(vmiName(orphan.Name), orphan.Namespace, err); skip || err != nil {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		// The Pod name comes from a label anyone could have written.
		if err := o.printDone(vmiName(orphan.Name), "deleted from", orphan.Namespace, printers.EscapeTerminal(orphan.Why())); err != nil {
			return err
		}
	}
	for _, a := range found.Stores {
		if o.dryRun != cmdutil.DryRunClient {
			err := gc.Collect(ctx, o.clients.Dynamic, a, dryRun)
			if skip, err := o.skipped(storeName(a.Name), a.Namespace, err); skip || err != nil {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		op := "pruned in"
		if a.Delete {
			op = "deleted from"
		}
		// The workload's name and the hashes come from what anyone could have written.
		if err := o.printDone(storeName(a.Name), op, a.Namespace, printers.EscapeTerminal(a.Why())); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// skipped says, of an object gc found gone or replaced when it came to
// delete it, that it skipped it, and reports true; another error it
// returns, naming the object.
func (o *GCOptions) skipped(name, namespace string, err error) (bool, error) {
	var note string
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err):
		note = "already gone from " + namespace + " namespace"
	case apierrors.IsConflict(err):
		note = "in " + namespace + " namespace skipped: replaced since it was listed"
	default:
		return false, fmt.Errorf("delete %s in %s namespace: %w", name, namespace, err)
	}
	_, err = fmt.Fprintf(o.ErrOut, "%s %s\n", name, note)
	return true, err
}

// printDone prints what gc did to the object name, as kubectl delete does,
// with the reason: "<name> deleted from <namespace> namespace (<why>)".
func (o *GCOptions) printDone(name, op, namespace, why string) error {
	if o.Output == "name" {
		_, err := fmt.Fprintln(o.Out, name)
		return err
	}
	op += " " + namespace + " namespace"
	switch o.dryRun {
	case cmdutil.DryRunClient:
		op += " (dry run)"
	case cmdutil.DryRunServer:
		op += " (server dry run)"
	}
	_, err := fmt.Fprintf(o.Out, "%s %s (%s)\n", name, op, why)
	return err
}

// vmiName is a VMI's name as kubectl's -o name prints it.
func vmiName(name string) string { return "virtualmachineinstance.kubevirt.io/" + name }

// storeName is a revision store's name as kubectl's -o name prints it.
func storeName(name string) string {
	return strings.ToLower(revision.StoreKind) + "." + revision.StoreGroup + "/" + name
}
