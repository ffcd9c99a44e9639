package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/styled"
)

// DefaultStatusRefresh is how often `status --watch` recomputes without
// events, so ages and grace periods move on.
const DefaultStatusRefresh = time.Second

// DefaultStatusMinRedraw is the least time between two redraws of `status
// --watch`: at most four a second, however many objects change, so a
// rollout of thousands of VMs neither floods a log nor spends the CPU on
// tables no one can read.
const DefaultStatusMinRedraw = 250 * time.Millisecond

// StatusOptions are the options of `kubectl vmctl status`.
type StatusOptions struct {
	PrintFlags *genericclioptions.PrintFlags

	AllNamespaces bool
	Selector      string
	Prototype     string
	Watch         bool
	ExitCode      bool
	Color         string
	// NotReadyGrace is how long a VM starting normally may be not ready
	// before that is a problem.
	NotReadyGrace time.Duration

	// Refresh is how often --watch recomputes without events.
	Refresh time.Duration
	// MinRedraw is the least time between two redraws of --watch.
	MinRedraw time.Duration
	// Now, Getenv and IsTerminal are time.Now, os.Getenv and
	// styled.IsTerminal outside tests.
	Now        func() time.Time
	Getenv     func(string) string
	IsTerminal func(io.Writer) bool

	query    status.Query
	clients  kube.Clients
	output   string
	printer  printers.ResourcePrinter
	color    bool
	terminal bool

	genericiooptions.IOStreams
}

// NewStatusOptions returns StatusOptions with their defaults.
func NewStatusOptions(streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{
		PrintFlags:    genericclioptions.NewPrintFlags(""),
		Color:         string(styled.ColorAuto),
		Refresh:       DefaultStatusRefresh,
		MinRedraw:     DefaultStatusMinRedraw,
		NotReadyGrace: status.NotReadyGrace,
		Now:           time.Now,
		Getenv:        os.Getenv,
		IsTerminal:    styled.IsTerminal,
		IOStreams:     streams,
	}
}

// NewCmdStatus returns `kubectl vmctl status`.
func NewCmdStatus(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdStatus(f, NewStatusOptions(streams))
}

func newCmdStatus(f kube.Factory, o *StatusOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "status [PROTOTYPE] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show agent Pods with their derived VMs, and what is wrong",
		Long: `Show each vmctl agent Pod with its derived VirtualMachine, the VM's status and
the node its instance runs on, and name what is wrong (where KubeVirt says
why, its cause follows a colon):

` + problemHelp(status.Docs()) + `
A Pod that waits for room is a wait, not a problem: the scheduler places it
once room comes, and --exit-code does not count it.

A VM is paired with the Pod it records (namespace, name and UID), so an agent
run in a Pod without scaffold's labels (say, started by hand) is not taken
for gone.

What holds for a whole prototype, not for one row, is said on stderr, once per
prototype, before the table: a guest that may take longer to shut down than
one of its agents waits (--delete-timeout), an evictionStrategy its VMs do not
run with, and a memory overhead that KubeVirt reports for one of its VMs
(VmiMemoryOverheadReport) other than vmctl's rule computes, so that its agents
hold the wrong room; and once per workload, that the prototype has changed
since the VM revision its Pods pin, with the rollout restart that rolls it
out. --watch says each once, or with each frame on a terminal.

Reads, at once, one paged LIST each of derived VMs, their VMIs and agent Pods,
selected by vmctl's and scaffold's labels (other VMs are never read), then one
LIST narrowed by name for each prototype and for each Pod a VM records that is
not among the agents; past 50 in a namespace, one LIST of that namespace
instead. Where agent Pods hold their VMs' room, also one LIST of the VMs'
launcher Pods, by label; where agents use their Pods' own claims (a
StatefulSet's, scaffold --replica-claim), one LIST of the namespace's
PersistentVolumeClaims, whose names and phases -o wide and -o json show; and,
where a VMI reports its memory overhead, one LIST of KubeVirt CRs (--watch:
once), without which status does not compare it.
Where agent Pods pin a VM revision, their prototype's revision now is taken
once, with one GET of KubeVirt's expand-spec for a prototype with an
instancetype or preference (none for another). --watch follows the rest with
informers, takes a revision again only when its prototype changed, and
redraws at most four times a second. It stops with the error status would
give when it cannot list or watch what it needs.`,
		Example: `  # Agents and VMs in the current namespace
  kubectl vmctl status

  # Only the VMs of prototype testvm, in every namespace, with more columns
  kubectl vmctl status testvm -A -o wide

  # Fail a script when anything is wrong
  kubectl vmctl status --exit-code

  # Follow changes
  kubectl vmctl status --watch`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.Complete(f, args)
			if err == nil {
				err = o.Validate()
			}
			if err == nil {
				err = o.Run(cmd.Context())
			}
			return o.exitError(err)
		},
	}
	o.PrintFlags.AddFlags(cmd)
	flags := cmd.Flags()
	flags.Lookup("output").Usage = "Output format. One of: (wide, name, json, yaml, jsonpath, jsonpath-as-json, jsonpath-file, go-template, go-template-file)."
	flags.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Show agents and VMs in all namespaces.")
	flags.StringVarP(&o.Selector, "selector", "l", o.Selector, "Label selector to narrow the agent Pods (e.g. app.kubernetes.io/instance=web). VMs without a selected Pod are then not shown.")
	flags.StringVar(&o.Prototype, "prototype", o.Prototype, "Show only the agents and VMs of this prototype name (same as the PROTOTYPE argument).")
	flags.BoolVarP(&o.Watch, "watch", "w", o.Watch, "After printing, follow changes: redraw on a terminal, print a new table on each change otherwise.")
	flags.BoolVar(&o.ExitCode, "exit-code", o.ExitCode, "Exit 1 when any row has a problem (2 on errors), else 0; a Pod that waits for room is no problem.")
	flags.StringVar(&o.Color, "color", o.Color, "Color the table: auto (on a terminal, unless NO_COLOR is set), always or never.")
	flags.DurationVar(&o.NotReadyGrace, "not-ready-grace", o.NotReadyGrace, "How long a VM that is starting may be not ready before that is a problem. A VM KubeVirt cannot start (unschedulable, image pull, missing PVC, ...) is a problem at once.")
	cmd.ValidArgsFunction = CompletePrototypes(f)
	return cmd
}

