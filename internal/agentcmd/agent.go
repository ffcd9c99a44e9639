// Package agentcmd is the agent's command, `kubectl vmctl agent`, which
// kubectl-vmctl serves as a subcommand and vmctl-agent, the image's
// entrypoint, as its root. It links no cli-runtime, kubectl or lipgloss:
// each of the fleet's agents pays for their initialisation at its start.
package agentcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// DefaultTerminationLogPath is where Kubernetes reads a container's last words.
const DefaultTerminationLogPath = "/dev/termination-log"

// AgentOptions are the options of `kubectl vmctl agent`.
type AgentOptions struct {
	Prototype          string
	ProtoNamespace     string
	HostnameOverride   string
	AllowSharedVolumes bool
	Subdomain          string
	ReplicaClaims      []string
	StopOnEvacuation   bool
	EvictOnEvacuation  bool
	ProbeAddress       string
	DeleteTimeout      time.Duration
	OwnRequests        string
	OwnLimits          string
	MoveAfter          time.Duration
	StateDir           string
	StoreName          string
	Verbosity          int
	Profile            cmdutil.Profile

	// TerminationLogPath receives the error that stops the agent, when the
	// file exists (Kubernetes mounts it in every container).
	TerminationLogPath string
	// ServiceAccountNamespaceFile holds the Pod's namespace in a Pod.
	ServiceAccountNamespaceFile string
	// PodInfoNameFile holds the Pod's name where the original design's
	// downward-API volume is mounted.
	PodInfoNameFile string
	// LookupEnv, Hostname and Exit are os.LookupEnv, os.Hostname and os.Exit.
	LookupEnv func(key string) (string, bool)
	Hostname  func() (string, error)
	Exit      func(code int)

	config  agent.Config
	clients kube.Clients

	cmdutil.IOStreams
}

// NewAgentOptions returns AgentOptions with their defaults.
func NewAgentOptions(streams cmdutil.IOStreams) *AgentOptions {
	return &AgentOptions{
		ProbeAddress:                agent.DefaultProbeAddress,
		DeleteTimeout:               agent.DefaultDeleteTimeout,
		TerminationLogPath:          DefaultTerminationLogPath,
		ServiceAccountNamespaceFile: agent.ServiceAccountNamespaceFile,
		PodInfoNameFile:             agent.PodInfoNameFile,
		LookupEnv:                   os.LookupEnv,
		Hostname:                    os.Hostname,
		Exit:                        os.Exit,
		IOStreams:                   streams,
	}
}

// NewCmdAgent returns `kubectl vmctl agent`, the vmctl container's
// entrypoint. f is the agent's (kube.NewAgentFactory); kubectl's flags,
// which f reads, are bound by the caller, to the command or to its parent.
func NewCmdAgent(f kube.Factory, streams cmdutil.IOStreams) *cobra.Command {
	return newCmdAgent(f, NewAgentOptions(streams))
}

