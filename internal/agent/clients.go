package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// vmAPI is all the agent asks of KubeVirt: one VM at a time, by name.
type vmAPI interface {
	get(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachine, error)
	create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error)
	delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
	// list and watch serve an informer on the one VM namespace/name: they
	// narrow opts to it with a field selector.
	list(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error)
	watch(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error)
}

// vmiAPI is what an agent that stops its VM when a drain asks for it needs
// of VMIs: its own VM's, by name.
type vmiAPI interface {
	listVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error)
	watchVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error)
	deleteVMI(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// podAPI is all the agent asks of the core API about Pods: its own, once.
type podAPI interface {
	getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
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

func (c kubevirtVMs) list(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error) {
	return c.cs.KubevirtV1().VirtualMachines(namespace).List(ctx, byName(opts, name))
}

func (c kubevirtVMs) watch(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.cs.KubevirtV1().VirtualMachines(namespace).Watch(ctx, byName(opts, name))
}

func (c kubevirtVMs) listVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error) {
	return c.cs.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, byName(opts, name))
}

func (c kubevirtVMs) watchVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.cs.KubevirtV1().VirtualMachineInstances(namespace).Watch(ctx, byName(opts, name))
}

func (c kubevirtVMs) deleteVMI(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return c.cs.KubevirtV1().VirtualMachineInstances(namespace).Delete(ctx, name, opts)
}

// byName narrows opts to one object: never a list or watch of every VM in
// the namespace. RBAC then also sees the name, so a Role's resourceNames can
// allow list and watch of just that object.
func byName(opts metav1.ListOptions, name string) metav1.ListOptions {
	opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	return opts
}

type kubePods struct{ cs kubernetes.Interface }

func (c kubePods) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
