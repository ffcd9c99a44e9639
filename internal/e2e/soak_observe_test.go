//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// soakObserver follows the soak namespace's agent Pods and VMs, and the
// nodes, through informers for the whole soak (they list afresh after an API
// server restart or a 410), so the settle waits wake on changes instead of
// polling, and so that two VMs alive at once for one Pod, or a VM made again
// for a Pod without anyone deleting the last, is caught when it happens and
// not only at check time.
type soakObserver struct {
	changed chan struct{}
	pods    cache.Indexer
	vms     cache.Indexer
	nodes   cache.Indexer

	mu sync.Mutex
	// alive and made are derived VMs' UIDs by their Pod's UID: those that
	// exist now, and every one ever seen.
	alive, made map[types.UID]map[types.UID]string
	// handDeleted counts, by Pod UID, the soak's own deletions of the
	// Pod's VM, after which the agent rightly makes another.
	handDeleted map[types.UID]int
	violations  []string
	seen        int
}

func soakObserve(t *testing.T, ns string) *soakObserver {
	t.Helper()
	o := &soakObserver{
		changed:     make(chan struct{}, 1),
		alive:       map[types.UID]map[types.UID]string{},
		made:        map[types.UID]map[types.UID]string{},
		handDeleted: map[types.UID]int{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { o.notify() },
		UpdateFunc: func(any, any) { o.notify() },
		DeleteFunc: func(any) { o.notify() },
	}

	pods := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) { opts.LabelSelector = agentSelector }))
	podInformer := pods.Core().V1().Pods().Informer()
	nodes := informers.NewSharedInformerFactory(e.kube, 0)
	nodeInformer := nodes.Core().V1().Nodes().Informer()
	vms := vmInformer(ns, "")
	for _, inf := range []cache.SharedIndexInformer{podInformer, nodeInformer} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := vms.AddEventHandler(onEach(o.vm)); err != nil {
		t.Fatal(err)
	}
	pods.Start(ctx.Done())
	nodes.Start(ctx.Done())
	go vms.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, nodeInformer.HasSynced, vms.HasSynced) {
		t.Fatal("the soak's informers did not sync")
	}
	o.pods, o.vms, o.nodes = podInformer.GetIndexer(), vms.GetIndexer(), nodeInformer.GetIndexer()
	return o
}

func (o *soakObserver) notify() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// vm records a derived VM's life by its Pod's UID.
func (o *soakObserver) vm(vm *kubevirtv1.VirtualMachine, deleted bool) {
	defer o.notify()
	if !derive.IsDerived(vm) {
		return
	}
	pod := types.UID(vm.Annotations[contract.AnnotationPodUID])
	o.mu.Lock()
	defer o.mu.Unlock()
	if deleted {
		delete(o.alive[pod], vm.UID)
		return
	}
	if o.alive[pod] == nil {
		o.alive[pod], o.made[pod] = map[types.UID]string{}, map[types.UID]string{}
	}
	o.alive[pod][vm.UID] = vm.Name
	if _, ok := o.made[pod][vm.UID]; !ok {
		o.made[pod][vm.UID] = vm.Name
		o.seen++
	}
	now := time.Now().Format("15:04:05.000")
	if len(o.alive[pod]) > 1 {
		o.violations = append(o.violations, fmt.Sprintf("%s: %d VMs at once for Pod %s (%s): %v",
			now, len(o.alive[pod]), vm.Annotations[contract.AnnotationPodName], pod, o.alive[pod]))
	}
	if len(o.made[pod]) > 1+o.handDeleted[pod] {
		o.violations = append(o.violations, fmt.Sprintf("%s: %d VMs made for Pod %s (%s) and %d deleted by hand: %v",
			now, len(o.made[pod]), vm.Annotations[contract.AnnotationPodName], pod, o.handDeleted[pod], o.made[pod]))
	}
}

// deletedByHand notes that the soak deletes pod's VM, before it does.
func (o *soakObserver) deletedByHand(pod types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handDeleted[pod]++
}

// takeViolations returns what the watch caught since the last call.
func (o *soakObserver) takeViolations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.violations
	o.violations = nil
	return v
}

func (o *soakObserver) vmsSeen() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.made)
}

func (o *soakObserver) creations() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

// agentPods are the agent Pods now, sorted by name.
func (o *soakObserver) agentPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, obj := range o.pods.List() {
		pods = append(pods, obj.(*corev1.Pod))
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// runningPods are the agent Pods bound to a node and not being deleted,
// of workload instance when it is not "".
func (o *soakObserver) runningPods(instance string) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, p := range o.agentPods() {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && (instance == "" || p.Labels[soakInstanceLabel] == instance) {
			pods = append(pods, p)
		}
	}
	return pods
}

// derivedVMs are the derived VMs now, sorted by name.
func (o *soakObserver) derivedVMs() []*kubevirtv1.VirtualMachine {
	var vms []*kubevirtv1.VirtualMachine
	for _, obj := range o.vms.List() {
		if vm := obj.(*kubevirtv1.VirtualMachine); derive.IsDerived(vm) {
			vms = append(vms, vm)
		}
	}
	sort.Slice(vms, func(i, j int) bool { return vms[i].Name < vms[j].Name })
	return vms
}

// waitFor waits, waking on every change the informers see, until cond
// holds, and fails with what cond last said after timeout. A slow check
// also runs every second without a change, for what informers do not see.
func (o *soakObserver) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%s: not within %v; last seen: %s", what, timeout, seen)
		case <-o.changed:
		case <-tick.C:
		}
	}
}
