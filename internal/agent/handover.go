package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
)

// The handover: an agent whose Pod holds its VM's room makes the VM while
// it still holds it, and gives it back only once the VM's launcher Pod
// runs beside it, or waits for it, nominated to the agent's node. The
// scheduler keeps a
// nominated node's room for the nominated Pod from every Pod of equal or
// lower priority (it counts the nominated Pod on that node when it filters
// them), so an agent Pod that waits Pending cannot take the room its VM's
// launcher Pod was given: agent Pods have their VM's priority class.
// Kubernetes 1.35 and later let components other than the scheduler set a
// nomination (KEP-5278).
//
// The scheduler clears a nomination when it binds the Pod, and also each
// time the nominated Pod fails a scheduling attempt and preemption finds
// nothing to preempt for it, unless the Pod never preempts (its
// preemptionPolicy is Never: then the scheduler does not try). The
// launcher Pod fails its attempts while the agent holds the room, and
// while other agents on the node hold theirs beside their nominated
// launcher Pods, which the scheduler counts twice. So scaffold gives the
// VMs a priority class of the prototype's priority that never preempts
// (Config.LauncherPriorityClass): their nominations then last until they
// are bound. Where the launcher Pod preempts (a workload scaffolded
// before), the agent watches it and nominates it again when it sees the
// nomination cleared, at most maxNominations times. A nomination still
// standing when the handover is over, the launcher Pod not bound, is
// withdrawn.

// Readiness words of the handover.
const (
	// ReadyzHandingOver is what /readyz says while the Pod holds its VM's
	// room, or gave it back moments ago, and the VM's launcher Pod waits
	// for it: the VM is unschedulable then by design.
	ReadyzHandingOver = "HandingOver"
	// ReasonReservationStale is the agent's Event, and a /readyz word,
	// when its Pod's template holds another size than its VM's launcher
	// Pod asks for.
	ReasonReservationStale = "ReservationStale"
)

// handoverGrace is how long after giving back the room the agent keeps
// nominating its VM's launcher Pod, and keeps the VM's unschedulable state
// to itself: the launcher Pod waits out its scheduling backoff (1 s after
// its first failure, doubling) before the scheduler tries it again.
const handoverGrace = 30 * time.Second

// maxNominations bounds the nominations of one handover.
const maxNominations = 5

// handover is where the agent's handover stands, for observe, which runs
// on the VM's watch.
type handover struct {
	mu sync.Mutex
	// active while the Pod holds the room, or gave it back less than
	// handoverGrace ago and the launcher Pod is not yet placed.
	active bool
	// vmChanged hears observe see a new state of the VM.
	vmChanged chan struct{}
	// checked is the UID of the last launcher Pod whose size the agent
	// compared with its Pod's reservation.
	checked string
}

func (h *handover) set(active bool) {
	h.mu.Lock()
	h.active = active
	h.mu.Unlock()
}

func (h *handover) inProgress() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active
}

// notify sends on ch unless a value waits there already.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// needsLauncher reports whether the agent hands its Pod's room over to
// its VM's launcher Pod: the Pod still holds it.
func (a *Agent) needsLauncher() bool {
	return a.holdsRoom()
}

// holdsRoom reports whether the Pod still holds its VM's room.
func (a *Agent) holdsRoom() bool {
	return a.cfg.holdsReservation() && !a.resized.Load()
}

// launcherSelector selects the launcher Pods of the agent's VM: KubeVirt
// labels them kubevirt.io=virt-launcher and copies onto them the VMI's
// labels, which derive put on the VM's template.
func (a *Agent) launcherSelector() string {
	return labels.Set{
		kubevirtv1.AppLabel:     "virt-launcher",
		contract.LabelPrototype: derive.LabelValue(a.cfg.Prototype),
		contract.LabelPod:       a.pod.PodName,
	}.String()
}

