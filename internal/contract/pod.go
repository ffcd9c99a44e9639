package contract

// EventComponent is the source.component and reportingComponent of the
// Events the agent records; the event policy admits no other.
const EventComponent = "vmctl-agent"

// ContainerName is the agent's container in the Pods scaffold writes: the
// one the agent resizes, and whose requests carry the reservation.
const ContainerName = "agent"

// Recommended labels (app.kubernetes.io/...) that scaffold puts on every
// object, the agent Pods among them, and their values there.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelVersion   = "app.kubernetes.io/version"

	// AppName is the value of LabelName.
	AppName = "vmctl"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "kubectl-vmctl"
	// ComponentAgent is the LabelComponent of the agent Pods and what serves them.
	ComponentAgent = "agent"
	// ComponentVMRevisions is the LabelComponent of a workload's revision
	// store, the VMRevisionStore that holds the VM revisions its
	// templates pin.
	ComponentVMRevisions = "vm-revisions"
)

// LabelWorkload names, on a revision store, the workload whose VM
// revisions it holds. The store does not carry LabelInstance, which the
// workload's selector matches.
const LabelWorkload = "vmctl.kubevirt.io/workload"

// AgentSelector is the label selector of vmctl agent Pods, as scaffold
// labels them.
const AgentSelector = LabelName + "=" + AppName + "," + LabelComponent + "=" + ComponentAgent

// LabelAgentPrototype names, on a workload and its Pod template, the
// prototype its agents derive their VMs from (derive.LabelValue of the
// name; the agent's arguments say its namespace), so that `kubectl vmctl
// rollout` and `kubectl get -l` find the workloads of a prototype. It is
// not LabelPrototype: Services select VMs' launcher Pods by that, and must
// not select the agents.
const LabelAgentPrototype = "vmctl.kubevirt.io/agent-prototype"

// Annotations of an agent Pod's template, which the agent reads through the
// downward API.
const (
	// AnnotationPlacement is the placement.Key of the prototype whose
	// placement the template carries: `rollout restart` writes the new
	// placement when it differs.
	AnnotationPlacement = "vmctl.kubevirt.io/placement"
	// AnnotationReservation is the reservation the template holds, as
	// contract.FormatResources writes it (EnvReservation): `rollout restart`
	// compares it with the prototype's reservation now and writes the new
	// one when it differs.
	AnnotationReservation = "vmctl.kubevirt.io/reservation"
	// AnnotationVMRevision names the VM revision the template pins: the
	// hash under which the workload's revision store holds the snapshot of
	// the prototype its agents derive from (EnvVMRevision). A derived VM
	// carries it too, naming the revision it was derived from.
	AnnotationVMRevision = "vmctl.kubevirt.io/vm-revision"
)

// Environment variables the agent reads; scaffold sets them through the
// downward API.
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvNodeName     = "NODE_NAME"
	EnvPodUID       = "POD_UID"
	// EnvRequestsCPU and EnvRequestsMemory are the container's requests now
	// (resourceFieldRef requests.cpu in millicores, requests.memory in
	// bytes): after a restart that follows its resize they are its own, and
	// it asks nothing more.
	EnvRequestsCPU    = "VMCTL_REQUESTS_CPU"
	EnvRequestsMemory = "VMCTL_REQUESTS_MEMORY"
	// EnvReservation is AnnotationReservation: the room the template holds
	// for the VM.
	EnvReservation = "VMCTL_RESERVATION"
	// EnvLauncherPriorityClass is AnnotationLauncherPriorityClass: the
	// priority class of the VM's launcher Pod.
	EnvLauncherPriorityClass = "VMCTL_LAUNCHER_PRIORITY_CLASS"
	// EnvVMRevision is AnnotationVMRevision: the revision the agent derives
	// its VM from, out of the store --vm-revisions names. Unset only in a
	// template written or edited by hand: its agents make no VM.
	EnvVMRevision = "VMCTL_VM_REVISION"
)

// Flags of `kubectl vmctl agent` that scaffold writes into the agent's
// arguments (as --name=value) and the agent binds.
const (
	FlagProtoNamespace     = "proto-namespace"
	FlagAllowSharedVolumes = "allow-shared-volumes"
	FlagDeleteTimeout      = "delete-timeout"
	FlagSubdomain          = "subdomain"
	FlagStopOnEvacuation   = "stop-on-evacuation"
	FlagEvictOnEvacuation  = "evict-on-evacuation"
	FlagOwnRequests        = "own-requests"
	FlagOwnLimits          = "own-limits"
	FlagMoveAfter          = "move-after"
	FlagStateDir           = "state-dir"
	FlagVMRevisions        = "vm-revisions"
	FlagReplicaClaims      = "replica-claims"
)

// The agent's state volume: an emptyDir, which lives as long as the Pod
// and through restarts of its containers, where the agent records the VM
// it makes (--state-dir).
const (
	StateVolume    = "vmctl-state"
	StateMountPath = "/run/vmctl"
)
