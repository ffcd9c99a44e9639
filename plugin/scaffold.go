package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/cmdutil"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/rollout"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/version"
)

// ScaffoldOptions are the options of `kubectl vmctl scaffold`.
type ScaffoldOptions struct {
	Name               string
	ProtoNamespace     string
	Image              string
	Version            string
	Replicas           int32
	GracePeriod        int64
	Service            string
	PDB                string
	AdmissionPolicy    bool
	AllowSharedVolumes bool
	PodMonitor         bool
	// ReplicaClaims are --replica-claim's values (scaffold.ClaimsSyntax);
	// ClaimsWhenDeleted and ClaimsWhenScaled the StatefulSet's retention
	// policy of them.
	ReplicaClaims     []string
	ClaimsWhenDeleted string
	ClaimsWhenScaled  string
	Output            string
	// Strict makes a warning about the prototype an error.
	Strict bool
	// Reserve makes each agent Pod hold its VM's room until it makes the
	// VM (scaffold.Params.Reservation).
	Reserve bool
	// MoveAfter is the agents' --move-after, where they move
	// (scaffold.Params.Moves).
	MoveAfter time.Duration
	// Autoscale is --autoscale-min, --autoscale-max and --vm-cpu-percent;
	// a Max of 0 adds no HPA.
	Autoscale scaffold.Autoscale

	// replicasSet records an explicit --replicas, which a DaemonSet rejects.
	replicasSet bool
	// params is what Complete resolved from the flags and arguments.
	params scaffold.Params
	// clients read the prototype, unless clientsErr says why not.
	clients    kube.Clients
	clientsErr error

	genericiooptions.IOStreams
}

// NewScaffoldOptions returns ScaffoldOptions with their defaults.
func NewScaffoldOptions(streams genericiooptions.IOStreams) *ScaffoldOptions {
	v := version.Get().Version
	return &ScaffoldOptions{
		Version:         v,
		Image:           scaffold.DefaultImage(v),
		Replicas:        scaffold.DefaultReplicas,
		GracePeriod:     scaffold.DefaultGracePeriodSeconds,
		AdmissionPolicy: true,
		Reserve:         true,
		MoveAfter:       scaffold.DefaultMoveAfter,
		Autoscale:       scaffold.Autoscale{Min: 1, VMCPUPercent: scaffold.DefaultVMCPUPercent},
		Output:          "yaml",
		IOStreams:       streams,
	}
}

// NewCmdScaffold returns `kubectl vmctl scaffold`. It needs no cluster: f
// serves the namespace, and the one read of the prototype (see Run).
func NewCmdScaffold(f kube.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdScaffold(f, NewScaffoldOptions(streams))
}

