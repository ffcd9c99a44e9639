package status

import (
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// Doc is one problem of the PROBLEM column, as README.md's troubleshooting
// table and `kubectl vmctl status --help` explain it.
type Doc struct {
	// Problem is what the column shows, with capital letters (N, M, X, Y)
	// for the numbers and sizes it fills in. A state of package stuck is
	// followed by ": " and KubeVirt's (or, for a Pod that waits,
	// kube-scheduler's) cause.
	Problem string
	// Short is what --help says of it, in a few words.
	Short string
	// Help is what it means and what to do: the README row (Markdown, one
	// line).
	Help string
}

// Docs lists every problem status reports, and the wait it shows in the
// same column, stuck's states among them, in the order of the
// troubleshooting table.
func Docs() []Doc {
	docs := []Doc{{
		Problem: ProblemVMMissing,
		Short:   "the Pod runs (for 15s or more) but has no VM",
		Help: "the agent has not made its VM, and has recorded no Warning Event that says why: `curl` its `/readyz` or read its log for the reason; " +
			"`kubectl describe pod` shows the Pod's Events",
	}, {
		Problem: fill(problemAgentSaysFmt, "REASON", "MESSAGE"),
		Short:   "the Pod has no VM, and its agent says why",
		Help: "the agent has not made its VM and says why in its latest Warning Event on the Pod, whose reason and message follow, the message ending with what to do: " +
			"its VM revision cannot be read (`RevisionUnavailable`), its prototype shares a writable disk (`SharedVolumes`), " +
			"carries vmctl's markers or cannot be derived (`InvalidPrototype`: fix the prototype, then `kubectl vmctl rollout restart PROTOTYPE`), " +
			"a foreign VM holds the name (`VMConflict`), or the API server refused the VM (`CreateFailed`). " +
			"Status shows it as soon as the agent says it; `kubectl describe pod` shows all the Pod's Events",
	}, {
		Problem: ProblemOtherNode,
		Short:   "the VM's instance runs elsewhere than its Pod",
		Help:    "the VMI runs elsewhere than the Pod: someone changed the VM's affinity; delete the VM and the agent recreates it pinned",
	}, {
		Problem: fill(problemNotReadyFmt, "N"),
		Short:   "starting, and not ready for --not-ready-grace",
		Help: "the VM is starting and has not been ready for `status --not-ready-grace` " +
			"(5m by default; booting, pulling a containerDisk or importing a disk take minutes): " +
			"`kubectl describe vm <vm>` shows its conditions and Events, `kubectl get vmi <vm>` whether an instance exists yet",
	}}
	for _, s := range stuck.States() {
		docs = append(docs, Doc{Problem: s.Prefix, Short: s.Short, Help: s.Help})
	}
	return append(docs, []Doc{{
		Problem: ProblemPodGone,
		Short:   "the VM outlived its Pod (see kubectl vmctl gc)",
		Help: "no Pod exists of the namespace and name the VM records (status looks it up by that name, whatever its labels): " +
			"the agent died without cleanup and the garbage collector has not acted (e.g. the VM is in another namespace than the Pod, " +
			"or its owner was orphaned as in the [tour](docs/tour.md#orphans-gc)): `kubectl vmctl gc`. " +
			"gc leaves alone a VM that a live agent Pod names as its prototype and says so: someone copied a derived VM to make a prototype; " +
			"remove vmctl's `vmctl.kubevirt.io/` labels and annotations from it",
	}, {
		Problem: ProblemOrphanedVMI,
		Short:   "a VM's instance, and its guest, outlived the VM (see kubectl vmctl gc)",
		Help: "a VMI carries vmctl's labels, but no VM owns it and none of its name exists: its VM was deleted with `--cascade=orphan` " +
			"(propagationPolicy Orphan), which leaves the guest running. The agents' policy refuses such a delete from their tokens; a person or another controller did it. " +
			"If its Pod lives, its agent makes the VM again and KubeVirt adopts the instance; else `kubectl vmctl gc` deletes it",
	}, {
		Problem: fill(problemManyVMsFmt, "N"),
		Short:   "more VMs record the Pod than its agent made",
		Help: "N VMs record the Pod as theirs: its agent made one; the others are copies, or were made with its token where no admission policy holds it " +
			"(scaffolded with `--admission-policy=false`). gc leaves them, as their Pod lives: `kubectl delete vm` those its agent did not make " +
			"(the agent's is named in its Pod's `Created` Event)",
	}, {
		Problem: fill(problemElsewhereFmt, "NS"),
		Short:   "a VM records a live Pod whose agent makes its VM elsewhere",
		Help: "the VM records a Pod that runs, but that Pod's agent makes its VMs in namespace NS, not the VM's: someone made or copied the VM by hand. " +
			"It is not the Pod's VM, and gc leaves it: delete it, or remove vmctl's `vmctl.kubevirt.io/` labels and annotations from it",
	}, {
		Problem: ProblemPodReplaced,
		Short:   "a new Pod of that name has not replaced it yet",
		Help: "a Pod of the same name exists but with another UID (a StatefulSet recreated it) and its agent has not yet replaced the VM; " +
			"normally gone within seconds. If it stays, the new Pod's agent is failing: `kubectl describe pod`; `kubectl vmctl gc` deletes the old VM",
	}, {
		Problem: fill(problemRevisionFmt, "X", "Y"),
		Short:   "the VM records another VM revision than its Pod pins",
		Help: "the VM's `vmctl.kubevirt.io/vm-revision` is not the one its Pod pins: one of them was edited by hand. " +
			"`kubectl delete pod <pod>`: its workload makes a Pod of its template, whose agent makes the VM of the template's revision",
	}, {
		Problem: fill(problemReservationFmt, "X", "Y"),
		Short:   "the Pod's template holds an older size for its VM: kubectl vmctl rollout restart PROTOTYPE",
		Help: "the Pod's template holds another size for its VM than the VM's launcher Pod asks for: " +
			"the prototype, its instancetype, KubeVirt's configuration or its release changed since the template was written " +
			"([upgrades](docs/operations.md#upgrading-kubevirt)), " +
			"or the template was rolled back (`kubectl rollout undo`). The scheduler places the agents by the old size, so VMs may not fit where they land, " +
			"and such a VM does not move (its replacement would hold as little). `kubectl vmctl rollout restart PROTOTYPE` writes the new size; " +
			"where a VM does not fit, its Pod's `ReservationStale` Event says more ([sizes](docs/reservation.md#when-the-size-changes))",
	}, {
		Problem: "claim X Pending, Lost or missing",
		Short:   "a claim the VM keeps its disk on will not serve it",
		Help: "the Pod's own claim of one its StatefulSet makes per replica (`scaffold --replica-claim`), which its VM's disk is on, is Pending though the Pod is on a node " +
			"(no volume binds it: `kubectl describe pvc X`), Lost (its volume is gone, and the VM's data with it), or missing (deleted by hand; the StatefulSet makes it again " +
			"only for a new Pod: `kubectl delete pod <pod>`). The VM cannot start without it ([Stateful VMs](docs/scaffold.md#stateful-vms))",
	}, {
		Problem: ProblemProtoMissing,
		Short:   "the VM's prototype no longer exists",
		Help:    "the prototype VM was deleted or is in another namespace than `--proto-namespace` says; a Pod that pins a VM revision does not need it",
	}, {
		Problem: ProblemEvacuating,
		Short:   "a drain or KubeVirt's workload update is moving the VM with its Pod",
		Help: "a drain, or KubeVirt's workload update (`workloadUpdateMethods: [Evict]`) after an upgrade, tried to evict the VM's launcher Pod; KubeVirt refused (derived VMs have evictionStrategy External) and marked the VMI. " +
			"A Deployment's or StatefulSet's agent evicts its own Pod, and the VM goes with it, when the PodDisruptionBudget allows (Events `EvacuatingVM`, `EvacuationBlocked`); a DaemonSet's agent stops its VM at once. " +
			"If it stays, the PDB allows no disruption (`kubectl get pdb`), or the agents run without `--evict-on-evacuation` or `--stop-on-evacuation`: scaffold the workload again. " +
			"See [Node maintenance](docs/operations.md#node-maintenance-kubectl-drain)",
	}, {
		Problem: ProblemHeldByDrain,
		Short:   "stopped by a drain; waits for kubectl uncordon",
		Help: "the VM's node is cordoned and the VM may run only there: " +
			"a DaemonSet's VM stopped for a drain waits for `kubectl uncordon <node>`, then starts again by itself",
	}}...)
}

// fill puts args, in order, in the place of format's verbs (%s, %d).
func fill(format string, args ...string) string {
	for _, a := range args {
		i := strings.IndexByte(format, '%')
		if i < 0 || i+1 >= len(format) {
			break
		}
		format = format[:i] + a + format[i+2:]
	}
	return format
}
