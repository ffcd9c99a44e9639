package adaptercmd

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/guestmetrics"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Follow starts following, until ctx ends, every agent Pod and every
// derived VMI of the cluster, one watch each and only what Provider reads
// of them, and returns the Sources that read them and, for each request,
// metrics-server's PodMetrics of a namespace's launcher Pods.
func Follow(ctx context.Context, k kubernetes.Interface, virt kubevirt.Interface, metrics metricsclient.Interface) Sources {
	f := kube.NewFollower(ctx)
	pods := f.Follow(kube.ListWatch(k.CoreV1().Pods(""), kube.Selector{Label: contract.LabelAgentPrototype}), &corev1.Pod{},
		kube.FollowOptions{Client: k, What: "agent Pods", Transform: slimAgentPod})
	vmis := f.Follow(kube.ListWatch(virt.KubevirtV1().VirtualMachineInstances(""), kube.Selector{Label: contract.LabelPod}), &kubevirtv1.VirtualMachineInstance{},
		kube.FollowOptions{Client: virt, What: "derived VMIs", Transform: slimVMI})
	return Sources{
		AgentPods: func(namespace string) []*corev1.Pod { return inNamespace[*corev1.Pod](pods, namespace) },
		VMIs: func(namespace string) []*kubevirtv1.VirtualMachineInstance {
			return inNamespace[*kubevirtv1.VirtualMachineInstance](vmis, namespace)
		},
		LauncherMetrics: func(ctx context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error) {
			list, err := metrics.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: guestmetrics.LauncherSelector})
			if err != nil {
				return nil, err
			}
			return list.Items, nil
		},
		Synced:  f.Synced,
		Refusal: keepRefusal(ctx, f.Errors()),
	}
}

// keepRefusal logs each list or watch the API server refused (the
// adapter's RBAC, most often) and returns what reads the latest, so that
// the adapter's answer says why it has no data rather than that it is
// still listing.
func keepRefusal(ctx context.Context, errs <-chan error) func() error {
	var last atomic.Pointer[error]
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				klog.FromContext(ctx).Error(err, "the API server refused the adapter's list or watch; it retries with backoff")
				last.Store(&err)
			}
		}
	}()
	return func() error {
		if err := last.Load(); err != nil {
			return *err
		}
		return nil
	}
}

// inNamespace returns the objects of s in namespace.
func inNamespace[T metav1.Object](s *kube.Store, namespace string) []T {
	var out []T
	for _, obj := range s.List() {
		if o, ok := obj.(T); ok && o.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	return out
}