// exitError makes errors exit 2 under --exit-code, where 1 means problems.
func (o *StatusOptions) exitError(err error) error {
	if !o.ExitCode {
		return err
	}
	return withExitCode(2, err)
}

// Complete resolves the namespace, prototype, output, color and clients.
func (o *StatusOptions) Complete(f kube.Factory, args []string) error {
	ns, err := scopeNamespace(f, o.AllNamespaces)
	if err != nil {
		return err
	}
	proto, err := prototypeArg(args, o.Prototype)
	if err != nil {
		return err
	}
	o.query = status.Query{Namespace: ns, Prototype: proto, PodSelector: o.Selector}

	o.output = *o.PrintFlags.OutputFormat
	switch o.output {
	case "", "wide", "name":
	default:
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	mode, err := styled.ParseColorMode(o.Color)
	if err != nil {
		return err
	}
	o.terminal = o.IsTerminal(o.Out)
	o.color = styled.UseColor(mode, o.terminal, o.Getenv)

	o.clients, err = f.Clients()
	return err
}

// Validate checks flag combinations.
func (o *StatusOptions) Validate() error {
	if o.Watch && o.ExitCode {
		return fmt.Errorf("--watch runs until interrupted and has no exit code to give; drop --exit-code or --watch")
	}
	if o.Watch && o.output != "" && o.output != "wide" {
		return fmt.Errorf("--watch prints tables only; drop -o %s or --watch", o.output)
	}
	if o.Refresh <= 0 {
		return fmt.Errorf("refresh interval must be positive, not %v", o.Refresh)
	}
	if o.NotReadyGrace < 0 {
		return fmt.Errorf("--not-ready-grace must not be negative, not %v", o.NotReadyGrace)
	}
	if o.MinRedraw < 0 {
		return fmt.Errorf("least redraw interval must not be negative, not %v", o.MinRedraw)
	}
	return nil
}

// Run prints the status once, or follows it with --watch.
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.Watch {
		return o.watch(ctx)
	}
	inv, err := status.Load(ctx, o.clients, o.query)
	if err != nil {
		return err
	}
	rows := status.Pair(inv, o.Now(), o.NotReadyGrace)
	warn(rest.NewWarningWriter(o.ErrOut, rest.WarningWriterOptions{}), status.Warnings(inv, rows))
	if err := o.print(ctx, rows); err != nil {
		return err
	}
	if o.ExitCode && status.HasProblems(rows) {
		return &cmdutil.ExitError{Code: 1}
	}
	return nil
}

