package status

import (
	"context"
	"fmt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// PageSize is how many objects one LIST page holds (client-go's pager
// default), so a large cluster is read in bounded chunks.
const PageSize = 500

// ListPods lists the Pods of namespace ("" for all) matching selector, in
// pages of PageSize, each kept as Slim makes it.
func ListPods(ctx context.Context, c kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	err := eachItem(ctx, podPages(c, namespace), metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		out = append(out, *slimPod(obj.(*corev1.Pod)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pods%s: %w", where(namespace), err)
	}
	return out, nil
}

// ListVMs lists the VirtualMachines of namespace ("" for all) matching
// selector, in pages of PageSize, each kept as Slim makes it: without spec.
func ListVMs(ctx context.Context, c kubevirt.Interface, namespace, selector string) ([]kubevirtv1.VirtualMachine, error) {
	var out []kubevirtv1.VirtualMachine
	err := eachItem(ctx, vmPages(c, namespace), metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		out = append(out, *slimVM(obj.(*kubevirtv1.VirtualMachine)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list virtualmachines%s: %w", where(namespace), err)
	}
	return out, nil
}

// EachVMPage lists the VirtualMachines of namespace ("" for all) matching
// selector and calls fn with each page (up to PageSize VMs) as it arrives,
// in the API's order (by namespace, then name): memory holds one page, not
// every VM. fn must not keep the slice.
func EachVMPage(ctx context.Context, c kubevirt.Interface, namespace, selector string, fn func([]kubevirtv1.VirtualMachine) error) error {
	vms := c.KubevirtV1().VirtualMachines(namespace)
	opts := metav1.ListOptions{LabelSelector: selector, Limit: PageSize}
	for {
		page, err := vms.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list virtualmachines%s: %w", where(namespace), err)
		}
		if err := fn(page.Items); err != nil {
			return err
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// readSource reads src's objects page by page and calls fn with each. The
// object is the page's: copy what is kept (Slim does).
func readSource(ctx context.Context, c kube.Clients, src source, q Query, fn func(runtime.Object)) error {
	var pages pager.ListPageFunc
	switch src.resource() {
	case "pods":
		pages = podPages(c.Kube, src.namespace)
	case "virtualmachineinstances":
		pages = vmiPages(c.KubeVirt, src.namespace)
	default:
		pages = vmPages(c.KubeVirt, src.namespace)
	}
	err := eachItem(ctx, pages, src.listOptions(q), func(obj runtime.Object) error {
		fn(obj)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", src, err)
	}
	return nil
}

// loadWorkers is how many LISTs readAll has in flight at once.
const loadWorkers = 8

// readAll reads srcs, loadWorkers at a time, and calls fn(i, obj) with each
// object of srcs[i]: from several goroutines, but for one i from one only.
// It returns the first failed source's error, as reading one source after
// the other would have.
func readAll(ctx context.Context, c kube.Clients, q Query, srcs []source, fn func(i int, obj runtime.Object)) error {
	errs := make([]error, len(srcs))
	workqueue.ParallelizeUntil(ctx, loadWorkers, len(srcs), func(i int) {
		errs[i] = readSource(ctx, c, srcs[i], q, func(obj runtime.Object) { fn(i, obj) })
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// eachItem calls fn with every object a paged LIST returns, fetching the
// next page while fn works through one.
func eachItem(ctx context.Context, pages pager.ListPageFunc, opts metav1.ListOptions, fn func(runtime.Object) error) error {
	p := pager.New(pages)
	p.PageBufferSize = 1
	return p.EachListItem(ctx, opts, fn)
}

func podPages(c kubernetes.Interface, namespace string) pager.ListPageFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(namespace).List(ctx, opts)
	}
}

func vmPages(c kubevirt.Interface, namespace string) pager.ListPageFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachines(namespace).List(ctx, opts)
	}
}

func vmiPages(c kubevirt.Interface, namespace string) pager.ListPageFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, opts)
	}
}

func where(namespace string) string {
	if namespace == "" {
		return " in all namespaces"
	}
	return fmt.Sprintf(" in namespace %q", namespace)
}
