package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/drift"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/styled"
)

// DiffOptions are the options of `kubectl vmctl diff`.
type DiffOptions struct {
	AllNamespaces bool
	Prototype     string
	Color         string
	// Getenv is os.Getenv outside tests.
	Getenv func(string) string

	namespace string
	color     bool
	clients   kube.Clients
	// external, when KUBECTL_EXTERNAL_DIFF names a program, holds what
	// each diff compares, for that program to show once all are compared.
	external *externalDiff

	genericiooptions.IOStreams
}

// NewDiffOptions returns DiffOptions with their defaults.
func NewDiffOptions(streams genericiooptions.IOStreams) *DiffOptions {
	return &DiffOptions{
		Color:     string(styled.ColorAuto),
		Getenv:    os.Getenv,
		IOStreams: streams,
	}
}

// NewCmdDiff returns `kubectl vmctl diff`. Like `kubectl diff` it exits 0
// without drift, 1 with drift and 2 on any error, flag errors included.
func NewCmdDiff(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdDiff(f, NewDiffOptions(streams))
}

func newCmdDiff(f kube.Factory, o *DiffOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "diff [PROTOTYPE] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show how derived VMs differ from what they derive from today",
		Long: `Re-derive every derived VM, for the Pod, namespace and node the VM records,
from the VM revision its Pod pins (the snapshot of the prototype that its
workload's revision store holds), and show a unified diff per VM that
differs: "-" lines are what the VM holds, "+" lines what the agent would
make today. Then print "N of M derived VMs drifted". A VM with vmctl's
markers that records no VM revision, which no agent makes (a copy of a
derived VM, or one edited by hand), is not compared: a warning names it,
and it counts neither as drift nor as an error.

Only what the derivation controls is compared: labels, annotations and spec.
Values the cluster fills in (defaults, firmware UUID, MAC addresses,
KubeVirt's bookkeeping annotations) and the prototype-generation and
prototype-uid annotations are not reported; neither is a map key added to a VM's spec by hand.

Each diff is printed as soon as its VM is compared: VMs are read page by page
of one LIST selected by vmctl's labels (other VMs are never read), and what
each page needs once: the revision stores of its VMs' namespaces, one LIST
of each by label.

Then the Deployments, StatefulSets and DaemonSets that scaffold wrote (one
LIST of each kind) are compared with their prototypes as they are now: where
a Pod template pins another VM revision than the prototype would now, a line
says that the prototype has changed since, and which kubectl vmctl rollout
restart rolls the change out, and a unified diff shows that change: "-"
lines are the pinned revision, "+" lines the one rollout restart would pin
(labels, annotations and spec; none when the store holds the pinned one no
more). "N of M workloads have prototype changes not rolled out" follows the
summary. Where the revision store holds the
revision a template pins with content that hashes to another (someone
pruned it and added it again with other content), a line says so, and
"N pin a rewritten VM revision" follows: the agents make no VM of it.
Each prototype is read once, by name, one LIST narrowed to each (past 50 in
a namespace, one LIST of that namespace instead), and KubeVirt expands one
with an instancetype or preference (one GET).

KUBECTL_EXTERNAL_DIFF, as for kubectl diff, names a program to show the
diffs with instead ("colordiff -N -u", "dyff between"): the documents each
diff compares go into two directories, LIVE (what a VM holds, or the
revision a workload pins) and MERGED (what its agent would make today, or
the revision rollout restart would pin), one file each named as kubectl
names objects, and the program runs once on the two, after every
comparison. Its exit status 1 means it found differences; above 1 is an
error.

Exit status: 0 no drift, 1 drift (a changed prototype not rolled out, or a
rewritten revision, included), 2 error (as kubectl diff; a PROTOTYPE that is not there, with no
VMs derived from it, is an error).`,
		Example: `  # Drift of every derived VM in the current namespace
  kubectl vmctl diff

  # Only the VMs of prototype testvm, in all namespaces
  kubectl vmctl diff testvm -A`,
		Args: func(cmd *cobra.Command, args []string) error {
			return withExitCode(2, cobra.MaximumNArgs(1)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return withExitCode(2, err)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withExitCode(2, err)
	})
	flags := cmd.Flags()
	flags.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Diff derived VMs in all namespaces.")
	flags.StringVar(&o.Prototype, "prototype", o.Prototype, "Diff only the VMs of this prototype name (same as the PROTOTYPE argument).")
	flags.StringVar(&o.Color, "color", o.Color, "Color the diff: auto (on a terminal, unless NO_COLOR is set), always or never.")
	cmd.ValidArgsFunction = CompletePrototypes(f)
	return cmd
}