func newCmdAgent(f kube.Factory, o *AgentOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "agent PROTOTYPE",
		DisableFlagsInUseLine: true,
		Short:                 "Run this Pod's VM, derived from the prototype VM (the vmctl container's entrypoint)",
		Long: `Run this Pod's VirtualMachine, derived from the prototype VM PROTOTYPE.

The agent creates the VM <prototype>-<pod> pinned to the Pod's node, serves
/healthz and /readyz (ready while the VM's status.ready is true), recreates the
VM if someone deletes it, and deletes it when the Pod gets SIGTERM.

It learns who it is from the downward API: POD_NAME, POD_NAMESPACE, NODE_NAME
and POD_UID (the Pod's name also from /etc/podinfo/name, the downward-API file
of the original vmctl manifests). Without NODE_NAME or POD_UID it GETs its Pod
once. /metrics on the probe address serves Prometheus metrics.

` + stuckReasonsHelp(),
		Example: `  # The container's entrypoint, with args: ["testvm"]
  kubectl-vmctl agent testvm

  # Outside a Pod, acting as Pod vmctl-0 on node node-1
  NODE_NAME=node-1 POD_UID=0b6a... kubectl vmctl agent testvm --hostname-override vmctl-0 -n default`,
		// Arguments are checked in Complete, so mistakes reach the termination log.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.run(f, cmd, args)
			if err != nil {
				o.writeTerminationLog(err)
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		o.writeTerminationLog(err)
		return err
	})

	flags := cmd.Flags()
	flags.StringVar(&o.ProtoNamespace, contract.FlagProtoNamespace, o.ProtoNamespace, "Namespace of the prototype VM. Defaults to the namespace of the derived VM.")
	flags.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "Pod name to act as, instead of POD_NAME or the hostname. Mainly for running outside a Pod.")
	flags.BoolVar(&o.AllowSharedVolumes, contract.FlagAllowSharedVolumes, o.AllowSharedVolumes, "Derive VMs even when they would all write to the prototype's persistentVolumeClaim or dataVolume volumes.")
	flags.StringVar(&o.Subdomain, contract.FlagSubdomain, o.Subdomain,
		"For a StatefulSet's Pods: the headless Service that selects the VMs. The VM gets the Pod's name as hostname and this subdomain, so <pod>.<subdomain>.<namespace>.svc names it as it would the Pod.")
	flags.StringSliceVar(&o.ReplicaClaims, contract.FlagReplicaClaims, o.ReplicaClaims,
		"For a StatefulSet's Pods: the prototype's claims that the StatefulSet makes per Pod (volumeClaimTemplates of those names). "+
			"The VM uses the Pod's own claim, CLAIM-POD, in place of the prototype's, and so keeps its disk as the Pod keeps its claims.")
	flags.BoolVar(&o.StopOnEvacuation, contract.FlagStopOnEvacuation, o.StopOnEvacuation,
		"Stop the VM (delete its VMI, giving the guest its grace period) when a drain asks KubeVirt to evacuate it; KubeVirt starts it again once the node takes Pods. For agents a drain leaves in place: a DaemonSet's (kubectl drain --ignore-daemonsets). Needs get, list, watch and delete on virtualmachineinstances.")
	flags.BoolVar(&o.EvictOnEvacuation, contract.FlagEvictOnEvacuation, o.EvictOnEvacuation,
		"Evict the agent's own Pod through the Eviction API when KubeVirt asks to evacuate its VM: a drain, or KubeVirt's workload update (Evict) after an upgrade, which evicts only launcher Pods. "+
			"The workload's PodDisruptionBudget paces it, and the VM goes with the Pod. For a Deployment's or StatefulSet's agents. Needs list and watch on virtualmachineinstances and create on pods/eviction.")
	flags.StringVar(&o.ProbeAddress, "probe-address", o.ProbeAddress, "Address to serve /healthz, /readyz and /metrics on.")
	flags.DurationVar(&o.DeleteTimeout, contract.FlagDeleteTimeout, o.DeleteTimeout,
		"The shutdown's deadline, from the signal: a create still going on, the VM's deletion and the wait for it to be gone all end by then, and the agent exits 1 if the VM may outlive the Pod. Keep it under the Pod's terminationGracePeriodSeconds.")
	flags.StringVar(&o.OwnRequests, contract.FlagOwnRequests, o.OwnRequests,
		"The agent container's own requests, as cpu=10m,memory=32Mi, when the Pod asks for more to hold its VM's room: once the VM's launcher Pod waits for the room, "+
			"the agent resizes its Pod (pods/resize) to these, unless "+contract.EnvRequestsCPU+" and "+contract.EnvRequestsMemory+" (downward API) say it did already.")
	flags.StringVar(&o.OwnLimits, contract.FlagOwnLimits, o.OwnLimits, "The agent container's own limits, as cpu=100m,memory=64Mi, which the resize of --own-requests sets.")
	flags.DurationVar(&o.MoveAfter, contract.FlagMoveAfter, o.MoveAfter,
		"How long the VM may stay unschedulable on the Pod's node before the agent evicts its own Pod through the Eviction API, so that the workload's PodDisruptionBudget paces the move and the controller's new Pod is placed where the VM fits. 0 never moves: for a DaemonSet's agent, whose Pod cannot move, and for Pods that do not reserve their VM's size. Needs create on pods/eviction.")
	flags.StringVar(&o.StateDir, contract.FlagStateDir, o.StateDir,
		"A directory that lives as long as the Pod, an emptyDir volume, where the agent records the VM it makes, so that a restarted agent container follows that VM by name. "+
			"Without it, a starting agent lists the VMs labelled for its Pod to find one an earlier container made.")
	flags.StringVar(&o.StoreName, contract.FlagVMRevisions, o.StoreName,
		"The workload's revision store: the VMRevisionStore, in the Pod's namespace, that holds the VM revisions its templates pin. "+
			"When "+contract.EnvVMRevision+" (downward API) names the revision the Pod pins, the agent derives its VM from that revision, and never reads the prototype itself. "+
			"Needs get, list and watch on that VMRevisionStore.")
	flags.IntVarP(&o.Verbosity, "v", "v", o.Verbosity, "Log verbosity; 1 logs watch restarts.")
	o.Profile.AddFlags(flags)
	return cmd
}

