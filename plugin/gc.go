package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/gc"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// DefaultGCMinAge is how old an orphan must be before gc deletes it: an
// agent creates its VM right after it starts, so a young VM without a Pod
// is more likely a race than an orphan.
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
		Short:                 "Delete derived VMs whose agent Pod is gone",
		Long: `Delete the derived VMs whose agent Pod no longer exists, or exists with
another UID: VMs an agent could not delete because it was killed without its
grace period, or that live in another namespace than their Pod, where no
ownerReference can clean them up.

Only VMs with vmctl's labels, the Pod they belong to recorded and the name
an agent gives (<prototype>-<pod>) are considered; VMs younger than --min-age
are left alone, so a starting agent is never raced, and so is any VM that a
Pod gc reads names as its prototype (a prototype copied from a derived VM). Each deletion carries the VM's UID as precondition, so a VM
replaced in the meantime is not deleted. Reads one paged LIST of derived VMs
and one of Pods (whatever their labels).`,
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
	flags.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Collect orphans in all namespaces.")
	flags.DurationVar(&o.MinAge, "min-age", o.MinAge, "Leave VMs younger than this alone.")
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

// Run finds the orphans and deletes them, one line per VM. A VM already gone
// or replaced meanwhile is reported and skipped; other failures are
// returned together after the rest were tried.
func (o *GCOptions) Run(ctx context.Context) error {
	orphans, spared, err := gc.Find(ctx, o.clients, o.namespace, o.Now(), o.MinAge)
	if err != nil {
		return err
	}
	for _, s := range spared {
		// The Pod's name comes from an annotation anyone could have written.
		if _, err := fmt.Fprintf(o.ErrOut, "%s in %s namespace left alone: pod %s names it as its prototype\n",
			vmName(s.Name), s.Namespace, printers.EscapeTerminal(s.Pod.String())); err != nil {
			return err
		}
	}
	if len(orphans) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "No orphaned VMs found%s.\n", inNamespace(o.namespace))
		return err
	}
	var dryRun []string
	if o.dryRun == cmdutil.DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	var errs []error
	for _, orphan := range orphans {
		if o.dryRun != cmdutil.DryRunClient {
			err := gc.Delete(ctx, o.clients.KubeVirt, orphan, dryRun)
			var note string
			switch {
			case apierrors.IsNotFound(err):
				note = "already gone from " + orphan.Namespace + " namespace"
			case apierrors.IsConflict(err):
				note = "in " + orphan.Namespace + " namespace skipped: replaced since it was listed"
			case err != nil:
				errs = append(errs, fmt.Errorf("delete %s in %s namespace: %w", vmName(orphan.Name), orphan.Namespace, err))
				continue
			}
			if note != "" {
				if _, err := fmt.Fprintf(o.ErrOut, "%s %s\n", vmName(orphan.Name), note); err != nil {
					return err
				}
				continue
			}
		}
		if err := o.printDeleted(orphan); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// printDeleted prints a deletion as kubectl delete does, with the reason.
func (o *GCOptions) printDeleted(orphan gc.Orphan) error {
	if o.Output == "name" {
		_, err := fmt.Fprintln(o.Out, vmName(orphan.Name))
		return err
	}
	op := "deleted from " + orphan.Namespace + " namespace"
	switch o.dryRun {
	case cmdutil.DryRunClient:
		op += " (dry run)"
	case cmdutil.DryRunServer:
		op += " (server dry run)"
	}
	// The Pod name comes from an annotation anyone could have written.
	_, err := fmt.Fprintf(o.Out, "%s %s (%s)\n", vmName(orphan.Name), op, printers.EscapeTerminal(orphan.Why()))
	return err
}
