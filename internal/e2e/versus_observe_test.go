//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// revAnnotation marks a VM template's revision: the rollout cases change it,
// which changes every VMI's spec, so both a pool and a prototype restart
// their VMs for it.
const revAnnotation = "e2e.vmctl.kubevirt.io/rev"

// nsWatch follows every Pod, VM and VMI of one namespace, whoever made
// them (a pool's VMs or an agent's), through informers.
type nsWatch struct {
	skip    string // a VM that is not part of the fleet: the prototype
	changed chan struct{}

	mu      sync.Mutex
	pods    map[string]bool // Ready?
	vms     map[string]bool // status.ready?
	vmUIDs  map[string]bool // every VM UID ever seen
	vmis    map[string]vmiSeen
	lowMark bool // whether low is being tracked (trackLow)
	low     int  // the fewest VMIs Running and Ready since trackLow
}

type vmiSeen struct {
	ready bool   // Running, and its Ready condition true
	rev   string // revAnnotation
}

// nsNow is what a nsWatch sees now.
type nsNow struct {
	pods, podsReady, vms, vmsReady, vmsEver, vmis, vmisReady int
	// vmisAt counts the ready VMIs by revAnnotation.
	vmisAt map[string]int
}

func (s nsNow) String() string {
	return fmt.Sprintf("%d Pods (%d Ready), %d VMs (%d ready, %d ever), %d VMIs (%d Running and Ready, by revision %v)",
		s.pods, s.podsReady, s.vms, s.vmsReady, s.vmsEver, s.vmis, s.vmisReady, s.vmisAt)
}

// watchNamespace starts following ns until b ends; skip names a VM to leave
// out (the prototype), or is "".
func watchNamespace(b testing.TB, ns, skip string) *nsWatch {
	b.Helper()
	w := &nsWatch{skip: skip, changed: make(chan struct{}, 1), pods: map[string]bool{},
		vms: map[string]bool{}, vmUIDs: map[string]bool{}, vmis: map[string]vmiSeen{}}
	follow(b, ns, "", "", onEach(w.pod), onEach(w.vm), onEach(w.vmi))
	return w
}

func (w *nsWatch) pod(p *corev1.Pod, deleted bool) {
	w.update(func() {
		if deleted {
			delete(w.pods, p.Name)
		} else {
			w.pods[p.Name] = podReady(p)
		}
	})
}

func (w *nsWatch) vm(vm *kubevirtv1.VirtualMachine, deleted bool) {
	if vm.Name == w.skip {
		return
	}
	w.update(func() {
		if deleted {
			delete(w.vms, vm.Name)
			return
		}
		w.vms[vm.Name] = vm.Status.Ready && vm.DeletionTimestamp == nil
		w.vmUIDs[string(vm.UID)] = true
	})
}

func (w *nsWatch) vmi(vmi *kubevirtv1.VirtualMachineInstance, deleted bool) {
	w.update(func() {
		if deleted {
			delete(w.vmis, vmi.Name)
			return
		}
		ready := vmi.Status.Phase == kubevirtv1.Running && vmi.DeletionTimestamp == nil
		for _, c := range vmi.Status.Conditions {
			if c.Type == kubevirtv1.VirtualMachineInstanceReady {
				ready = ready && c.Status == corev1.ConditionTrue
			}
		}
		w.vmis[vmi.Name] = vmiSeen{ready: ready, rev: vmi.Annotations[revAnnotation]}
	})
}

func (w *nsWatch) update(change func()) {
	w.mu.Lock()
	change()
	if w.lowMark {
		w.low = min(w.low, w.nowLocked().vmisReady)
	}
	w.mu.Unlock()
	wake(w.changed)
}

func (w *nsWatch) now() nsNow {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nowLocked()
}

func (w *nsWatch) nowLocked() nsNow {
	s := nsNow{pods: len(w.pods), vms: len(w.vms), vmsEver: len(w.vmUIDs), vmis: len(w.vmis), vmisAt: map[string]int{}}
	for _, r := range w.pods {
		if r {
			s.podsReady++
		}
	}
	for _, r := range w.vms {
		if r {
			s.vmsReady++
		}
	}
	for _, v := range w.vmis {
		if v.ready {
			s.vmisReady++
			s.vmisAt[v.rev]++
		}
	}
	return s
}

// trackLow starts noting the fewest VMIs Running and Ready, from now: the
// VMs that serve (a VM's status.ready follows its VMI's a moment later).
func (w *nsWatch) trackLow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lowMark, w.low = true, w.nowLocked().vmisReady
}

