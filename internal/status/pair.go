package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

const (
	// MissingGrace is how long a running agent Pod may be without its VM
	// before status calls the VM missing: the agent creates it right after
	// it starts, and Load lists Pods after VMs.
	MissingGrace = 15 * time.Second
	// NotReadyGrace is how long a VM that is starting normally may be not
	// ready before status calls it a problem, unless told otherwise
	// (`status --not-ready-grace`): booting, pulling a containerDisk or
	// importing a disk take minutes, and a problem fails `status
	// --exit-code`. A VM stuck in a state KubeVirt does not leave by itself
	// (package stuck) is a problem at once.
	NotReadyGrace = 5 * time.Minute
)

// Problems status reports, in the PROBLEM column and in Row.Problems.
const (
	ProblemVMMissing    = "VM missing"
	ProblemOtherNode    = "VM on another node"
	ProblemPodGone      = "orphaned VM (pod gone)"
	ProblemPodReplaced  = "orphaned VM (pod replaced)"
	ProblemProtoMissing = "prototype missing"
	ProblemEvacuating   = "evacuating (drain or KubeVirt update)"
	ProblemHeldByDrain  = "held by a drain (node cordoned)"
	// ProblemOrphanedVMI: a VMI with vmctl's labels that no VM owns, and
	// no VM of its name exists: its VM was deleted leaving it behind
	// (propagationPolicy Orphan), and its guest runs on (gc deletes it).
	ProblemOrphanedVMI = "orphaned VMI (no VM)"
	problemNotReadyFmt = "VM not ready for %s"
	// problemReservationFmt: the Pod holds another size for its VM than
	// the VM's launcher Pod asks for (reserve.Stale): its template was
	// written for an older prototype, or rolled back.
	problemReservationFmt = "Pod reserves %s, its VM needs %s"
	// problemRevisionFmt: a pinned Pod's VM records another VM revision
	// than the Pod pins (hand edits; the agent makes it of the Pod's).
	problemRevisionFmt = "VM of revision %s, its Pod pins %s"
	// problemManyVMsFmt: more VMs record the Pod than the one its agent
	// made: copies, or VMs made with its token where no policy holds it.
	problemManyVMsFmt = "one of %d VMs of its Pod"
	// problemElsewhereFmt: a VM records a live Pod whose agent makes its
	// VMs in another namespace: not that agent's VM.
	problemElsewhereFmt = "not its Pod's: the Pod's agent makes its VMs in namespace %s"
	// problemRewrittenFmt: the revision store holds the revision the Pod
	// pins under its hash with other content (stuck.RevisionRewritten).
	problemRewrittenFmt = "%s: %s in VMRevisionStore %s hashes to %s; kubectl vmctl rollout restart %s"
	// problemNotPinnedFmt: the Pod's template pins no VM revision, so its
	// agent makes no VM (stuck.NotPinned).
	problemNotPinnedFmt = "%s: kubectl vmctl rollout restart %s"
)

// Row is one line of `kubectl vmctl status`: an agent Pod with its VM, a Pod
// without VM, or a VM without Pod. Field names are the stable JSON of
// `status -o json`.
type Row struct {
	// Namespace is the Pod's namespace, or the VM's when there is no Pod.
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod,omitempty"`
	PodUID    types.UID `json:"podUID,omitempty"`
	// Node is the Pod's node.
	Node string `json:"node,omitempty"`
	// Ready is the Pod's ready containers, as "1/1".
	Ready    string `json:"ready,omitempty"`
	PodReady bool   `json:"podReady,omitempty"`

	VM          string `json:"vm,omitempty"`
	VMNamespace string `json:"vmNamespace,omitempty"`
	// VMStatus is the VM's printableStatus.
	VMStatus string `json:"vmStatus,omitempty"`
	VMReady  bool   `json:"vmReady,omitempty"`
	// VMINode is the node the VM's instance runs on.
	VMINode string `json:"vmiNode,omitempty"`
	// VMIP is the VM instance's first address, as kubectl get vmi's IP
	// column shows it: what a user needs to reach the VM.
	VMIP string `json:"vmIP,omitempty"`

	// Claims are the Pod's own claims its VM keeps its disks on (a
	// StatefulSet's, --replica-claims), with their phase.
	Claims []Claim `json:"claims,omitempty"`

	Prototype          string `json:"prototype,omitempty"`
	PrototypeNamespace string `json:"prototypeNamespace,omitempty"`

	// Created is when the Pod, else the VM, was created: the AGE column.
	Created metav1.Time `json:"created"`
	// Problems names what is wrong; empty when nothing is.
	Problems []string `json:"problems,omitempty"`
	// Waiting says what a Pod waits for, which ends by itself (stuck.OfPod:
	// room for its VM): no problem, so `status --exit-code` does not count
	// it.
	Waiting string `json:"waiting,omitempty"`
}

