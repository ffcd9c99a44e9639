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
	// watch follows the one VM namespace/name from resourceVersion.
	watch(ctx context.Context, namespace, name, resourceVersion string) (watch.Interface, error)
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

func (c kubevirtVMs) watch(ctx context.Context, namespace, name, resourceVersion string) (watch.Interface, error) {
	return c.cs.KubevirtV1().VirtualMachines(namespace).Watch(ctx, metav1.ListOptions{
		// One object by name: never a watch over every VM in the namespace.
		FieldSelector:       fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion:     resourceVersion,
		AllowWatchBookmarks: true,
	})
}

type kubePods struct{ cs kubernetes.Interface }

func (c kubePods) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
