package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// kind is everything rollout does that differs by workload kind, in the
// manner of kubectl's polymorphichelpers (one function per verb and kind):
// how to tell, read, follow and patch its objects, and how far its own
// rollout has come. Its functions are given objects of the kind only (is
// says which).
type kind struct {
	resource schema.GroupResource
	is       func(runtime.Object) bool
	// spec is the Pod template and selector of an object.
	spec func(runtime.Object) podSpec
	// status is kubectl rollout status's verdict on the object itself.
	status func(runtime.Object) Progress
	// partition is the ordinal below which a rollout leaves Pods as they
	// are: nil for kinds without one.
	partition func(runtime.Object) *int32
	// paused reports an object whose controller does not roll out now.
	paused func(runtime.Object) bool
	client func(c kubernetes.Interface, namespace string) client
}

// podSpec is what a workload says of its Pods.
type podSpec struct {
	template *corev1.PodTemplateSpec
	selector *metav1.LabelSelector
}

// kinds are the workload kinds that run agents, in the order Find lists
// them.
var kinds = []kind{{
	resource: schema.GroupResource{Group: "apps", Resource: "deployments"},
	is:       isA[*appsv1.Deployment],
	spec: as(func(d *appsv1.Deployment) podSpec {
		return podSpec{&d.Spec.Template, d.Spec.Selector}
	}),
	status:    as(deploymentStatus),
	partition: func(runtime.Object) *int32 { return nil },
	paused:    as(func(d *appsv1.Deployment) bool { return d.Spec.Paused }),
	client: func(c kubernetes.Interface, ns string) client {
		return clientOf(c.AppsV1().Deployments(ns))
	},
}, {
	resource: schema.GroupResource{Group: "apps", Resource: "statefulsets"},
	is:       isA[*appsv1.StatefulSet],
	spec: as(func(s *appsv1.StatefulSet) podSpec {
		return podSpec{&s.Spec.Template, s.Spec.Selector}
	}),
	status:    as(statefulSetStatus),
	partition: as(statefulSetPartition),
	paused:    func(runtime.Object) bool { return false },
	client: func(c kubernetes.Interface, ns string) client {
		return clientOf(c.AppsV1().StatefulSets(ns))
	},
}, {
	resource: schema.GroupResource{Group: "apps", Resource: "daemonsets"},
	is:       isA[*appsv1.DaemonSet],
	spec: as(func(d *appsv1.DaemonSet) podSpec {
		return podSpec{&d.Spec.Template, d.Spec.Selector}
	}),
	status:    as(daemonSetStatus),
	partition: func(runtime.Object) *int32 { return nil },
	paused:    func(runtime.Object) bool { return false },
	client: func(c kubernetes.Interface, ns string) client {
		return clientOf(c.AppsV1().DaemonSets(ns))
	},
}}

// statefulSetPartition is a StatefulSet's partition, nil when it sets none:
// the kind table and statefulSetStatus both read it here, so they agree.
func statefulSetPartition(s *appsv1.StatefulSet) *int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		return ru.Partition
	}
	return nil
}

// kindOf is the kind of obj, or an error that says which kinds rollout
// knows.
func kindOf(obj runtime.Object) (*kind, error) {
	for i := range kinds {
		if kinds[i].is(obj) {
			return &kinds[i], nil
		}
	}
	return nil, fmt.Errorf("%T is not a Deployment, StatefulSet or DaemonSet: vmctl rolls out only those", obj)
}

// singular is kubectl's name of one object of the kind: "deployment".
func (k *kind) singular() string {
	return strings.TrimSuffix(k.resource.Resource, "s")
}

func isA[T runtime.Object](obj runtime.Object) bool {
	_, ok := obj.(T)
	return ok
}

// as makes f, a function of one kind's objects, a function of the kind
// table's.
func as[T runtime.Object, R any](f func(T) R) func(runtime.Object) R {
	return func(obj runtime.Object) R { return f(obj.(T)) }
}

// client is what rollout asks of one kind's API in one namespace.
type client struct {
	list   kube.ListFunc
	follow func(kube.Selector) *cache.ListWatch
	patch  func(ctx context.Context, name string, strategicMerge []byte, opts metav1.PatchOptions) (runtime.Object, error)
}

// typedClient is client-go's typed client of one workload kind, such as
// clientset.AppsV1().Deployments(namespace).
type typedClient[T, L runtime.Object] interface {
	kube.ListerWatcher[L]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

func clientOf[T, L runtime.Object](c typedClient[T, L]) client {
	return client{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		follow: func(sel kube.Selector) *cache.ListWatch { return kube.ListWatch[L](c, sel) },
		patch: func(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			obj, err := c.Patch(ctx, name, types.StrategicMergePatchType, data, opts)
			if err != nil {
				return nil, err
			}
			return obj, nil
		},
	}
}
