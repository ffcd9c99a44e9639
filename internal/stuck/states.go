package stuck

import "slices"

// State is one kind of Problem, with what the troubleshooting table
// (README.md) and `kubectl vmctl status --help` say of it, so that the
// words Of writes and the words that explain them have one source.
type State struct {
	// Reason is the Problem's Reason: its Event reason and /readyz word.
	Reason string
	// Prefix is what the Problem's Message starts with.
	Prefix string
	// Short is what --help says of it, in a few words.
	Short string
	// Help is what it means and what to do, as the README's troubleshooting
	// row says it (Markdown, one line).
	Help string
	// NoVM marks a state the agent finds before it makes its VM, which Of
	// never reports: `kubectl vmctl status` shows the Pod's VM missing,
	// and the agent's /readyz and Event name the state.
	NoVM bool
	// Waits marks the state of an agent Pod that waits (OfPod): it ends by
	// itself, so `status --exit-code` does not count it, and no agent runs
	// to post an Event or answer /readyz (Reasons leaves it out).
	Waits bool
}

// States lists every state Of and OfPod report, in the order of the
// troubleshooting table. Some share a Reason: a DataVolume refused and one failed are both
// VMDataVolumeFailed.
func States() []State {
	return []State{{
		Reason: ReasonWaitsForRoom, Prefix: WaitsForRoom, Waits: true,
		Short: "no node has room for its VM yet: a wait, not a problem",
		Help: "the agent Pod is Pending: no node has the room its VM needs, or none it may go to (kube-scheduler's reason follows the colon), so no VM is made yet. " +
			"A wait, not a fault: `status --exit-code` exits 0 for it, and the scheduler places the Pod by itself once room comes " +
			"(a VM goes, a node is added; the cluster autoscaler adds one for such a Pod). " +
			"For room sooner, scale the workload down or add nodes; `kubectl describe pod` shows the scheduler's `FailedScheduling` Events",
	}, {
		Reason: ReasonUnschedulable, Prefix: Unschedulable,
		Short: "it does not fit on its Pod's node",
		Help: "the VM's launcher Pod does not fit on the agent Pod's node, the only one the VM may run on; kube-scheduler's reason follows the colon. " +
			"A Deployment's or StatefulSet's agent evicts its own Pod after `--move-after` (5m) as the PodDisruptionBudget allows (Events `MovingVM`, `MoveBlocked`), " +
			"and the new Pod goes where the VM fits ([moves](docs/reservation.md#when-the-vm-cannot-run-on-its-node)); for a DaemonSet's, free room on the node. `kubectl describe vmi <vm>`",
	}, {
		Reason: ReasonPVCNotFound, Prefix: PVCNotFound,
		Short: "a PVC the prototype names does not exist",
		Help: "a `persistentVolumeClaim` volume of the prototype names a PVC that does not exist in the VM's namespace: " +
			"create it, or fix the prototype and `kubectl vmctl rollout restart PROTOTYPE`; `kubectl describe vmi <vm>`",
	}, {
		Reason: ReasonDataVolume, Prefix: DataVolumeCreate,
		Short: "the API server refused it (is CDI installed?)",
		Help: "the API server refused the DataVolume of the prototype's `dataVolumeTemplates` " +
			"(the cause follows; \"the server could not find the requested resource\" means CDI is not installed): install CDI or drop the template. " +
			"There is no VMI yet: `kubectl describe vm <vm>` shows the `FailedDataVolumeCreate` Event",
	}, {
		Reason: ReasonDataVolume, Prefix: DataVolumeFailed,
		Short: "CDI could not import or clone the VM's disk",
		Help:  "CDI could not import or clone the VM's disk: `kubectl get datavolumes -n <namespace>`, then `kubectl describe vm <vm>`",
	}, {
		Reason: ReasonImagePull, Prefix: ImagePull,
		Short: "the node cannot pull a containerDisk image",
		Help: "the node cannot pull a `containerDisk` image of the prototype (the cause follows): " +
			"check the image's name and the registry's credentials; `kubectl describe vmi <vm>`",
	}, {
		Reason: ReasonCrashLoop, Prefix: CrashLoop,
		Short: "its instance failed several times in a row",
		Help: "KubeVirt started the VM's instance and it failed, several times in a row; " +
			"it retries with growing pauses: `kubectl describe vm <vm>`",
	}, {
		Reason: ReasonLauncherRefused, Prefix: LauncherRefused,
		Short: "a quota, a LimitRange or a webhook refused it",
		Help: "the API server refused the VM's launcher Pod (a ResourceQuota, a LimitRange or an admission webhook; the cause follows): " +
			"`kubectl describe vmi <vm>`, `kubectl describe quota -n <namespace>`",
	}, {
		Reason: ReasonStartFailed, Prefix: StartFailed,
		Short: "virt-controller says why it cannot start it",
		Help:  "virt-controller could not start the VM (the cause follows): `kubectl describe vm <vm>`",
	}, {
		Reason: ReasonStopped, Prefix: Stopped,
		Short: "someone stopped it: virtctl start <vm>",
		Help: "someone stopped the VM (`virtctl stop` sets runStrategy Halted; `kubectl describe vm <vm>` shows it); " +
			"the agent does not undo that, and its Pod stays not ready: `virtctl start <vm>` " +
			"(or `kubectl patch vm <vm> --type merge -p '{\"spec\":{\"runStrategy\":\"Always\"}}'`), " +
			"or `kubectl delete vm <vm>` and the agent makes it again",
	}, {
		Reason: ReasonRevisionMissing, Prefix: RevisionMissing, NoVM: true,
		Short: "the Pod pins a revision its workload's store lacks",
		Help: "the agent Pod's template pins a VM revision that its workload's VMRevisionStore `<workload>-vm-revisions` does not hold " +
			"(pruned, or never rolled out), so the agent makes no VM and waits for it: " +
			"`kubectl vmctl rollout restart PROTOTYPE` pins a new one, or `kubectl rollout undo` goes back to a template whose revision is kept",
	}, {
		Reason: ReasonRevisionRewritten, Prefix: RevisionRewritten, NoVM: true,
		Short: "its workload's store holds the revision the Pod pins with other content",
		Help: "the VM revision the Pod's template pins is in its workload's VMRevisionStore with content that hashes to another revision: " +
			"someone who may write the store pruned it and added it again with other content after it was rolled out. " +
			"The agent makes no VM of it, and `kubectl vmctl diff` names it. " +
			"`kubectl vmctl rollout restart PROTOTYPE` pins the prototype's revision again, writing it anew, and replaces the Pods; " +
			"find out who rewrote it ([security](docs/security.md#a-rewritten-revision))",
	}, {
		Reason: ReasonNotPinned, Prefix: NotPinned, NoVM: true,
		Short: "the Pod's template pins no VM revision",
		Help: "the agent Pod's template names no VM revision (annotation `vmctl.kubevirt.io/vm-revision`, passed to the agent as `VMCTL_VM_REVISION`): " +
			"it was written or edited by hand. The agent derives VMs only from a revision its workload rolled out, never from the live prototype, so it makes none: " +
			"`kubectl vmctl rollout restart PROTOTYPE` pins the prototype's revision, or apply `kubectl vmctl scaffold`'s output for the workload again",
	}}
}

// Reasons lists the distinct Reasons of the States an agent reports (on
// /readyz and in Events: all but those that wait), in their order.
func Reasons() []string {
	var out []string
	for _, s := range States() {
		if !s.Waits && !slices.Contains(out, s.Reason) {
			out = append(out, s.Reason)
		}
	}
	return out
}
