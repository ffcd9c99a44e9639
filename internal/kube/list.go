package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// PageSize is how many objects one LIST page holds (client-go's pager
// default), so a large cluster is read in bounded chunks.
const PageSize = 500

// ListFunc asks for one page of a LIST: a typed clientset's List of one
// resource in one namespace.
type ListFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// Pods lists the Pods of namespace ("" for all).
func Pods(c kubernetes.Interface, namespace string) ListFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(namespace).List(ctx, opts)
	}
}

// Claims lists the PersistentVolumeClaims of namespace ("" for all).
func Claims(c kubernetes.Interface, namespace string) ListFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().PersistentVolumeClaims(namespace).List(ctx, opts)
	}
}

// Events lists the core/v1 Events of namespace ("" for all).
func Events(c kubernetes.Interface, namespace string) ListFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Events(namespace).List(ctx, opts)
	}
}

// VMs lists the VirtualMachines of namespace ("" for all).
func VMs(c kubevirt.Interface, namespace string) ListFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachines(namespace).List(ctx, opts)
	}
}

// VMIs lists the VirtualMachineInstances of namespace ("" for all).
func VMIs(c kubevirt.Interface, namespace string) ListFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, opts)
	}
}

// EachPage is vmctl's pager: it calls fn with each page of list, of at most
// PageSize objects (opts.Limit when set), as it arrives, in the API's order
// (by namespace, then name). Memory holds one page, not every object; fn
// must not keep the page's items. It returns the first error, list's or
// fn's, as it is.
func EachPage(ctx context.Context, list ListFunc, opts metav1.ListOptions, fn func(page runtime.Object) error) error {
	if opts.Limit == 0 {
		opts.Limit = PageSize
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := list(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		m, err := meta.ListAccessor(page)
		if err != nil {
			return err
		}
		if m.GetContinue() == "" {
			return nil
		}
		opts.Continue = m.GetContinue()
	}
}

// EachItem calls fn with every object of a paged LIST (EachPage). The
// object is the page's: copy what is kept.
func EachItem(ctx context.Context, list ListFunc, opts metav1.ListOptions, fn func(runtime.Object) error) error {
	return EachPage(ctx, list, opts, func(page runtime.Object) error { return meta.EachListItem(page, fn) })
}

// ListPods lists the Pods of namespace ("" for all) matching selector, page
// by page, each kept as Slim keeps it.
func ListPods(ctx context.Context, c kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	return listSlim[corev1.Pod](ctx, Pods(c, namespace), "pods", namespace, selector)
}

// ListVMs lists the VirtualMachines of namespace ("" for all) matching
// selector, page by page, each kept as Slim keeps it: without spec.
func ListVMs(ctx context.Context, c kubevirt.Interface, namespace, selector string) ([]kubevirtv1.VirtualMachine, error) {
	return listSlim[kubevirtv1.VirtualMachine](ctx, VMs(c, namespace), "virtualmachines", namespace, selector)
}

func listSlim[T any](ctx context.Context, list ListFunc, resource, namespace, selector string) ([]T, error) {
	var out []T
	err := EachItem(ctx, list, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		kept, _ := Slim(obj)
		out = append(out, *kept.(*T))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", Describe(resource, namespace, ""), err)
	}
	return out, nil
}

// EachVMPage calls fn with each page of the VirtualMachines of namespace
// ("" for all) matching selector, whole (spec included), as EachPage does.
// Errors of the LIST say so; fn's are returned as they are.
func EachVMPage(ctx context.Context, c kubevirt.Interface, namespace, selector string, fn func([]kubevirtv1.VirtualMachine) error) error {
	var stop error
	err := EachPage(ctx, VMs(c, namespace), metav1.ListOptions{LabelSelector: selector}, func(page runtime.Object) error {
		stop = fn(page.(*kubevirtv1.VirtualMachineList).Items)
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		return fmt.Errorf("list %s: %w", Describe("virtualmachines", namespace, ""), err)
	}
	return err
}

// Workers is how many LISTs ReadAll has in flight at once.
const Workers = 8

// ReadAll calls read with each index below n, Workers at a time, and
// returns the error of the lowest index that failed, as reading one after
// the other would have, else ctx's.
func ReadAll(ctx context.Context, n int, read func(i int) error) error {
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, Workers, n, func(i int) { errs[i] = read(i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Describe names what a LIST of resource reads, for errors: `pods in all
// namespaces`, `pods in namespace "x"` or `pods named "a" in namespace "x"`.
func Describe(resource, namespace, name string) string {
	if name != "" {
		resource += fmt.Sprintf(" named %q", name)
	}
	if namespace == "" {
		return resource + " in all namespaces"
	}
	return resource + fmt.Sprintf(" in namespace %q", namespace)
}