// newCmdScaffoldCRD returns `kubectl vmctl scaffold crd`: what every fleet
// of a cluster shares, printed apart from any fleet's manifests.
func newCmdScaffoldCRD(streams genericiooptions.IOStreams) *cobra.Command {
	output := "yaml"
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Print the CustomResourceDefinition and ClusterRoles that every fleet of a cluster shares",
		Long: `Print what a cluster admin applies once, before the first fleet: the
CustomResourceDefinition of the VM revision stores (VMRevisionStore,
vmctl.kubevirt.io), which hold the VM revisions the workloads' templates pin,
and the ClusterRoles that add the stores to Kubernetes' view, edit and admin
roles. They belong to no fleet, so deleting one fleet's manifests leaves the
others' stores. Applying them needs cluster-admin rights.`,
		Example: `  # Once per cluster, before the first fleet
  kubectl vmctl scaffold crd | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeManifests(streams.Out, output, scaffold.ClusterObjects())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", output, "Output format. One of: (yaml, json).")
	return cmd
}

// writeManifests prints objs as output, yaml or json, says: what the
// scaffold commands that take no prototype print.
func writeManifests(w io.Writer, output string, objs []runtime.Object) error {
	switch output {
	case "yaml":
		return scaffold.WriteYAML(w, objs)
	case "json":
		return scaffold.WriteJSON(w, objs)
	}
	return fmt.Errorf("--output must be yaml or json, not %q", output)
}

func newCmdScaffold(f kube.Factory, o *ScaffoldOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scaffold deployment|daemonset|statefulset PROTOTYPE",
		Short: "Print the manifests that run copies of a prototype VM under a Deployment, DaemonSet or StatefulSet",
		Long: `Print the manifests that run copies of the prototype VirtualMachine PROTOTYPE,
one per agent Pod, ready for kubectl apply -f -.

The output holds a ServiceAccount; a Role and RoleBinding that let the agent read
only its workload's VM revision store, create, watch and delete
VirtualMachines and record events (none in the prototype's namespace, which
the agents never read); and the workload, whose Pods run "kubectl-vmctl agent PROTOTYPE" with a restricted
security context and carry Prometheus' scrape annotations for the agent's
/metrics. The workload and its Pods are labelled
vmctl.kubevirt.io/agent-prototype=PROTOTYPE, which "kubectl vmctl rollout"
finds them by. A StatefulSet also gets its headless Service, which selects
the VMs, not the agents: each VM gets its Pod's name as hostname, so
<pod>.<name>.<namespace>.svc resolves to the VM.

The VMs go where the workload goes: -n, else the kubeconfig's namespace, else
"default". Nothing is sent to the cluster; the prototype is read once, and
scaffold fails when it cannot be, as there is then no revision to pin. Its
placement (nodeSelector, affinity, tolerations, priority class, with its
instancetype's and preference's, as KubeVirt gives its VMs' launcher Pods)
goes into the Pod template, annotated vmctl.kubevirt.io/placement, so that
agents go where their VMs may run. It refuses a prototype that carries
vmctl's own markers (a copy of a derived VM), as the agents would, and says
which to remove. It warns on stderr, in the words the agents would use, when
they will refuse the prototype (it shares a writable disk), when its guest may take longer to shut
down than the Pod is given, and when the cluster has no CRD of the VM revision stores (see
"kubectl vmctl scaffold crd"). The manifests are printed all the same, unless --strict makes a
warning an error.

Each agent Pod asks for its VM's CPU and memory (what the scheduler counts
for the VM's virt-launcher Pod, computed from the prototype, its
instancetype and preference, and KubeVirt's configuration) on top of its
own, so it lands only where its VM fits and quotas count the VM; the agent
makes the VM while it holds that room, nominates the VM's launcher Pod to
its node and then resizes its Pod to its own 10m/32Mi, and its Role may do
that to its own Pod and its own VM's launcher Pod only; the launcher Pods
get a priority class NAME-launcher.NAMESPACE of the prototype's priority
that never preempts, which keeps their nominations (docs/reservation.md). This needs
Kubernetes 1.35 or later; on an older server, or with --reserve=false,
scaffold warns and the agents ask for their own only. When the VM's size
cannot be computed (a missing instancetype), scaffold fails.

Kinds: ` + scaffold.ValidKinds + `.

The workload's template pins a VM revision, a snapshot of the prototype that
its agents derive their VMs from, held in the VMRevisionStore NAME-vm-revisions
the output includes: a prototype edit reaches the VMs only through "kubectl
vmctl rollout restart", and "kubectl rollout undo" brings the earlier VMs back.
Its CustomResourceDefinition is installed once per cluster, apart from any
fleet: "kubectl vmctl scaffold crd | kubectl apply -f -".

By default the output includes ValidatingAdmissionPolicies and their bindings,
which are cluster-scoped: applying them needs cluster-admin rights. The policies confine the ServiceAccount to what an agent does: create the one VM derived
from the prototype for its own Pod, with no volume, device, network or
credential the prototype lacks, and delete its own Pod's VM; never change or
delete the prototype. Without cluster-admin, pass --admission-policy=false and
put the fleet in a namespace of its own (see docs/security.md).`,
		Example: `  # One VM per node from the prototype VM "testvm" in the current namespace
  kubectl vmctl scaffold daemonset testvm | kubectl apply -f -

  # Three VMs behind a Service on port 80, from a prototype in namespace "templates"
  kubectl vmctl scaffold deployment web -n web --proto-namespace templates \
    --replicas 3 --service 80:8080 | kubectl apply -f -

  # A StatefulSet that keeps two VMs up through drains, with the admission policy
  kubectl vmctl scaffold sts db --replicas 3 --pdb 2 --admission-policy | kubectl apply -f -

  # Review the manifests as a JSON List first
  kubectl vmctl scaffold deploy testvm -o json`,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []cobra.Completion{"deployment", "daemonset", "statefulset"}, cobra.ShellCompDirectiveNoFileComp
			}
			// PROTOTYPE is the second argument: complete it as the first.
			return CompletePrototypes(f)(cmd, args[1:], toComplete)
		},
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
	flags := cmd.Flags()
	flags.StringVar(&o.Name, "name", o.Name, `Name of the workload, ServiceAccount, Role and Services (default "vmctl-PROTOTYPE").`)
	flags.StringVar(&o.ProtoNamespace, "proto-namespace", o.ProtoNamespace, "Namespace of the prototype VM, if not the workload's.")
	flags.StringVar(&o.Image, "image", o.Image,
		"Container image of the agent. From source, 'make image' writes dist/kubectl-vmctl-image_VERSION_linux_ARCH.tar "+
			"and prints the image's name; load it with 'kind load image-archive FILE', 'minikube image load FILE' "+
			"or 'ctr -n k8s.io images import FILE' on each containerd node.")
	flags.Int32Var(&o.Replicas, "replicas", o.Replicas, "Number of agent Pods, and so of VMs, of a Deployment or StatefulSet.")
	flags.Int64Var(&o.GracePeriod, "grace-period", o.GracePeriod,
		"Seconds an agent Pod has to delete its VM when it stops (terminationGracePeriodSeconds); the agent gives up 10s before.")
	flags.StringVar(&o.Service, "service", o.Service, "Add a Service named NAME-vms in front of the VMs, as PORT[:TARGETPORT].")
	flags.StringVar(&o.PDB, "pdb", o.PDB, "Add a PodDisruptionBudget keeping MIN_AVAILABLE agent Pods (a number or a percentage) and so their VMs.")
	flags.BoolVar(&o.AdmissionPolicy, "admission-policy", o.AdmissionPolicy,
		"Add a cluster-scoped ValidatingAdmissionPolicy and binding that confine the ServiceAccount to creating and deleting its own Pods' VMs, derived from the prototype; applying them needs cluster-admin. --admission-policy=false leaves them out.")
	flags.BoolVar(&o.AllowSharedVolumes, "allow-shared-volumes", o.AllowSharedVolumes,
		"Let the agents derive VMs from a prototype with writable PersistentVolumeClaims, which all VMs then share.")
	flags.StringArrayVar(&o.ReplicaClaims, "replica-claim", o.ReplicaClaims,
		"For a StatefulSet: make the prototype's claim CLAIM per replica, as "+scaffold.ClaimsSyntax+" (a volumeClaimTemplate). "+
			"Each replica's VM uses its Pod's own claim, CLAIM-POD, in place of the prototype's, and keeps it across Pod replacements, "+
			"reschedules and scale-in as the StatefulSet keeps its Pods' claims. Repeat it for each claim.")
	flags.StringVar(&o.ClaimsWhenDeleted, "claims-when-deleted", "Retain",
		"With --replica-claim: Retain or Delete the replicas' claims when the StatefulSet is deleted (persistentVolumeClaimRetentionPolicy.whenDeleted).")
	flags.StringVar(&o.ClaimsWhenScaled, "claims-when-scaled", "Retain",
		"With --replica-claim: Retain or Delete a replica's claims when the StatefulSet scales it away (persistentVolumeClaimRetentionPolicy.whenScaled).")
	flags.BoolVar(&o.PodMonitor, "pod-monitor", o.PodMonitor,
		"Add a Prometheus Operator PodMonitor (monitoring.coreos.com/v1) that scrapes the agents' /metrics.")
	flags.StringVarP(&o.Output, "output", "o", o.Output, "Output format. One of: (yaml, json).")
	flags.BoolVar(&o.Strict, "strict", o.Strict, "Exit 1 without printing the manifests when the prototype draws a warning.")
	flags.BoolVar(&o.Reserve, "reserve", o.Reserve,
		"Have each agent Pod ask for its VM's CPU and memory (its virt-launcher Pod's requests, computed from the prototype) on top of its own, "+
			"so the scheduler and quotas count the VM where the agent lands, and hand them to the VM's launcher Pod once it waits for them. "+
			"Needs Kubernetes 1.35 or later; --reserve=false asks for the agent's own only.")
	flags.DurationVar(&o.MoveAfter, "move-after", o.MoveAfter,
		"For a Deployment or StatefulSet whose agents reserve their VM's size: how long a VM may stay unschedulable on its agent's node "+
			"before the agent evicts its own Pod (Eviction API, paced by PodDisruptionBudgets), so that a new Pod is placed where the VM fits. "+
			"0 never moves. A DaemonSet's agents only report.")
	flags.Int32Var(&o.Autoscale.Max, "autoscale-max", o.Autoscale.Max,
		"Add an HPA that scales the Deployment or StatefulSet on its guests' CPU, as kubectl vmctl autoscale makes one, up to this many Pods, and leave the workload's replicas to it. 0 adds none.")
	flags.Int32Var(&o.Autoscale.Min, "autoscale-min", o.Autoscale.Min, "With --autoscale-max: the HPA's minimum number of Pods.")
	flags.Int32Var(&o.Autoscale.VMCPUPercent, "vm-cpu-percent", o.Autoscale.VMCPUPercent,
		"With --autoscale-max: the HPA's target, the CPU the VMs use as a percentage of their vCPUs, averaged over the Pods.")
	RegisterNamespaceCompletion(cmd, f)
	cmd.AddCommand(newCmdScaffoldCRD(o.IOStreams), newCmdScaffoldMetricsAdapter(f, o.IOStreams))
	return cmd
}

// Complete reads the arguments, the namespace and the flags into scaffold.Params.
func (o *ScaffoldOptions) Complete(f kube.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		// With only a valid KIND given, show the command with that KIND.
		example := "daemonset"
		if len(args) == 1 {
			if k, err := scaffold.ParseKind(args[0]); err == nil {
				example = strings.ToLower(string(k))
			}
		}
		return fmt.Errorf("scaffold needs a KIND and a PROTOTYPE, got %d argument(s): run `kubectl vmctl scaffold %s PROTOTYPE`, with KIND one of %s",
			len(args), example, scaffold.ValidKinds)
	}
	kind, err := scaffold.ParseKind(args[0])
	if err != nil {
		return err
	}
	namespace, err := cmdutil.ContextNamespace(f)
	if err != nil {
		return err
	}
	p := scaffold.NewParams(kind, args[1], namespace)
	if o.Name != "" {
		p.Name = o.Name
	}
	p.ProtoNamespace = o.ProtoNamespace
	p.Image, p.Version = o.Image, o.Version
	p.Replicas, p.GracePeriodSeconds, p.MoveAfter = o.Replicas, o.GracePeriod, o.MoveAfter
	p.AdmissionPolicy, p.AllowSharedVolumes, p.PodMonitor = o.AdmissionPolicy, o.AllowSharedVolumes, o.PodMonitor
	if o.Service != "" {
		if p.Service, err = scaffold.ParseServicePort(o.Service); err != nil {
			return fmt.Errorf("--service: %w", err)
		}
	}
	for _, c := range o.ReplicaClaims {
		claim, err := scaffold.ParseReplicaClaim(c)
		if err != nil {
			return fmt.Errorf("--replica-claim: %w", err)
		}
		p.ReplicaClaims = append(p.ReplicaClaims, claim)
	}
	for _, r := range []struct {
		flag, value string
		dst         *appsv1.PersistentVolumeClaimRetentionPolicyType
	}{{"claims-when-deleted", o.ClaimsWhenDeleted, &p.ClaimsWhenDeleted}, {"claims-when-scaled", o.ClaimsWhenScaled, &p.ClaimsWhenScaled}} {
		if !cmd.Flags().Changed(r.flag) {
			continue
		}
		if len(o.ReplicaClaims) == 0 {
			return fmt.Errorf("--%s applies to the claims --replica-claim makes per replica: add --replica-claim, or drop --%s", r.flag, r.flag)
		}
		if *r.dst, err = scaffold.ParseRetention(r.value); err != nil {
			return fmt.Errorf("--%s: %w", r.flag, err)
		}
	}
	if o.PDB != "" {
		if p.PDBMinAvailable, err = scaffold.ParseMinAvailable(o.PDB); err != nil {
			return fmt.Errorf("--pdb: %w", err)
		}
	}
	o.replicasSet = cmd.Flags().Changed("replicas")
	if o.Autoscale.Max > 0 {
		if o.replicasSet {
			return fmt.Errorf("--replicas with --autoscale-max: the HPA sets the replicas, from --autoscale-min up; drop --replicas")
		}
		a := o.Autoscale
		p.Autoscale = &a
	} else if cmd.Flags().Changed("autoscale-min") || cmd.Flags().Changed("vm-cpu-percent") {
		return fmt.Errorf("--autoscale-min and --vm-cpu-percent shape the HPA that --autoscale-max adds: add --autoscale-max")
	}
	o.params = p
	// Scaffolding needs no cluster: without clients, Run only skips its
	// check of the prototype.
	o.clients, o.clientsErr = f.Clients()
	return nil
}

// Validate checks the output format and the resolved parameters.
func (o *ScaffoldOptions) Validate() error {
	switch o.Output {
	case "yaml", "json":
	default:
		return fmt.Errorf("--output must be yaml or json, not %q", o.Output)
	}
	if o.replicasSet && o.params.Kind == scaffold.KindDaemonSet {
		return fmt.Errorf("--replicas does not apply to a DaemonSet, which runs one Pod per node: drop it or scaffold a deployment")
	}
	if err := o.params.Validate(); err != nil {
		return fmt.Errorf("cannot scaffold %s: %w", strings.ToLower(string(o.params.Kind)), err)
	}
	return nil
}

// Run prints the manifests, after warnings about the prototype on ErrOut;
// with Strict, a warning is an error instead.
func (o *ScaffoldOptions) Run(ctx context.Context) error {
	warnings, notes, err := o.checkPrototype(ctx)
	if err != nil {
		return err
	}
	if o.Strict && len(warnings) > 0 {
		return fmt.Errorf("--strict: %s", strings.Join(warnings, "; "))
	}
	objs, err := scaffold.Build(o.params)
	if err != nil {
		return err
	}
	for _, w := range append(warnings, notes...) {
		_, _ = fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	if o.Output == "json" {
		return scaffold.WriteJSON(o.Out, objs)
	}
	return scaffold.WriteYAML(o.Out, objs)
}

// prototypeLookupTimeout bounds the reads of the prototype, its expanded
// spec, and its instancetype's and preference's placement: scaffold must
// not hang without a cluster.
const prototypeLookupTimeout = 5 * time.Second

// checkPrototype reads the prototype and pins the workload to its revision
// (prototype.Pin): the agents derive their VMs from that snapshot, and the
// Pods carry its placement, so the scheduler puts each agent where its VM
// may run, and its reservation (see reservation). It says, in the agents'
// words, what they will refuse, and whether the guest may take longer to
// shut down than the agent waits for it; in a note, that its VMs run with
// another evictionStrategy than it asks for. Without the prototype there is
// no revision to pin, and it errs.
func (o *ScaffoldOptions) checkPrototype(ctx context.Context) (warnings, notes []string, err error) {
	ns, name := o.params.PrototypeNamespace(), o.params.Prototype
	if o.clientsErr != nil {
		return nil, nil, fmt.Errorf("scaffold reads prototype %s/%s to pin the VMs to a revision of it: %w; run scaffold where the prototype can be read", ns, name, o.clientsErr)
	}
	ctx, cancel := context.WithTimeout(ctx, prototypeLookupTimeout)
	defer cancel()
	proto, err := o.clients.KubeVirt.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("prototype %s/%s not found: scaffold pins the VMs to a revision of the prototype, so create it first (or pass --proto-namespace where it lives)", ns, name)
	case err != nil:
		return nil, nil, fmt.Errorf("scaffold reads prototype %s/%s to pin the VMs to a revision of it: %w", ns, name, err)
	}
	pinned, err := prototype.Pin(ctx, o.clients, proto)
	if err != nil {
		return nil, nil, err
	}
	rev := pinned.Snapshot
	if msg := o.storeCRDMissing(); msg != "" {
		warnings = append(warnings, msg)
	}
	if err := derive.Refusal(rev, o.params.Namespace, o.params.DeriveOptions()); err != nil {
		// A pinned revision with vmctl's markers makes agents that make no
		// VM until a rollout restart, and no flag lets them: refused, as
		// the agents would refuse it.
		if _, marked := errors.AsType[*derive.MarkersError](err); marked {
			return nil, nil, fmt.Errorf("scaffold pins no revision its agents would refuse: %w", err)
		}
		warnings = append(warnings, err.Error())
	}
	if msg := derive.GracePeriodTooShort(rev, o.params.DeleteTimeout()); msg != "" {
		warnings = append(warnings, fmt.Sprintf("prototype %s/%s: %s", ns, name, msg))
	}
	// Every derived VM gets External on purpose: nothing to fix in the
	// prototype, so a note, which --strict lets pass.
	if msg := derive.EvictionStrategyOverridden(rev); msg != "" {
		notes = append(notes, fmt.Sprintf("prototype %s/%s: %s", ns, name, msg))
	}
	if pinned.PlacementErr != nil {
		notes = append(notes, fmt.Sprintf("prototype %s/%s: %v", ns, name, pinned.PlacementErr))
	}
	o.params.Snapshot, o.params.RevisionHash = rev, pinned.Hash
	stored, warning, err := o.storedRevisions(ctx, pinned.Hash)
	if err != nil {
		return nil, nil, err
	}
	if warning != "" {
		warnings = append(warnings, warning)
	}
	o.params.StoredRevisions = stored
	o.params.Placement, o.params.PlacementKey = &pinned.Placement, pinned.PlacementKey
	note, err := o.reservation(ctx, rev, pinned.PodNeeds)
	return warnings, append(append(notes, note...), o.nodeLocalClaims(ctx)...), err
}

// storedRevisions are the revisions the workload's revision store holds
// already, as stored, for the output to keep (Params.StoredRevisions): a
// prototype deleted and made again, alike, has the same hash but another
// UID, which the store would refuse to change. A revision the store holds
// rewritten (revision.Store.Verify) is left out, so the output holds it as
// it should be, with a warning that kubectl apply will refuse it. None,
// without error, where there is no store or no CRD of them.
func (o *ScaffoldOptions) storedRevisions(ctx context.Context, hash string) (map[string]any, string, error) {
	ns, name := o.params.Namespace, revision.StoreName(o.params.Name)
	u, err := rollout.Store(ctx, o.clients.Dynamic, ns, o.params.Name)
	if err != nil {
		return nil, "", fmt.Errorf("scaffold keeps the revisions the store holds: %w", err)
	}
	if u == nil {
		return nil, "", nil
	}
	stored, _, err := unstructured.NestedMap(u.Object, "spec", "revisions")
	if err != nil {
		return nil, "", fmt.Errorf("the revision store %s/%s: %w", ns, name, err)
	}
	s, err := revision.FromObject(u)
	if err != nil {
		return nil, "", err
	}
	if _, ok := stored[hash]; ok && s.Verify(hash) != nil {
		delete(stored, hash)
		return stored, fmt.Sprintf("the revision store %s/%s holds revision %s rewritten: kubectl apply will refuse to put it right; "+
			"`kubectl vmctl rollout restart %s` does", ns, name, hash, o.params.Prototype), nil
	}
	return stored, "", nil
}

// storeCRDMissing says, where the cluster serves no revision stores, that
// kubectl apply would make everything but the workload's store, whose
// revision the agents then wait for, and how to install the CRD every
// fleet shares; "" where the cluster serves them, or discovery cannot tell.
func (o *ScaffoldOptions) storeCRDMissing() string {
	gv := revision.StoreGVR.GroupVersion()
	if _, err := o.clients.Kube.Discovery().ServerResourcesForGroupVersion(gv.String()); !apierrors.IsNotFound(err) {
		return ""
	}
	return fmt.Sprintf("the cluster has no CRD %s, so kubectl apply would make all but the workload's revision store "+
		"and its agents no VM: install it once, as cluster-admin, with `kubectl vmctl scaffold crd | kubectl apply -f -`",
		gv.WithResource(revision.StoreResource).GroupResource())
}