func (o *StatusOptions) print(ctx context.Context, rows []status.Row) error {
	switch o.output {
	case "name":
		return status.WriteNames(o.Out, rows)
	case "", "wide":
		if len(rows) == 0 {
			msg := noneFound(o.query)
			if o.query.Prototype != "" {
				// Status reads no VM but vmctl's and their prototypes: ask
				// for this one by name.
				exists, err := kube.PrototypeExists(ctx, o.clients.KubeVirt, o.query.Namespace, o.query.Prototype)
				if err != nil {
					return err
				}
				if !exists {
					msg += ", and " + noPrototype(o.query.Namespace, o.query.Prototype)
				}
			}
			_, err := fmt.Fprint(o.ErrOut, msg+".\n")
			return err
		}
		return status.WriteTable(o.Out, rows, o.Now(), o.tableOptions())
	}
	list, err := status.ToList(rows)
	if err != nil {
		return err
	}
	return o.printer.PrintObj(list, o.Out)
}

// warn hands warnings to h as the API server's Warning headers reach
// kubectl (warn-code 299): h, client-go's warning writer on ErrOut, prints
// them as kubectl does, before the output they come with, and leaves
// -o json|yaml|name machine-readable.
func warn(h rest.WarningHandler, warnings []status.Warning) {
	for _, w := range warnings {
		h.HandleWarningHeader(299, "", w.String())
	}
}

// noneFound says that status found nothing for q, without a full stop.
func noneFound(q status.Query) string {
	if q.Prototype == "" {
		return "No vmctl agents or derived VMs found" + inNamespace(q.Namespace)
	}
	return fmt.Sprintf("No vmctl agents or derived VMs of prototype %s found%s", q.Prototype, inNamespace(q.Namespace))
}

func (o *StatusOptions) tableOptions() status.TableOptions {
	return status.TableOptions{Wide: o.output == "wide", WithNamespace: o.AllNamespaces, Color: o.color}
}

// watch redraws the table in place on a terminal; elsewhere it prints a new
// table, after a blank line, whenever a row changes (ages alone do not
// count), so logs stay readable. Elsewhere it says each distinct warning
// once, before the first table it comes with; on a terminal, where a
// redraw clears the screen, each frame shows the warnings that hold, as it
// shows the table.
func (o *StatusOptions) watch(ctx context.Context) error {
	var last string
	once := rest.NewWarningWriter(o.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	opts := status.WatchOptions{Refresh: o.Refresh, MinInterval: o.MinRedraw}
	return status.Watch(ctx, o.clients, o.query, opts, func(inv *status.Inventory) error {
		now := o.Now()
		rows := status.Pair(inv, now, o.NotReadyGrace)
		warnings := status.Warnings(inv, rows)
		if !o.terminal {
			warn(once, warnings)
		}
		var buf bytes.Buffer
		if len(rows) == 0 {
			buf.WriteString(noneFound(inv.Query) + ".\n")
		} else if err := status.WriteTable(&buf, rows, now, o.tableOptions()); err != nil {
			return err
		}
		key := buf.String() + fmt.Sprint(warnings) // what a terminal's frame shows
		if !o.terminal {
			b, err := json.Marshal(rows)
			if err != nil {
				return err
			}
			key = string(b)
		}
		if key == last {
			return nil
		}
		first := last == ""
		last = key
		var err error
		switch {
		case o.terminal:
			// Home the cursor and clear the screen, as watch(1) does.
			if _, err = fmt.Fprint(o.Out, "\x1b[H\x1b[2J"); err == nil {
				warn(rest.NewWarningWriter(o.ErrOut, rest.WarningWriterOptions{}), warnings)
				_, err = o.Out.Write(buf.Bytes())
			}
		case first:
			_, err = o.Out.Write(buf.Bytes())
		default:
			_, err = fmt.Fprint(o.Out, "\n"+buf.String())
		}
		return err
	})
}

// vmName is a VM's name as kubectl's -o name prints it.
func vmName(name string) string { return "virtualmachine.kubevirt.io/" + name }
