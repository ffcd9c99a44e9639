package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// The handover learns of its VM's launcher Pod from the VM's VMI, which it
// follows by name: virt-controller keeps in the VMI's status.activePods the
// UID and node of each of the VMI's launcher Pods, and syncs the VMI on
// every event of its Pods (KubeVirt's setActivePods). A launcher Pod the
// handover has not seen yet makes it list the launcher Pods once, by label;
// a node the VMI gives the launcher Pod says it is bound. Only a launcher
// Pod whose nomination the scheduler may clear (it preempts) is watched
// itself, by name, to nominate it again. One handover so asks for a WATCH
// of the VMI, a LIST of the launcher Pods and the nomination, and a WATCH
// of the launcher Pod where it preempts.

// followVMI starts following the VM's VMI by name and returns its Follower.
// Nothing is decided on the VMI missing: it is awaited, so the first list
// may come from the API server's cache as it stands.
func (h *handoverRun) followVMI(ctx context.Context) *kube.Follower {
	list, watchFn := h.a.vmiOf(h.vm.Namespace, h.vm.Name)
	f := kube.NewFollower(ctx)
	h.vmis = h.a.followOn(f, &kubevirtv1.VirtualMachineInstance{}, list, watchFn,
		kube.FollowOptions{What: "the VM's VMI", FromCache: true})
	return f
}

// step brings the handover's launcher Pod up to date with the VMI and the
// launcher Pod's own watch, listing the launcher Pods when the VMI names
// one not seen yet, and looks at it (see look). fctx bounds the launcher
// Pod's watch. It reports whether the launcher Pod is bound, or the list's
// refusal.
func (h *handoverRun) step(ctx, fctx context.Context) (bound bool, err error) {
	var vmi *kubevirtv1.VirtualMachineInstance
	if obj, ok, _ := h.vmis.GetByKey(h.vm.Namespace + "/" + h.vm.Name); ok {
		vmi = obj.(*kubevirtv1.VirtualMachineInstance)
	}
	if h.unlooked(vmi) {
		if err := h.list(ctx, vmi.ResourceVersion); err != nil {
			return false, err
		}
	}
	h.refresh(vmi)
	if bound = h.look(ctx, h.launcher); !bound && h.launcher != nil && h.mayRenominate() {
		h.followLauncher(fctx)
	}
	return bound, nil
}

// unlooked reports whether vmi names a launcher Pod the handover has not
// listed, in a version of the VMI it has not listed for: a launcher Pod
// the list did not return yet is awaited with the VMI's next change.
func (h *handoverRun) unlooked(vmi *kubevirtv1.VirtualMachineInstance) bool {
	if vmi == nil || vmi.DeletionTimestamp != nil || vmi.ResourceVersion == h.listedAt {
		return false
	}
	for uid := range vmi.Status.ActivePods {
		if !h.looked[uid] {
			return true
		}
	}
	return false
}

// list lists the VM's launcher Pods, for the VMI at resourceVersion rv, and
// takes the newest. It returns only a refusal: after another failure it
// lists again after a backoff step.
func (h *handoverRun) list(ctx context.Context, rv string) error {
	h.listedAt = rv
	pods, err := h.a.pods.podsIn(h.vm.Namespace).List(ctx, metav1.ListOptions{LabelSelector: h.a.launcherSelector()})
	if kube.Refused(err) {
		return err
	}
	if err != nil {
		h.logger.Info("Listing the VM's launcher Pods failed", "err", err)
		h.listedAt = ""
		h.retry = time.After(h.backoff.Step())
		return nil
	}
	for _, p := range pods.Items {
		h.looked[p.UID] = true
	}
	newest := newestLauncher(pods.Items, h.vm.Name)
	if newest == nil {
		return nil
	}
	if h.pod != nil && h.launcher.UID != newest.UID {
		h.pod.stop()
		h.pod = nil
	}
	h.launcher = newest
	return nil
}

// refresh takes into the handover's launcher Pod what its watch has newly
// seen of it, and the node the VMI says it is bound to.
func (h *handoverRun) refresh(vmi *kubevirtv1.VirtualMachineInstance) {
	if h.launcher == nil {
		return
	}
	if obj := h.pod.latest(); obj != nil && obj.UID == h.launcher.UID {
		h.launcher = obj.DeepCopy()
	}
	if vmi != nil && h.launcher.Spec.NodeName == "" {
		h.launcher.Spec.NodeName = vmi.Status.ActivePods[h.launcher.UID]
	}
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
	h.pod = &podFollow{f: f, store: store, key: h.launcher.Namespace + "/" + name, stop: stop}
}

// podFollow is the watch of one launcher Pod, by name; nil is none, whose
// channels never send.
type podFollow struct {
	f     *kube.Follower
	store *kube.Store
	key   string
	stop  context.CancelFunc
	// last is the object latest last returned, as the store holds it.
	last any
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