// handOver gives the room back to vm's launcher Pod (see launcher.go):
// once the VM runs; or once the launcher Pod waits for the room, after it
// nominated it to the agent's node; or at once where the API server
// refused the launcher Pod. It compares the size of a launcher Pod it
// lists with the Pod's reservation. It lasts until the launcher Pod is
// placed, or handoverGrace after the room was given back. Where it cannot
// list Pods (a Role from before the handover) it gives the room back at
// once; where it cannot nominate, it gives it back without.
func (a *Agent) handOver(ctx context.Context, vm *kubevirtv1.VirtualMachine) {
	defer a.endHandover(ctx, vm)
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	h := &handoverRun{a: a, vm: vm, logger: klog.FromContext(ctx).WithValues("selector", a.launcherSelector()), canNominate: true}
	if !a.holdsRoom() {
		h.grace = a.clock.After(handoverGrace)
	}
	for {
		// The VM as observe last saw it: a change it told of before this
		// loop began is not lost.
		if cur := a.latest.Load(); cur != nil && cur.UID == vm.UID {
			over, err := h.step(ctx, fctx, cur)
			// Each state the handover acted on, for debugging; tests wait
			// for it before they check that a state made no write.
			h.logger.V(4).Info("Handover looked at the VM", "resourceVersion", cur.ResourceVersion, "status", cur.Status.PrintableStatus, "over", over)
			if err != nil {
				h.blind(ctx, err, "pods")
				return
			}
			if over {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-h.grace:
			h.withdraw(ctx, h.launcher)
			return
		case err := <-h.pod.errors():
			h.blind(ctx, err, "pods")
			return
		case <-a.handover.vmChanged:
		case <-h.pod.changed():
		}
	}
}

// handoverRun is where one handover stands.
type handoverRun struct {
	a      *Agent
	vm     *kubevirtv1.VirtualMachine
	logger klog.Logger
	// grace ends the handover; it starts once the room is given back.
	grace <-chan time.Time
	// canNominate is false once the API server refused a nomination for
	// good; nominations counts them.
	canNominate bool
	nominations int

	// listed is set once the handover listed the launcher Pods; bound
	// once it learnt that the launcher Pod it listed was bound.
	listed, bound bool
	// launcher is the newest launcher Pod, the handover's own copy: as
	// listed, or as its own watch (pod) has it since, with the
	// nomination the handover gave it.
	launcher *corev1.Pod
	pod      *podFollow
}

// blind gives back the room at once, the handover unable to read the
// launcher Pod: the Role does not let it read resource.
func (h *handoverRun) blind(ctx context.Context, err error, resource string) {
	h.logger.Info("Cannot read the VM's launcher Pod; giving back the room at once: a Pending Pod may take it first. "+
		"Scaffold the workload again for a Role that may list and watch "+resource, "err", err)
	h.release(ctx)
}

// look acts on launcher, the VM's newest launcher Pod as the handover
// knows it now (nil: none yet): checks its size, nominates it while it
// waits, and gives back the room. It reports whether the launcher Pod is
// bound.
func (h *handoverRun) look(ctx context.Context, launcher *corev1.Pod) (bound bool) {
	if launcher == nil || launcher.DeletionTimestamp != nil {
		return false
	}
	h.a.checkReservation(ctx, launcher)
	if launcher.Spec.NodeName != "" {
		// Beside the room held, or where the room went.
		h.release(ctx)
		h.logger.V(1).Info("Launcher Pod bound", "pod", klog.KObj(launcher), "nominations", h.nominations)
		return true
	}
	if h.canNominate && launcher.Status.NominatedNodeName != h.a.pod.Node && h.nominations < maxNominations {
		h.nominate(ctx, launcher)
	}
	h.release(ctx)
	return false
}

// nominate nominates launcher to the agent's node.
func (h *handoverRun) nominate(ctx context.Context, launcher *corev1.Pod) {
	h.nominations++
	err := h.a.pods.nominate(ctx, launcher.Namespace, launcher.Name, h.a.pod.Node)
	switch {
	case err == nil:
		// What the handover knows of launcher until its watch or a list
		// says more: without, it would nominate it again.
		launcher.Status.NominatedNodeName = h.a.pod.Node
	case apierrors.IsInvalid(err):
		// Bound meanwhile: the API server takes no nomination of a bound
		// Pod, and the VM tells once the launcher Pod runs.
		h.logger.V(1).Info("Launcher Pod bound before its nomination", "pod", klog.KObj(launcher))
	case kube.Refused(err):
		h.canNominate = false
		h.logger.Info("Cannot nominate the VM's launcher Pod; giving back the room without: a Pending Pod may take it first. "+
			"Scaffold the workload again for a Role that may patch pods/status", "pod", klog.KObj(launcher), "err", err)
	case err != nil:
		h.logger.Info("Nominating the VM's launcher Pod failed", "pod", klog.KObj(launcher), "err", err)
	}
}

// release gives back the room, once, and starts the grace.
func (h *handoverRun) release(ctx context.Context) {
	if h.grace == nil && h.a.giveBackRetrying(ctx) {
		h.grace = h.a.clock.After(handoverGrace)
	}
}

// withdraw clears the nomination of launcher, a launcher Pod the agent
// nominated that is still not bound when the handover is over: a launcher
// Pod that never preempts keeps its nomination until it is bound, and
// would keep the room it cannot use from every Pod of its priority.
func (h *handoverRun) withdraw(ctx context.Context, launcher *corev1.Pod) {
	if h.nominations == 0 || h.bound || launcher == nil || launcher.Status.NominatedNodeName != h.a.pod.Node {
		return
	}
	err := h.a.pods.nominate(ctx, launcher.Namespace, launcher.Name, "")
	h.logger.Info("Withdrew the nomination of the VM's launcher Pod, not bound in time", "pod", klog.KObj(launcher), "err", err)
}

// newestLauncher is the newest of pods that vmName's VMI owns, or nil.
func newestLauncher(pods []corev1.Pod, vmName string) *corev1.Pod {
	var newest *corev1.Pod
	for i := range pods {
		p := &pods[i]
		owned := false
		for _, r := range p.OwnerReferences {
			owned = owned || (r.Kind == "VirtualMachineInstance" && r.Name == vmName)
		}
		if owned && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	return newest
}

// giveBackRetrying gives back the room, retrying a failed resize with the
// agent's backoff; it reports false when ctx ended first.
func (a *Agent) giveBackRetrying(ctx context.Context) bool {
	b := a.cfg.backoff()
	for {
		p := a.giveBack(ctx)
		if p == nil {
			return true
		}
		a.report.fail(ctx, p)
		if !sleep(ctx, b.Step()) {
			return false
		}
	}
}

// endHandover marks the handover of vm over and looks at the VM again, as
// last seen: a state kept to itself while it lasted (unschedulable) is
// said now.
func (a *Agent) endHandover(ctx context.Context, vm *kubevirtv1.VirtualMachine) {
	a.handover.set(false)
	if ctx.Err() == nil {
		a.observeAgain(ctx, vm.UID)
	}
}

// checkReservation compares the room the Pod's template holds with what
// launcher asks for, once per launcher Pod, and says when they differ: a
// template written before the prototype, its instancetype or KubeVirt's
// configuration changed, or rolled back to an older one. The VM runs all
// the same where it fits; the agent does not move it (moveBlocked): every
// Pod of the template would hold the same wrong size.
func (a *Agent) checkReservation(ctx context.Context, launcher *corev1.Pod) {
	a.handover.mu.Lock()
	seen := a.handover.checked == string(launcher.UID)
	a.handover.checked = string(launcher.UID)
	a.handover.mu.Unlock()
	held := a.cfg.heldReservation()
	need := reserve.Counted(launcher)
	if seen || !reserve.Stale(held, need) {
		return
	}
	a.reservationStale.Store(reserve.Short(held, need))
	a.status.warn(ReasonReservationStale)
	effect := "the scheduler places these agents by the old size, so their VMs may not fit where they land, and a VM that cannot be scheduled does not move"
	if !reserve.Short(held, need) {
		effect = "the scheduler places these agents by the old size, so fewer fit on a node than their VMs would"
	}
	msg := fmt.Sprintf("the Pod holds %s for its VM, but the VM's launcher Pod %s asks for %s: prototype %s/%s, its instancetype, KubeVirt's configuration "+
		"or its release changed since the Pod's template was written, or the template was rolled back (kubectl rollout undo); %s; "+
		"roll the new size out with `kubectl vmctl rollout restart %s -n %s`",
		held, launcher.Name, contract.FormatResources(reserve.Round(need)), a.cfg.PrototypeNamespace, a.cfg.Prototype, effect, a.cfg.Prototype, a.pod.PodNamespace)
	klog.FromContext(ctx).Info("Reservation stale", "message", msg)
	a.report.event(corev1.EventTypeWarning, ReasonReservationStale, msg)
}