// Pair matches agent Pods with derived VMs (by the Pod UID the VM records)
// and VMs with their VMIs (by name), and names each row's problems as of
// now; a VM starting normally may be not ready for notReadyGrace before
// that is a problem. A VM whose Pod is not an agent Pod but among
// inv.OwnerPods pairs with it all the same. Rows are sorted by namespace,
// Pod and VM.
func Pair(inv *Inventory, now time.Time, notReadyGrace time.Duration) []Row {
	q := inv.Query
	pods := map[types.UID]*corev1.Pod{}
	podNames := map[types.NamespacedName]*corev1.Pod{}
	for _, list := range [][]*corev1.Pod{inv.Pods, inv.OwnerPods} {
		for _, p := range list {
			if pods[p.UID] == nil {
				pods[p.UID] = p
				podNames[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
			}
		}
	}
	vmis := map[types.NamespacedName]*kubevirtv1.VirtualMachineInstance{}
	for _, vmi := range inv.VMIs {
		vmis[types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}] = vmi
	}
	// Prototypes are keyed by what derived VMs name, whatever their labels.
	protos := map[types.NamespacedName]*kubevirtv1.VirtualMachine{}
	for _, proto := range inv.Prototypes {
		protos[types.NamespacedName{Namespace: proto.Namespace, Name: proto.Name}] = proto
	}
	var derived []*kubevirtv1.VirtualMachine
	byPod := map[types.UID][]*kubevirtv1.VirtualMachine{}
	for _, vm := range inv.VMs {
		if !derive.IsAgentVM(vm) {
			continue // no Pod recorded, or not owned by it as an agent's VM is
		}
		o := derive.OriginOf(vm)
		if q.Prototype != "" && o.PrototypeName != q.Prototype {
			continue
		}
		derived = append(derived, vm)
		if p := pods[o.PodUID]; p != nil && p.Namespace == o.PodNamespace && vm.Namespace == vmNamespace(p) {
			byPod[p.UID] = append(byPod[p.UID], vm)
		}
	}

	launchers := map[types.NamespacedName]*corev1.Pod{}
	for _, l := range inv.Launchers {
		for _, r := range l.OwnerReferences {
			k := types.NamespacedName{Namespace: l.Namespace, Name: r.Name}
			if r.Kind == "VirtualMachineInstance" && l.DeletionTimestamp == nil &&
				(launchers[k] == nil || launchers[k].CreationTimestamp.Before(&l.CreationTimestamp)) {
				launchers[k] = l
			}
		}
	}

	claims := map[types.NamespacedName]*corev1.PersistentVolumeClaim{}
	for _, c := range inv.Claims {
		claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	p := pairer{now: now, notReadyGrace: notReadyGrace, vmis: vmis, protos: protos, podNames: podNames, launchers: launchers, claims: claims,
		rewritten: rewrittenPins(inv.Stores), says: agentSays(inv.Events)}
	var rows []Row
	shown := map[*kubevirtv1.VirtualMachine]bool{}
	for _, pod := range inv.Pods {
		if !q.InScope(pod.Namespace) {
			continue
		}
		agent, _ := contract.ParseAgent(pod)
		if q.Prototype != "" && agent.Prototype != q.Prototype && len(byPod[pod.UID]) == 0 {
			continue
		}
		if len(byPod[pod.UID]) == 0 {
			rows = append(rows, p.podRow(pod, agent))
			continue
		}
		for _, vm := range byPod[pod.UID] {
			shown[vm] = true
			r := p.vmRow(pod, vm)
			if n := len(byPod[pod.UID]); n > 1 {
				r.Problems = append(r.Problems, fmt.Sprintf(problemManyVMsFmt, n))
			}
			rows = append(rows, r)
		}
	}
	for _, vm := range derived {
		if shown[vm] || !q.InScope(vm.Namespace) {
			continue
		}
		o := derive.OriginOf(vm)
		pod := pods[o.PodUID]
		if pod != nil && pod.Namespace != o.PodNamespace {
			pod = nil
		}
		// With a Pod selector, an unpaired VM's Pod may just be unselected.
		if pod == nil && q.PodSelector != "" {
			continue
		}
		if pod != nil && vm.Namespace != vmNamespace(pod) {
			r := p.vmRow(nil, vm)
			r.Problems = []string{fmt.Sprintf(problemElsewhereFmt, vmNamespace(pod))}
			rows = append(rows, r)
			continue
		}
		rows = append(rows, p.vmRow(pod, vm))
	}
	if q.PodSelector == "" {
		rows = append(rows, orphanedVMIs(inv, podNames)...)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.VMNamespace, b.VMNamespace), cmp.Compare(a.VM, b.VM))
	})
	return rows
}

