package status

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// Clients are the typed clientsets status, diff and gc read through.
type Clients struct {
	Kube     kubernetes.Interface
	KubeVirt kubevirt.Interface
}

// ListPods lists the Pods of namespace ("" for all) matching selector, in
// pages of 500 (client-go's pager default), so a large cluster is read in
// bounded chunks rather than one huge response.
func ListPods(ctx context.Context, c kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(namespace).List(ctx, opts)
	})
	var out []corev1.Pod
	err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		out = append(out, *obj.(*corev1.Pod))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pods%s: %w", where(namespace), err)
	}
	return out, nil
}

// ListVMs lists the VirtualMachines of namespace ("" for all) matching
// selector, in pages of 500.
func ListVMs(ctx context.Context, c kubevirt.Interface, namespace, selector string) ([]kubevirtv1.VirtualMachine, error) {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachines(namespace).List(ctx, opts)
	})
	var out []kubevirtv1.VirtualMachine
	err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		out = append(out, *obj.(*kubevirtv1.VirtualMachine))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list virtualmachines%s: %w", where(namespace), err)
	}
	return out, nil
}

// ListVMIs lists the VirtualMachineInstances of namespace ("" for all)
// matching selector, in pages of 500.
func ListVMIs(ctx context.Context, c kubevirt.Interface, namespace, selector string) ([]kubevirtv1.VirtualMachineInstance, error) {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, opts)
	})
	var out []kubevirtv1.VirtualMachineInstance
	err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		out = append(out, *obj.(*kubevirtv1.VirtualMachineInstance))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list virtualmachineinstances%s: %w", where(namespace), err)
	}
	return out, nil
}

func where(namespace string) string {
	if namespace == "" {
		return " in all namespaces"
	}
	return fmt.Sprintf(" in namespace %q", namespace)
}
