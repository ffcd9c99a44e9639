package status

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// readAll reads srcs, kube.Workers at a time, and calls fn(i, obj) with
// each object of srcs[i]: from several goroutines, but for one i from one
// only. It returns the first failed source's error, as reading one source
// after the other would have. The object is the page's: copy what is kept
// (kube.Slim does).
func readAll(ctx context.Context, c kube.Clients, q Query, srcs []source, fn func(i int, obj runtime.Object)) error {
	return kube.ReadAll(ctx, len(srcs), func(i int) error {
		src := srcs[i]
		list := kube.VMs(c.KubeVirt, src.namespace)
		switch src.resource() {
		case "pods":
			list = kube.Pods(c.Kube, src.namespace)
		case "virtualmachineinstances":
			list = kube.VMIs(c.KubeVirt, src.namespace)
		case "persistentvolumeclaims":
			list = kube.Claims(c.Kube, src.namespace)
		case "events":
			list = kube.Events(c.Kube, src.namespace)
		case revision.StoreResource:
			stores := c.Dynamic.Resource(revision.StoreGVR).Namespace(src.namespace)
			list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return stores.List(ctx, o) }
		}
		err := kube.EachItem(ctx, list, src.listOptions(q), func(obj runtime.Object) error {
			fn(i, obj)
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", src, err)
		}
		return nil
	})
}
