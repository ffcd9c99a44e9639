package agent

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
	"kubevirt.io/client-go/kubevirt/scheme"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// vmAPI is all the agent asks of KubeVirt: one VM at a time, by name, and
// the VMs labelled for its Pod.
type vmAPI interface {
	get(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachine, error)
	create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error)
	delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
	// list and watch serve a Reflector on the VMs of namespace that sel
	// selects: one VM by name (kube.ByName), or the VMs labelled for the
	// agent's Pod (findMade).
	list(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error)
	watch(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (watch.Interface, error)
}

// vmiAPI is what the agent needs of VMIs: its own VM's, by name, which it
// follows while it hands over its Pod's room (see handOver), and which it
// deletes when a drain asks it to stop its VM.
type vmiAPI interface {
	listVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error)
	watchVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error)
	deleteVMI(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// podAPI is all the agent asks of the core API about Pods: its own, once,
// and a resize of its own, once, and its eviction when it gives up its
// node; and its VM's launcher Pod, which it lists by label, follows by name
// and nominates to its node while it hands over the room its Pod held (see
// handOver).
type podAPI interface {
	getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// resize applies a strategic merge patch to the Pod's resize subresource.
	resize(ctx context.Context, namespace, name string, patch []byte) error
	// evict asks the Eviction API to evict the Pod namespace/name with
	// uid, never a later Pod of the same name.
	evict(ctx context.Context, namespace, name string, uid types.UID) error
	// podsIn lists and watches the Pods of namespace: the caller narrows
	// them to the VM's launcher Pods by label, or to one by name.
	podsIn(namespace string) kube.ListerWatcher[*corev1.PodList]
	// nominate sets the Pod's status.nominatedNodeName to node.
	nominate(ctx context.Context, namespace, name, node string) error
}

// revisionAPI is what the agent asks of its workload's revision store, the
// one VMRevisionStore that holds the VM revisions the workload's
// templates pin: a GET of it by name on each attempt to make the VM, and,
// while it lacks the revision the Pod pins, a list and watch narrowed to
// its name (kube.ByName), which a Role's resourceNames can allow.
type revisionAPI interface {
	getRevisions(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	listRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	watchRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error)
}

type kubevirtVMs struct{ cs kubevirt.Interface }

func (c kubevirtVMs) get(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachine, error) {
	return c.cs.KubevirtV1().VirtualMachines(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c kubevirtVMs) create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	return c.cs.KubevirtV1().VirtualMachines(vm.Namespace).Create(ctx, vm, metav1.CreateOptions{})
}

func (c kubevirtVMs) delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return c.cs.KubevirtV1().VirtualMachines(namespace).Delete(ctx, name, opts)
}

func (c kubevirtVMs) list(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error) {
	list := &kubevirtv1.VirtualMachineList{}
	return list, c.listWatch(namespace, "virtualmachines", sel, opts).Do(ctx).Into(list)
}

func (c kubevirtVMs) watch(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.listWatch(namespace, "virtualmachines", sel, opts).Watch(ctx)
}

func (c kubevirtVMs) listVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error) {
	list := &kubevirtv1.VirtualMachineInstanceList{}
	return list, c.listWatch(namespace, "virtualmachineinstances", kube.ByName(name), opts).Do(ctx).Into(list)
}

func (c kubevirtVMs) watchVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.listWatch(namespace, "virtualmachineinstances", kube.ByName(name), opts).Watch(ctx)
}

// listWatch is the typed client's list or watch of what sel selects, as
// a request that client-go does not retry by itself: the reflector that
// asks retries it with the agent's jittered backoff. client-go retries a 429
// that carries Retry-After up to ten times within the one call, after
// exactly the seconds the server named. An API server whose watch cache is
// filling (after its restart, or after etcd's history was compacted under
// it) answers every watch "429 storage is (re)initializing, Retry-After: 1",
// and a fleet of agents then asked again once a second, in lockstep: 7,428
// requests refused so from 1,000 agents in the minute after an etcd
// compaction in the fleet benchmark. The agent's other requests keep
// client-go's retries: their 429s come from API Priority and Fairness, whose
// Retry-After paces a herd better than a retry of the whole step would.
func (c kubevirtVMs) listWatch(namespace, resource string, sel kube.Selector, opts metav1.ListOptions) *rest.Request {
	return listWatchRequest(c.cs.KubevirtV1().RESTClient(), scheme.ParameterCodec, namespace, resource, sel, opts)
}

// listWatchRequest is the list or watch of resource in namespace that sel
// selects, through rc, not retried by client-go (see listWatch).
func listWatchRequest(rc rest.Interface, codec runtime.ParameterCodec, namespace, resource string, sel kube.Selector, opts metav1.ListOptions) *rest.Request {
	opts.LabelSelector, opts.FieldSelector = sel.Label, sel.Field
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return rc.Get().Namespace(namespace).Resource(resource).
		VersionedParams(&opts, codec).Timeout(timeout).MaxRetries(0)
}

type kubeRevisions struct{ dyn dynamic.Interface }

func (c kubeRevisions) getRevisions(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(revision.StoreGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c kubeRevisions) listRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	opts.FieldSelector = kube.ByName(name).Field
	return c.dyn.Resource(revision.StoreGVR).Namespace(namespace).List(ctx, opts)
}

// watchRevisions watches the one store name. The dynamic client keeps
// client-go's retries of a 429 (see listWatch): this watch is opened only
// while the store lacks the revision the Pod pins.
func (c kubeRevisions) watchRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = kube.ByName(name).Field
	return c.dyn.Resource(revision.StoreGVR).Namespace(namespace).Watch(ctx, opts)
}

func (c kubevirtVMs) deleteVMI(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return c.cs.KubevirtV1().VirtualMachineInstances(namespace).Delete(ctx, name, opts)
}

type kubePods struct{ cs kubernetes.Interface }

func (c kubePods) evict(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.cs.PolicyV1().Evictions(namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: namespace},
		DeleteOptions: contract.EvictionDeleteOptions(uid),
	})
}

func (c kubePods) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c kubePods) podsIn(namespace string) kube.ListerWatcher[*corev1.PodList] {
	return c.cs.CoreV1().Pods(namespace)
}

func (c kubePods) nominate(ctx context.Context, namespace, name, node string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]string{"nominatedNodeName": node}})
	if err != nil {
		return err
	}
	_, err = c.cs.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func (c kubePods) resize(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := c.cs.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	return err
}