// lowest ends trackLow and returns the fewest ready VMIs it saw.
func (w *nsWatch) lowest() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lowMark = false
	return w.low
}

// until waits until cond holds and returns how long after start that
// was; past timeout it fails b with what it saw last.
func (w *nsWatch) until(b testing.TB, start time.Time, timeout time.Duration, what string, cond func(nsNow) bool) time.Duration {
	b.Helper()
	awaitChange(b, w.changed, timeout, what, func() (bool, string) {
		s := w.now()
		return cond(s), s.String()
	})
	return time.Since(start)
}

// empty tells that nothing of the fleet is left: no VM, VMI or Pod.
func (s nsNow) empty() bool { return s.vms == 0 && s.vmis == 0 && s.pods == 0 }

// requester names who made an audited request, by the component that
// authenticates as its user; agentNS's ServiceAccounts are the agents.
// The tests' own requests (the admin's) are "".
func requester(ev testcluster.AuditEvent, agentNS string) string {
	u := ev.User.Username
	switch {
	case strings.HasPrefix(u, "system:serviceaccount:"+agentNS+":"):
		return "agents"
	case u == kubevirt.ControllerUser:
		return "virt-controller"
	case u == kubevirt.APIUser:
		return "virt-api"
	case u == kubevirt.HandlerUser:
		return "virt-handler (stand-in)"
	case u == testcluster.ComponentUser(testcluster.KubeControllerManager),
		strings.HasPrefix(u, "system:serviceaccount:kube-system:"):
		return "kube-controller-manager"
	case u == testcluster.ComponentUser(testcluster.KubeScheduler):
		return "kube-scheduler"
	case u == testcluster.ComponentUser(testcluster.Kwok), u == testcluster.ComponentUser(testcluster.Doubles):
		return "kubelets (kwok, agent double)"
	case u == "":
		return "unauthenticated (refused)"
	case u == "system:apiserver":
		return "kube-apiserver (its own)"
	case u == testcluster.AdminUser:
		return ""
	}
	return "other: " + u
}

// componentRequests counts requests by requester.
type componentRequests map[string]int

// requestsIn counts the requests made on objects in ns since the audit
// log's first mark entries (tally), ns's ServiceAccounts being the agents.
// Requests on no namespace (nodes, and lists and watches across all
// namespaces) are left out: they do not grow with a namespace's VMs.
func requestsIn(b testing.TB, ns string, mark int) (all, throttled componentRequests) {
	b.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		b.Fatal(err)
	}
	return tally(events[mark:], ns, func(ev testcluster.AuditEvent) bool { return ev.ObjectRef.Namespace == ns })
}

// requestKinds counts the requests in ns since the audit log's first mark
// entries that who made (a requester's name), by verb and resource, and of
// them those answered 429: what the requests and their 429s were for.
func requestKinds(b testing.TB, ns string, mark int, who string) (all, throttled componentRequests) {
	b.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		b.Fatal(err)
	}
	all, throttled = componentRequests{}, componentRequests{}
	for _, ev := range events[mark:] {
		if ev.ObjectRef.Namespace != ns || requester(ev, ns) != who {
			continue
		}
		kind := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			kind += "/" + ev.ObjectRef.Subresource
		}
		all[kind]++
		if ev.ResponseStatus.Code == http.StatusTooManyRequests {
			throttled[kind]++
		}
	}
	return all, throttled
}

// tally counts the events that keep selects by requester (agentNS's
// ServiceAccounts being the agents; the tests' own are left out), and of
// them those answered 429: API Priority and Fairness turned them away, and
// clients retry them.
func tally(events []testcluster.AuditEvent, agentNS string, keep func(testcluster.AuditEvent) bool) (all, throttled componentRequests) {
	all, throttled = componentRequests{}, componentRequests{}
	for _, ev := range events {
		who := requester(ev, agentNS)
		if who == "" || !keep(ev) {
			continue
		}
		all[who]++
		if ev.ResponseStatus.Code == http.StatusTooManyRequests {
			throttled[who]++
		}
	}
	return all, throttled
}

func (r componentRequests) total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

// perVM says each requester's count divided by vms, most first.
func (r componentRequests) perVM(vms int) string {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return r[names[i]] > r[names[j]] || r[names[i]] == r[names[j]] && names[i] < names[j]
	})
	parts := []string{fmt.Sprintf("%.1f in all", float64(r.total())/float64(vms))}
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(r[name])/float64(vms)))
	}
	return strings.Join(parts, ", ")
}