// Complete resolves the namespace, prototype, color and clients.
func (o *DiffOptions) Complete(f kube.Factory, args []string) error {
	var err error
	if o.namespace, err = scopeNamespace(f, o.AllNamespaces); err != nil {
		return err
	}
	if o.Prototype, err = prototypeArg(args, o.Prototype); err != nil {
		return err
	}
	mode, err := styled.ParseColorMode(o.Color)
	if err != nil {
		return err
	}
	o.color = styled.UseColor(mode, styled.IsTerminal(o.Out), o.Getenv)
	o.clients, err = f.Clients()
	return err
}

// Run prints the diffs and the summary, and returns the exit status as an
// *cmdutil.ExitError when it is not 0: 1 for drift, 2 for errors.
func (o *DiffOptions) Run(ctx context.Context) error {
	return withExitCode(2, o.run(ctx))
}

func (o *DiffOptions) run(ctx context.Context) error {
	if command := o.Getenv(externalDiffEnv); command != "" {
		var err error
		if o.external, err = newExternalDiff(command); err != nil {
			return err
		}
		defer o.external.close()
	}
	checked, drifted, failed := 0, 0, 0
	sources := drift.NewSources(o.clients, o.namespace == "")
	err := sources.Each(ctx, o.namespace, o.Prototype, func(c drift.Check) error {
		if errors.Is(c.Err, drift.ErrNoRevision) {
			_, err := fmt.Fprintf(o.ErrOut, "Warning: %s/%s: %s\n", c.Namespace, c.Name, printers.EscapeTerminal(c.Err.Error()))
			return err
		}
		checked++
		switch {
		case c.Err != nil:
			failed++
			// The error names a prototype and Pod from annotations.
			_, err := fmt.Fprintf(o.ErrOut, "error: %s/%s: %s\n", c.Namespace, c.Name, printers.EscapeTerminal(c.Err.Error()))
			return err
		case c.Drifted():
			drifted++
			return o.show(vmFile+"."+c.Namespace+"."+c.Name, c.Result)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if checked == 0 && o.Prototype != "" {
		exists, err := kube.PrototypeExists(ctx, o.clients.KubeVirt, o.namespace, o.Prototype)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("no VMs derived from prototype %s%s, and %s", o.Prototype, inNamespace(o.namespace), noPrototype(o.namespace, o.Prototype))
		}
	}
	summary := fmt.Sprintf("%d of %d derived VMs drifted", drifted, checked)
	if failed > 0 {
		summary += fmt.Sprintf(", %d could not be compared", failed)
	}
	unrolled, rewritten, pinned, err := o.diffPins(ctx, sources)
	if err != nil {
		return err
	}
	if pinned > 0 {
		summary += fmt.Sprintf("; %d of %d workloads have prototype changes not rolled out", unrolled, pinned)
	}
	if o.external != nil {
		if err := o.external.run(ctx, o.Out, o.ErrOut); err != nil {
			return err
		}
	}
	if rewritten > 0 {
		summary += fmt.Sprintf("; %d pin a rewritten VM revision", rewritten)
	}
	if _, err := fmt.Fprintln(o.ErrOut, summary+inNamespace(o.namespace)); err != nil {
		return err
	}
	switch {
	case failed > 0:
		return fmt.Errorf("could not compare %d derived VMs; see the errors above", failed)
	case drifted > 0 || unrolled > 0 || rewritten > 0:
		return &cmdutil.ExitError{Code: 1}
	}
	return nil
}

// diffPins says, once for each workload that scaffold wrote (of
// o.Prototype or of any) whose Pod template pins a VM revision other than
// the one its prototype would pin now (prototype.Revise), that the
// prototype has changed since (revision.Unrolled), and of one whose
// revision store holds the revision it pins rewritten, that it does; it
// returns how many do each of how many pinned ones it compared. It
// reads the workloads (one LIST of each kind), the revision stores of
// their namespaces through sources, and their prototypes, each once, and
// asks KubeVirt to expand each that has an instancetype or preference. A
// workload whose prototype is gone, or cannot be expanded, is not
// compared with it (logged at -v=2).
func (o *DiffOptions) diffPins(ctx context.Context, sources *drift.Sources) (unrolled, rewritten, compared int, err error) {
	protos := kube.NewVMFinder(o.clients.KubeVirt, o.namespace == "")
	workloads, err := rollout.Find(ctx, o.clients, o.namespace, o.Prototype)
	if err != nil {
		return 0, 0, 0, err
	}
	var keys []types.NamespacedName
	var namespaces []string
	for _, w := range workloads {
		if w.Template().Annotations[contract.AnnotationVMRevision] != "" {
			keys = append(keys, w.Prototype())
			namespaces = append(namespaces, w.Meta().GetNamespace())
		}
	}
	if err := sources.ReadStores(ctx, namespaces); err != nil {
		return 0, 0, 0, err
	}
	if err := protos.Find(ctx, keys); err != nil {
		return 0, 0, 0, err
	}
	log := klog.FromContext(ctx)
	now := map[types.NamespacedName]string{}
	nowRevs := map[types.NamespacedName]*kubevirtv1.VirtualMachine{}
	for _, k := range keys {
		if _, done := now[k]; done {
			continue
		}
		now[k] = ""
		proto := protos.Get(k)
		if proto == nil {
			log.V(2).Info("Cannot tell whether the prototype changed since its workloads pinned it: it is gone", "prototype", k)
			continue
		}
		if nowRevs[k], now[k], err = prototype.Revise(ctx, o.clients.Expand, proto); err != nil {
			log.V(2).Info("Cannot tell whether the prototype changed since its workloads pinned it", "prototype", k, "err", err)
		}
	}
	for _, w := range workloads {
		pinned, current := w.Template().Annotations[contract.AnnotationVMRevision], now[w.Prototype()]
		name, namespace := w.Name(), ""
		if ns := w.Meta().GetNamespace(); ns != w.Prototype().Namespace {
			name += " in " + ns + " namespace"
		}
		if o.namespace == "" {
			namespace = w.Meta().GetNamespace()
		}
		store := contract.VMRevisionStore(&w.Template().Spec)
		if actual, ok := sources.Rewritten(w.Meta().GetNamespace(), store, pinned); ok && pinned != "" {
			compared++
			rewritten++
			restart := "kubectl vmctl rollout restart " + w.Prototype().Name
			if namespace != "" {
				restart += " -n " + namespace
			}
			msg := fmt.Sprintf("%s pins VM revision %s, which VMRevisionStore %s/%s holds rewritten: its content hashes to %s; `%s` writes it anew",
				name, pinned, w.Meta().GetNamespace(), store, actual, restart)
			if _, err := fmt.Fprintln(o.Out, printers.EscapeTerminal(msg)); err != nil {
				return 0, 0, 0, err
			}
			continue
		}
		if pinned == "" || current == "" {
			continue
		}
		compared++
		if pinned == current {
			continue
		}
		unrolled++
		// The revision comes from an annotation anyone could have written.
		msg := name + " " + revision.Unrolled([]string{pinned}, w.Prototype(), current, namespace)
		if _, err := fmt.Fprintln(o.Out, printers.EscapeTerminal(msg)); err != nil {
			return 0, 0, 0, err
		}
		file := revisionFile + "." + w.Meta().GetNamespace() + "." + strings.ReplaceAll(w.Name(), "/", ".")
		if err := o.printRevisionDiff(file, sources.Revision(w.Meta().GetNamespace(), pinned), nowRevs[w.Prototype()], pinned, current); err != nil {
			return 0, 0, 0, err
		}
	}
	return unrolled, rewritten, compared, nil
}

// printRevisionDiff shows, as file, what a rollout restart would change:
// the diff from the revision a template pins to the one the prototype
// would pin now (drift.RevisionDiff). Nothing when the store holds the
// pinned one no more (pruned): the line above says which it was.
func (o *DiffOptions) printRevisionDiff(file string, pinned, now *kubevirtv1.VirtualMachine, pinnedHash, nowHash string) error {
	if pinned == nil || now == nil {
		return nil
	}
	r, err := drift.RevisionDiff(pinned, now, pinnedHash, nowHash)
	if err != nil || !r.Drifted() {
		return err
	}
	return o.show(file, r)
}

// The names of the files a program named by KUBECTL_EXTERNAL_DIFF compares,
// before ".<namespace>.<name>": a derived VM, as kubectl names its kind's
// objects, and the revision a workload pins.
const (
	vmFile       = "kubevirt.io.v1.VirtualMachine"
	revisionFile = "vm-revision-of"
)

// show prints r's diff, or gives what r compares to the program
// KUBECTL_EXTERNAL_DIFF names, as file.
func (o *DiffOptions) show(file string, r drift.Result) error {
	if o.external == nil {
		return o.printDiff(r.Diff)
	}
	return o.external.add(file, r.Live, r.Derived)
}

// printDiff prints one unified diff, "-" lines red and "+" lines green when
// color is on. Lines are escaped: they hold labels and annotations.
func (o *DiffOptions) printDiff(diff string) error {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		text := printers.EscapeTerminal(strings.TrimSuffix(line, "\n"))
		tone := styled.Plain
		switch {
		case strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"):
			tone = styled.Plain
		case strings.HasPrefix(line, "@@"):
			tone = styled.Faint
		case strings.HasPrefix(line, "-"):
			tone = styled.Bad
		case strings.HasPrefix(line, "+"):
			tone = styled.Good
		}
		if _, err := fmt.Fprintln(o.Out, styled.Paint(text, tone, o.color)); err != nil {
			return err
		}
	}
	return nil
}