type pairer struct {
	now           time.Time
	notReadyGrace time.Duration
	vmis          map[types.NamespacedName]*kubevirtv1.VirtualMachineInstance
	protos        map[types.NamespacedName]*kubevirtv1.VirtualMachine
	podNames      map[types.NamespacedName]*corev1.Pod
	// launchers are the newest launcher Pod of each VM, by the VM's name.
	launchers map[types.NamespacedName]*corev1.Pod
	claims    map[types.NamespacedName]*corev1.PersistentVolumeClaim
	// rewritten are, by revision store, the revisions it holds rewritten.
	rewritten map[types.NamespacedName]map[string]string
	// says is, by Pod UID, what its agent's latest Warning Event says
	// (agentSays).
	says map[types.UID]string
}

// vmNamespace is where pod's agent makes its VM: where its arguments say
// (-n), or, for a Pod that is no agent's, its own namespace.
func vmNamespace(pod *corev1.Pod) string {
	if a, ok := contract.ParseAgent(pod); ok {
		return a.Namespace
	}
	return pod.Namespace
}

// rewrittenProblem names the revision pod pins when the store its agent
// reads holds it rewritten, or "".
func (p pairer) rewrittenProblem(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	pins, store := pod.Annotations[contract.AnnotationVMRevision], contract.VMRevisionStore(&pod.Spec)
	actual, ok := p.rewritten[types.NamespacedName{Namespace: pod.Namespace, Name: store}][pins]
	if pins == "" || !ok {
		return ""
	}
	a, _ := contract.ParseAgent(pod)
	return fmt.Sprintf(problemRewrittenFmt, stuck.RevisionRewritten, pins, pod.Namespace+"/"+store, actual, a.Prototype)
}

// podRow is a Pod without VM.
func (p pairer) podRow(pod *corev1.Pod, agent contract.Agent) Row {
	r := podFields(pod)
	r.Prototype, r.PrototypeNamespace = agent.Prototype, agent.PrototypeNamespace
	// Why the VM is missing, where status can tell.
	if rw := cmp.Or(p.rewrittenProblem(pod), notPinned(pod)); rw != "" {
		r.Problems = append(r.Problems, rw)
	} else if says := p.says[pod.UID]; says != "" && pod.DeletionTimestamp == nil {
		// The agent said why: no need to wait out MissingGrace.
		r.Problems = append(r.Problems, says)
	} else if vmExpected(pod, p.now) {
		r.Problems = append(r.Problems, ProblemVMMissing)
	}
	if w, ok := stuck.OfPod(pod); ok {
		r.Waiting = w.Message
	}
	addClaims(&r, pod, p.claims)
	return r
}

// vmRow is a VM, with its Pod when pod is not nil.
func (p pairer) vmRow(pod *corev1.Pod, vm *kubevirtv1.VirtualMachine) Row {
	o := derive.OriginOf(vm)
	var r Row
	if pod != nil {
		r = podFields(pod)
	} else {
		r = Row{Namespace: vm.Namespace, Pod: o.PodName, Created: vm.CreationTimestamp}
	}
	r.VM, r.VMNamespace = vm.Name, vm.Namespace
	r.VMStatus, r.VMReady = string(vm.Status.PrintableStatus), vm.Status.Ready
	r.Prototype, r.PrototypeNamespace = o.PrototypeName, o.PrototypeNamespace
	vmi := p.vmis[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}]
	if vmi != nil {
		r.VMINode = vmi.Status.NodeName
		r.VMIP = firstIP(vmi)
	}

	if vm.DeletionTimestamp != nil {
		return r // on its way out; whatever else is true no longer matters
	}
	if pod == nil {
		if other := p.podNames[o.Pod()]; other != nil {
			r.Problems = append(r.Problems, ProblemPodReplaced)
		} else {
			r.Problems = append(r.Problems, ProblemPodGone)
		}
	}
	if pod != nil && pod.Spec.NodeName != "" && r.VMINode != "" && pod.Spec.NodeName != r.VMINode {
		r.Problems = append(r.Problems, ProblemOtherNode)
	}
	launcher := p.launchers[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}]
	if drain := drainProblem(vmi); drain != "" {
		r.Problems = append(r.Problems, drain) // it says why the VM is not ready
	} else if s, ok := stuck.Of(vm); ok && !handingOver(pod, launcher, s) {
		r.Problems = append(r.Problems, s.Message)
	} else if since, ok := notReadySince(vm); ok && p.now.Sub(since) >= p.notReadyGrace {
		r.Problems = append(r.Problems, fmt.Sprintf(problemNotReadyFmt, duration.HumanDuration(p.now.Sub(since))))
	}
	// A Pod is placed, and its VM derived, by the VM revision it pins,
	// whatever the prototype is now.
	pins := pinnedBy(pod, vm)
	if pod != nil && launcher != nil {
		held, need := pod.Annotations[contract.AnnotationReservation], reserve.Counted(launcher)
		if reserve.Stale(held, need) {
			r.Problems = append(r.Problems, fmt.Sprintf(problemReservationFmt, held, contract.FormatResources(reserve.Round(need))))
		}
	}
	if rw := p.rewrittenProblem(pod); rw != "" {
		r.Problems = append(r.Problems, rw)
	}
	switch {
	case pins != "":
		if has := vm.Annotations[contract.AnnotationVMRevision]; has != pins {
			r.Problems = append(r.Problems, fmt.Sprintf(problemRevisionFmt, cmp.Or(has, "<none>"), pins))
		}
	case p.protos[o.Prototype()] == nil:
		r.Problems = append(r.Problems, ProblemProtoMissing)
	}
	if np := notPinned(pod); np != "" {
		r.Problems = append(r.Problems, np)
	}
	if pod != nil {
		addClaims(&r, pod, p.claims)
	}
	return r
}

