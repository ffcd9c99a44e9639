//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// fleetObserver follows a namespace's agent Pods and derived VMs through
// informers (watches, which survive an API server restart by listing
// afresh) and notes when things happen, as seen from the test.
type fleetObserver struct {
	changed chan struct{}

	mu      sync.Mutex
	ready   map[string]bool      // agent Pods now, by name: Ready?
	unready map[string]time.Time // when a Pod was last seen to go unready
	vms     map[string]string    // derived VMs now: UID by name
	uids    map[string]map[string]bool
	created int // derived VM names ever seen

	vmis map[string]bool // KubeVirt's VMIs in the namespace now: Running?
}

// fleetState is what the observer sees now.
type fleetState struct {
	pods, ready, vms, created, vmis, running int
}

func (s fleetState) String() string {
	return fmt.Sprintf("%d agent Pods, %d Ready; %d derived VMs now, %d created; %d VMIs, %d Running",
		s.pods, s.ready, s.vms, s.created, s.vmis, s.running)
}

// observe starts following ns; it stops when b ends.
func observe(b *testing.B, ns string) *fleetObserver {
	b.Helper()
	o := &fleetObserver{
		changed: make(chan struct{}, 1),
		ready:   map[string]bool{},
		unready: map[string]time.Time{},
		vms:     map[string]string{},
		uids:    map[string]map[string]bool{},
		vmis:    map[string]bool{},
	}
	follow(b, ns, agentSelector, derive.DerivedSelector, onEach(o.pod), onEach(o.vm), onEach(o.vmi))
	return o
}

// follow runs informers on ns's Pods (those podSelector selects), VMs (those
// vmSelector selects) and VMIs, each with its handler, until b ends; it
// returns once they have synced. A selector "" selects all.
func follow(b testing.TB, ns, podSelector, vmSelector string, pod, vm, vmi cache.ResourceEventHandler) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) { opts.LabelSelector = podSelector }))
	pods := factory.Core().V1().Pods().Informer()
	vms, vmis := vmInformer(ns, vmSelector), vmiInformer(ns)
	for inf, h := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{pods: pod, vms: vm, vmis: vmi} {
		if _, err := inf.AddEventHandler(h); err != nil {
			b.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	go vms.RunWithContext(ctx)
	go vmis.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, vms.HasSynced, vmis.HasSynced) {
		b.Fatalf("the informers on %s did not sync", ns)
	}
}

func (o *fleetObserver) pod(p *corev1.Pod, deleted bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	was, existed := o.ready[p.Name]
	switch {
	case deleted:
		delete(o.ready, p.Name)
	default:
		now := podReady(p)
		o.ready[p.Name] = now
		if existed && was && !now {
			o.unready[p.Name] = time.Now()
		}
	}
	o.notify()
}

func (o *fleetObserver) vm(vm *kubevirtv1.VirtualMachine, deleted bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if deleted {
		delete(o.vms, vm.Name)
	} else {
		o.vms[vm.Name] = string(vm.UID)
		if o.uids[vm.Name] == nil {
			o.uids[vm.Name] = map[string]bool{}
			o.created++
		}
		o.uids[vm.Name][string(vm.UID)] = true
	}
	o.notify()
}

func (o *fleetObserver) vmi(vmi *kubevirtv1.VirtualMachineInstance, deleted bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if deleted {
		delete(o.vmis, vmi.Name)
	} else {
		o.vmis[vmi.Name] = vmi.Status.Phase == kubevirtv1.Running
	}
	o.notify()
}

func (o *fleetObserver) notify() { wake(o.changed) }

// wake tells a waiter on changed (a channel of one) that something changed,
// without blocking when one is told already.
func wake(changed chan struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}

// awaitChange waits until check holds, checking again each time changed
// wakes it; past timeout it fails b with what check last saw.
func awaitChange(b testing.TB, changed <-chan struct{}, timeout time.Duration, what string, check func() (bool, string)) {
	b.Helper()
	deadline := time.After(timeout)
	for {
		ok, seen := check()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			b.Fatalf("%s: not within %s; seen: %s", what, timeout, seen)
		}
	}
}

func (o *fleetObserver) state() fleetState {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := fleetState{pods: len(o.ready), vms: len(o.vms), created: o.created, vmis: len(o.vmis)}
	for _, r := range o.ready {
		if r {
			s.ready++
		}
	}
	for _, r := range o.vmis {
		if r {
			s.running++
		}
	}
	return s
}

// waitFor waits until cond holds for what the observer sees and returns
// when that was; past timeout it fails b with what it saw last.
func (o *fleetObserver) waitFor(b *testing.B, timeout time.Duration, what string, cond func(fleetState) (bool, string)) time.Time {
	b.Helper()
	awaitChange(b, o.changed, timeout, what, func() (bool, string) { return cond(o.state()) })
	return time.Now()
}

// vmUIDs are the derived VMs now: UID by name.
func (o *fleetObserver) vmUIDs() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[string]string, len(o.vms))
	for k, v := range o.vms {
		m[k] = v
	}
	return m
}

// twice counts the VM names seen with more than one UID.
func (o *fleetObserver) twice() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, uids := range o.uids {
		if len(uids) > 1 {
			n++
		}
	}
	return n
}

// unreadyAfter counts the Pods seen to go unready after t.
func (o *fleetObserver) unreadyAfter(t time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, at := range o.unready {
		if at.After(t) {
			n++
		}
	}
	return n
}