// run runs Complete, Validate and Run, with the shutdown signals caught
// before anything else so nothing is created that a signal could orphan.
func (o *AgentOptions) run(f kube.Factory, cmd *cobra.Command, args []string) error {
	ctx, stop := agent.ShutdownContext(cmd.Context(), o.Exit)
	defer stop()
	if err := o.Complete(f, cmd, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	writeProfile, err := o.Profile.Start()
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	err = o.Run(ctx)
	if perr := writeProfile(); perr != nil && err == nil {
		err = fmt.Errorf("write the profile: %w", perr)
	}
	return err
}

// Complete resolves the Pod's identity, the namespaces and the clients.
func (o *AgentOptions) Complete(f kube.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("agent takes exactly one argument, the prototype VM's name, not %d; for example: kubectl vmctl agent testvm", len(args))
	}
	o.Prototype = args[0]

	id, err := agent.ResolveIdentity(agent.IdentitySources{
		HostnameOverride: o.HostnameOverride,
		LookupEnv:        o.LookupEnv,
		Hostname:         o.Hostname,
		ServiceAccountNamespace: func() (string, bool) {
			b, err := os.ReadFile(o.ServiceAccountNamespaceFile)
			return string(b), err == nil
		},
		PodInfoName: func() (string, bool) {
			b, err := os.ReadFile(o.PodInfoNameFile)
			return string(b), err == nil
		},
		KubeconfigNamespace: func() (string, error) { return cmdutil.ContextNamespace(f) },
	})
	if err != nil {
		return err
	}
	namespace := id.PodNamespace
	if ns, _ := cmd.Flags().GetString("namespace"); ns != "" {
		namespace = ns
	}
	protoNamespace := o.ProtoNamespace
	if protoNamespace == "" {
		protoNamespace = namespace
	}
	o.config = agent.Config{
		Prototype:          o.Prototype,
		PrototypeNamespace: protoNamespace,
		Namespace:          namespace,
		Pod:                id,
		AllowSharedVolumes: o.AllowSharedVolumes,
		Subdomain:          o.Subdomain,
		ReplicaClaims:      o.ReplicaClaims,
		StopOnEvacuation:   o.StopOnEvacuation,
		EvictOnEvacuation:  o.EvictOnEvacuation,
		ProbeAddress:       o.ProbeAddress,
		DeleteTimeout:      o.DeleteTimeout,
		MoveAfter:          o.MoveAfter,
		StateDir:           o.StateDir,
		StoreName:          o.StoreName,
	}
	if held, ok := o.LookupEnv(contract.EnvReservation); ok {
		o.config.Reservation = strings.TrimSpace(held)
	}
	if hash, ok := o.LookupEnv(contract.EnvVMRevision); ok {
		o.config.VMRevisionHash = strings.TrimSpace(hash)
	}
	if class, ok := o.LookupEnv(contract.EnvLauncherPriorityClass); ok {
		o.config.LauncherPriorityClass = strings.TrimSpace(class)
	}
	if o.config.OwnRequests, err = contract.ParseResources(o.OwnRequests); err != nil {
		return fmt.Errorf("--%s: %w", contract.FlagOwnRequests, err)
	}
	if o.config.OwnLimits, err = contract.ParseResources(o.OwnLimits); err != nil {
		return fmt.Errorf("--%s: %w", contract.FlagOwnLimits, err)
	}
	if o.config.Requests, err = agent.RequestsFromEnv(o.LookupEnv); err != nil {
		return err
	}
	o.clients, err = f.Clients()
	return err
}

// Validate checks the names and durations Complete resolved.
func (o *AgentOptions) Validate() error {
	if err := o.config.Validate(); err != nil {
		return fmt.Errorf("invalid agent configuration: %w", err)
	}
	return nil
}

// Run runs the agent until ctx is canceled, then deletes the VM.
func (o *AgentOptions) Run(ctx context.Context) error {
	// The logger writes from several goroutines and does not lock; ErrOut
	// need not be safe for that (a test's buffer is not).
	out := &lockedWriter{w: o.ErrOut}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(o.Verbosity)))
	ctx = klog.NewContext(ctx, logger)
	return agent.New(o.config, o.clients.KubeVirt, o.clients.Kube, o.clients.Dynamic).Run(ctx)
}

// stuckReasonsHelp names the /readyz words of a VM KubeVirt cannot start,
// and of one the agent cannot make from the revision its Pod pins.
func stuckReasonsHelp() string {
	return cmdutil.Wrap("When KubeVirt cannot start the VM, or the revision the Pod pins is missing, /readyz says why in one word ("+
		strings.Join(stuck.Reasons(), ", ")+
		") and a Warning Event of that reason gives the cause, as status's PROBLEM column does.", cmdutil.HelpWidth)
}

// writeTerminationLog leaves err where `kubectl describe pod` shows it, when
// the file is there; outside a container it is not, and nothing is written.
func (o *AgentOptions) writeTerminationLog(err error) {
	f, openErr := os.OpenFile(o.TerminationLogPath, os.O_WRONLY|os.O_TRUNC, 0)
	if openErr != nil {
		return
	}
	_, _ = f.WriteString(strings.TrimSpace(err.Error()) + "\n")
	_ = f.Close() // nothing left to tell anyone
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