// handingOver reports whether s, a VM's state, is its agent handing over
// the room its Pod holds: the VM's launcher Pod waits for it, nominated to
// the agent Pod's node (the agent's handOver).
func handingOver(pod, launcher *corev1.Pod, s stuck.Problem) bool {
	return s.Reason == stuck.ReasonUnschedulable && pod != nil && launcher != nil && launcher.Spec.NodeName == "" &&
		pod.Spec.NodeName != "" && launcher.Status.NominatedNodeName == pod.Spec.NodeName
}

func podFields(pod *corev1.Pod) Row {
	ready := 0
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return Row{
		Namespace: pod.Namespace,
		Pod:       pod.Name,
		PodUID:    pod.UID,
		Node:      pod.Spec.NodeName,
		Ready:     fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)),
		PodReady:  podReady(pod),
		Created:   pod.CreationTimestamp,
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// drainProblem names what a node drain does to vmi, or "". KubeVirt marks a
// VMI whose launcher Pod a drain tried to evict (derived VMs have
// evictionStrategy External) with status.evacuationNodeName. A VMI whose
// launcher Pod cannot be scheduled because its node, the only one a derived
// VM may run on, is cordoned carries kube-scheduler's NodeUnschedulable
// reason in its PodScheduled condition, which virt-controller copies from the
// Pod.
func drainProblem(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi == nil || vmi.DeletionTimestamp != nil {
		return ""
	}
	if vmi.Status.EvacuationNodeName != "" {
		return ProblemEvacuating
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled) && c.Status == corev1.ConditionFalse &&
			strings.Contains(c.Message, nodeUnschedulable) {
			return ProblemHeldByDrain
		}
	}
	return ""
}

// nodeUnschedulable is kube-scheduler's NodeUnschedulable plugin's reason
// (ErrReasonUnschedulable) in a Pod's PodScheduled condition.
const nodeUnschedulable = "node(s) were unschedulable"

// vmExpected reports whether pod's agent should have made its VM by now: the
// Pod runs, is not terminating (its agent deletes the VM then) and started
// more than MissingGrace ago.
func vmExpected(pod *corev1.Pod, now time.Time) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	started := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	return now.Sub(started) >= MissingGrace
}

// notReadySince returns when vm last became not ready: the Ready
// condition's last transition, else its creation.
func notReadySince(vm *kubevirtv1.VirtualMachine) (time.Time, bool) {
	if vm.Status.Ready {
		return time.Time{}, false
	}
	for _, c := range vm.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineReady && !c.LastTransitionTime.IsZero() {
			if c.Status == corev1.ConditionTrue {
				return time.Time{}, false // status.ready lags the condition
			}
			return c.LastTransitionTime.Time, true
		}
	}
	return vm.CreationTimestamp.Time, true
}

// firstIP is the first address vmi's interfaces report (KubeVirt's
// virt-handler fills them in once the guest runs), or "".
func firstIP(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, i := range vmi.Status.Interfaces {
		if i.IP != "" {
			return i.IP
		}
	}
	return ""
}
