package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
)

// DefaultRolloutTimeout is rollout status's --timeout: wait for good, as
// kubectl rollout status does.
const DefaultRolloutTimeout = time.Duration(0)

// RolloutStatusOptions are the options of `kubectl vmctl rollout status`.
type RolloutStatusOptions struct {
	AllNamespaces bool
	Timeout       time.Duration
	Watch         bool

	prototype string
	namespace string
	clients   kube.Clients

	genericiooptions.IOStreams
}

// NewRolloutStatusOptions returns RolloutStatusOptions with their defaults.
func NewRolloutStatusOptions(streams genericiooptions.IOStreams) *RolloutStatusOptions {
	return &RolloutStatusOptions{Timeout: DefaultRolloutTimeout, Watch: true, IOStreams: streams}
}

// NewCmdRolloutStatus returns `kubectl vmctl rollout status`.
func NewCmdRolloutStatus(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutStatusOptions(streams)
	cmd := &cobra.Command{
		Use:                   "status PROTOTYPE [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Wait until a prototype's workloads have rolled out, each Pod with a ready VM of the VM revision it pins",
		Long: `Show the rollout of PROTOTYPE's workloads and wait until it is done: each
workload rolled out (as kubectl rollout status says) and every one of its Pods
paired with a ready VM of the VM revision its template pins. It
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
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.ValidArgsFunction = CompletePrototypes(f)
	flags := cmd.Flags()
	flags.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Follow the prototype's workloads in all namespaces.")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait before giving up, exit code 1; zero means forever.")
	flags.BoolVarP(&o.Watch, "watch", "w", o.Watch, "Wait until the rollout is done; with --watch=false, print where it stands and exit 0.")
	return cmd
}

// Complete resolves the prototype, the namespace and the clients.
func (o *RolloutStatusOptions) Complete(f kube.Factory, args []string) error {
	o.prototype = args[0]
	var err error
	if o.namespace, err = scopeNamespace(f, o.AllNamespaces); err != nil {
		return err
	}
	o.clients, err = f.Clients()
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
	vms, err := rollout.VMs(ctx, o.clients, agentNamespaces(workloads), o.prototype)
	if err != nil {
		return err
	}
	for _, w := range workloads {
		pods, err := rollout.Pods(ctx, o.clients, w)
		if err != nil {
			return err
		}
		p := rollout.Observe(w, pods, vms)
		if p.Err != nil {
			return p.Err
		}
		if _, err := fmt.Fprintln(o.Out, p.Message); err != nil {
			return err
		}
	}
	return nil
}
