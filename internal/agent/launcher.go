package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// The handover reads where the VM's launcher Pod stands from the VM, which
// the agent watches anyway. virt-controller copies onto the VM its VMI's
// PodScheduled condition when the scheduler finds no room for the launcher
// Pod (printableStatus ErrorUnschedulable), the API server's refusal of the
// launcher Pod, and the VMI's phase once the launcher Pod runs. So a
// launcher Pod that fits beside the room the agent holds costs the handover
// nothing but the resize, once the VM runs. One that waits for the room
// costs a LIST of the VM's launcher Pods, by label, for its name and size,
// and its nomination. Only a launcher Pod whose nomination the scheduler
// may clear (it preempts) is also watched, by name, to nominate it again.
// A watch of the VMI or of the launcher Pods by label would cost more: the
// API server's watch cache hands a watch narrowed by label every event of
// the namespace to filter.

// launcherState is where the VM's launcher Pod stands, as the VM says.
type launcherState int

const (
	// launcherUnknown: not made yet, not yet tried by the scheduler, or
	// bound and not yet running; the VM does not tell these apart.
	launcherUnknown launcherState = iota
	// launcherWaits: the scheduler found no room for it.
	launcherWaits
	// launcherRefused: the API server refused it, such as a quota that
	// counts the room twice.
	launcherRefused
	// launcherPlaced: it was bound; the VMI runs, or the launcher Pod
	// failed on its node.
	launcherPlaced
)

// launcherOf says where vm's launcher Pod stands.
func launcherOf(vm *kubevirtv1.VirtualMachine) launcherState {
	if vm.Status.Ready {
		return launcherPlaced
	}
	if p, ok := stuck.Of(vm); ok {
		switch p.Reason {
		case stuck.ReasonUnschedulable:
			return launcherWaits
		case stuck.ReasonLauncherRefused:
			return launcherRefused
		case stuck.ReasonImagePull, stuck.ReasonCrashLoop:
			return launcherPlaced
		}
		return launcherUnknown
	}
	switch vm.Status.PrintableStatus {
	case kubevirtv1.VirtualMachineStatusRunning, kubevirtv1.VirtualMachineStatusPaused, kubevirtv1.VirtualMachineStatusMigrating:
		return launcherPlaced
	}
	return launcherUnknown
}

// step acts on vm, the VM as the agent last saw it: it gives back the room
// to a launcher Pod that runs or was refused; it lists the launcher Pods
// once for one that waits, nominates the newest and gives back the room
// (look). fctx bounds the launcher Pod's watch. It reports whether the
// handover is over, or the list's refusal.
func (h *handoverRun) step(ctx, fctx context.Context, vm *kubevirtv1.VirtualMachine) (over bool, err error) {
	state := launcherOf(vm)
	switch state {
	case launcherPlaced:
		h.release(ctx)
		return true, nil
	case launcherRefused:
		h.release(ctx)
		return false, nil
	case launcherWaits:
		if !h.listed {
			if err := h.list(ctx); err != nil {
				return false, err
			}
		}
		if h.launcher == nil {
			// The launcher Pod waits for the room all the same.
			h.release(ctx)
		}
	}
	if obj := h.pod.latest(); obj != nil && h.launcher != nil && obj.UID == h.launcher.UID {
		h.launcher = obj.DeepCopy()
	}
	// virt-controller drops the PodScheduled condition it copied onto the
	// VM once the launcher Pod is bound: one that waited waits no more.
	h.bound = h.bound || (h.listed && state != launcherWaits)
	if h.launcher == nil || h.bound {
		h.pod.stop()
		h.pod = nil
		return false, nil
	}
	if h.bound = h.look(ctx, h.launcher); !h.bound && h.mayRenominate() {
		h.followLauncher(fctx)
	}
	return false, nil
}

// list lists the VM's launcher Pods, once, and takes the newest. It
// returns only a refusal: after another failure, the handover gives back
// the room without a nomination.
func (h *handoverRun) list(ctx context.Context) error {
	h.listed = true
	pods, err := h.a.pods.podsIn(h.vm.Namespace).List(ctx, metav1.ListOptions{LabelSelector: h.a.launcherSelector()})
	if kube.Refused(err) {
		return err
	}
	if err != nil {
		h.logger.Info("Listing the VM's launcher Pods failed; giving back the room without a nomination", "err", err)
		return nil
	}
	h.launcher = newestLauncher(pods.Items, h.vm.Name)
	return nil
}

// mayRenominate reports whether the handover would nominate its launcher
// Pod again if the scheduler cleared the nomination, which it does only
// for a Pod that may preempt (see the package's doc on the handover).
func (h *handoverRun) mayRenominate() bool {
	p := h.launcher.Spec.PreemptionPolicy
	return h.canNominate && h.nominations < maxNominations && (p == nil || *p != corev1.PreemptNever)
}

// followLauncher watches the handover's launcher Pod by name, unless it
// does already. Its first list is a consistent one, made after the
// nomination the handover may have just given: a list older than that
// would make it nominate again.
func (h *handoverRun) followLauncher(ctx context.Context) {
	if h.pod != nil {
		return
	}
	ctx, stop := context.WithCancel(ctx)
	pods, name := h.a.pods.podsIn(h.launcher.Namespace), h.launcher.Name
	f := kube.NewFollower(ctx)
	store := h.a.followOn(f, &corev1.Pod{},
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, kube.NameOptions(opts, name))
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, kube.NameOptions(opts, name))
		},
		kube.FollowOptions{Client: h.a.kube, What: "the VM's launcher Pod"})
	h.pod = &podFollow{f: f, store: store, key: h.launcher.Namespace + "/" + name, cancel: stop}
}

// podFollow is the watch of one launcher Pod, by name; nil is none, whose
// channels never send.
type podFollow struct {
	f      *kube.Follower
	store  *kube.Store
	key    string
	cancel context.CancelFunc
	// last is the object latest last returned, as the store holds it.
	last any
}

// stop stops the watch; nil is none.
func (p *podFollow) stop() {
	if p != nil {
		p.cancel()
	}
}

func (p *podFollow) changed() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.f.Changed()
}

func (p *podFollow) errors() <-chan error {
	if p == nil {
		return nil
	}
	return p.f.Errors()
}

// latest returns the Pod as the watch has it, when it changed since latest
// last returned it, or nil. The Pod is the store's: do not change it.
func (p *podFollow) latest() *corev1.Pod {
	if p == nil {
		return nil
	}
	obj, ok, _ := p.store.GetByKey(p.key)
	if !ok || obj == p.last {
		return nil
	}
	p.last = obj
	return obj.(*corev1.Pod)
}
