package status

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Query says what status shows.
type Query struct {
	// Namespace is the namespace shown; empty means all namespaces.
	Namespace string
	// Prototype, when set, shows only the agents and VMs of that prototype
	// name.
	Prototype string
	// PodSelector narrows the agent Pods further (kubectl's -l). VMs carry
	// no Pod labels, so with a selector status shows only VMs paired with a
	// selected Pod and cannot report orphans.
	PodSelector string
}

// InScope reports whether objects of namespace are shown.
func (q Query) InScope(namespace string) bool {
	return q.Namespace == "" || q.Namespace == namespace
}

// Inventory is everything Pair needs, read once from the cluster (Load) or
// kept by informers (Watch), as Slim keeps objects. The objects are shared
// with an informer's store: read them, never change them.
//
// Pods are the agent Pods (scaffold's labels) of the query's namespace: each
// makes a row. OwnerPods are Pods read by the identity a derived VM records,
// whatever their labels, so that a VM whose agent runs in a Pod without
// those labels is not called orphaned: they only pair. VMs are the derived
// VMs (vmctl's labels) of the query's namespace and of the namespaces its
// agents put VMs in; Prototypes the VMs those name as their prototype, read
// by name. VMIs are matched to VMs by name. Objects outside the query's
// namespace only appear paired with one inside.
type Inventory struct {
	Query      Query
	Pods       []*corev1.Pod
	OwnerPods  []*corev1.Pod
	VMs        []*kubevirtv1.VirtualMachine
	Prototypes []*kubevirtv1.VirtualMachine
	VMIs       []*kubevirtv1.VirtualMachineInstance
	// Launchers are the VMs' launcher Pods, read when an agent Pod holds
	// its VM's room (contract.AnnotationReservation), matched to VMs by
	// their owner VMI's name.
	Launchers []*corev1.Pod
	// Claims are the PersistentVolumeClaims of the namespaces whose agent
	// Pods use their own claims (contract.Agent.ReplicaClaims), matched
	// by name.
	Claims []*corev1.PersistentVolumeClaim
	// Stores are the revision stores of the namespaces whose agent Pods pin
	// a VM revision, each kept as slimStore keeps it: the revisions it
	// holds rewritten.
	Stores []*unstructured.Unstructured
	// Events are the Warning Events agents recorded on their Pods
	// (agentEventSelector), read only when an agent Pod lacks its VM
	// (lacksVM): what its agent said of why (agentSays).
	Events []*corev1.Event
	// Revisions are the hashes of the VM revisions that prototypes would
	// pin now (prototype.Revise), for the prototypes of the agent Pods
	// that pin one; none for a prototype whose revision could not be
	// taken.
	Revisions map[types.NamespacedName]string
	// KubeVirt is the KubeVirt CR (reserve.LoadKubeVirt), read once when a
	// VMI reports its memory overhead beside an agent Pod that holds room,
	// to compare that overhead with vmctl's (Warnings); KubeVirtRead says
	// it was read, nil meaning none exists.
	KubeVirt     *kubevirtv1.KubeVirt
	KubeVirtRead bool
}

// Load reads an Inventory with paged LISTs narrowed by label or by name,
// never a GET: first, at once, the derived VMs, their instances and the
// agent Pods of q's namespace; then, as those name them, the VMs and
// instances of the other namespaces q's agents put VMs in, and by name the
// Pod and the prototype each derived VM records (past kube.MaxByName of them in
// a namespace, one LIST of that namespace instead). VMs vmctl did not make
// are never read otherwise. A VM listed before its agent's Pod was created
// is paired all the same: its Pod is read by name after the VM. Then it
// takes the revision each prototype that agent Pods pin a revision of
// would pin now (Revisions): a GET of KubeVirt's expansion for one with an
// instancetype or preference, no request for another. When, all that
// read, an agent Pod lacks its VM, one LIST of the agents' Warning Events
// (thenNeeds) says why. Last, when a VMI
// reports its memory overhead beside an agent Pod that holds room, it
// LISTs the KubeVirt CRs (see readKubeVirt).
func Load(ctx context.Context, c kube.Clients, q Query) (*Inventory, error) {
	b := newBuilder(q)
	have := map[source]bool{}
	for {
		fresh := pending(needs(q, b.inv), have)
		if len(fresh) == 0 {
			fresh = pending(thenNeeds(q, b.inv), have)
		}
		if len(fresh) == 0 {
			newReviser(c.Expand).revise(ctx, b.inv, time.Now())
			readKubeVirt(ctx, c, b.inv)
			return b.inv, nil
		}
		read := make([][]any, len(fresh))
		err := readAll(ctx, c, q, fresh, func(i int, obj runtime.Object) {
			kept, _ := fresh[i].slim(obj)
			read[i] = append(read[i], kept)
		})
		if err != nil {
			return nil, err
		}
		for i, src := range fresh {
			have[src] = true
			for _, obj := range read[i] {
				b.add(src.role, obj)
			}
		}
	}
}

func vmNamespacesOf(pods []*corev1.Pod, q Query) []string {
	var out []string
	for _, p := range pods {
		if !q.InScope(p.Namespace) {
			continue
		}
		if a, ok := contract.ParseAgent(p); ok {
			out = append(out, a.Namespace)
		}
	}
	return out
}

// sortedSet returns the distinct, non-empty names not yet in seen, sorted,
// and marks them seen.
func sortedSet(names []string, seen map[string]bool) []string {
	var fresh []string
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			fresh = append(fresh, n)
		}
	}
	slices.Sort(fresh)
	return fresh
}
