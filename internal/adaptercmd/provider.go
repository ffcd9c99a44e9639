package adaptercmd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/guestmetrics"
)

// Sources is what Provider reads. AgentPods and VMIs come from watches;
// LauncherMetrics is one LIST of metrics-server's PodMetrics per request.
type Sources struct {
	// AgentPods returns the agent Pods of namespace, metadata only.
	AgentPods func(namespace string) []*corev1.Pod
	// VMIs returns the derived VMIs of namespace.
	VMIs func(namespace string) []*kubevirtv1.VirtualMachineInstance
	// LauncherMetrics lists the PodMetrics of namespace's launcher Pods
	// (guestmetrics.LauncherSelector).
	LauncherMetrics func(ctx context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error)
	// Synced reports whether AgentPods and VMIs have had their first list.
	Synced func() bool
	// Refusal returns the latest list or watch of AgentPods or VMIs that
	// the API server refused, or nil.
	Refusal func() error
}

// Provider serves guestmetrics.MetricVMCPUUsage and guestmetrics.MetricVMCPUUtilization of agent
// Pods (provider.CustomMetricsProvider). A Pod whose VM has no VMI, or
// whose launcher metrics-server has not sampled yet, has no value, so the
// HPA's rule for missing metrics applies: never a zero that would scale the
// fleet in.
type Provider struct {
	src Sources
}

// NewProvider returns a Provider reading src.
func NewProvider(src Sources) *Provider { return &Provider{src: src} }

var podsResource = schema.GroupResource{Resource: "pods"}

// ListAllMetrics lists the two metrics, of Pods.
func (p *Provider) ListAllMetrics() []provider.CustomMetricInfo {
	infos := make([]provider.CustomMetricInfo, 0, len(guestmetrics.Metrics))
	for _, m := range guestmetrics.Metrics {
		infos = append(infos, provider.CustomMetricInfo{GroupResource: podsResource, Namespaced: true, Metric: m})
	}
	return infos
}

// GetMetricByName returns the metric of one agent Pod.
func (p *Provider) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	if err := p.check(info, metricSelector); err != nil {
		return nil, err
	}
	values, err := p.values(ctx, name.Namespace, info.Metric, func(pod *corev1.Pod) bool { return pod.Name == name.Name })
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	return &values[0], nil
}

// GetMetricBySelector returns the metric of the agent Pods of namespace
// that selector selects, as an HPA asks for those of its workload.
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	if err := p.check(info, metricSelector); err != nil {
		return nil, err
	}
	values, err := p.values(ctx, namespace, info.Metric, func(pod *corev1.Pod) bool { return selector.Matches(labels.Set(pod.Labels)) })
	if err != nil {
		return nil, err
	}
	return &custom_metrics.MetricValueList{Items: values}, nil
}

// check refuses what is not served: another resource than Pods, another
// metric, or a metric selector, as these metrics have no labels.
func (p *Provider) check(info provider.CustomMetricInfo, metricSelector labels.Selector) error {
	if info.GroupResource != podsResource || !slices.Contains(guestmetrics.Metrics, info.Metric) {
		return provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	if metricSelector != nil && !metricSelector.Empty() {
		return apierrors.NewBadRequest(fmt.Sprintf("metric %s has no labels to select by (metricSelector %q)", info.Metric, metricSelector))
	}
	if err := p.src.NotReady(); err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	return nil
}

// NotReady says why the adapter cannot answer yet: it has not had its first
// list of agent Pods and VMIs, and whether the API server refused it. Its
// /readyz says the same, so that a restarted adapter takes no traffic
// before it can answer.
func (s Sources) NotReady() error {
	if s.Synced() {
		return nil
	}
	if err := s.Refusal(); err != nil {
		return fmt.Errorf("the adapter cannot list agent Pods and VMIs: %w; grant its ServiceAccount list and watch on pods and virtualmachineinstances (kubectl vmctl scaffold metrics-adapter)", err)
	}
	return errors.New("the adapter is still listing agent Pods and VMIs; ask again")
}

// values computes metric for the agent Pods of namespace that pick picks.
func (p *Provider) values(ctx context.Context, namespace, metric string, pick func(*corev1.Pod) bool) ([]custom_metrics.MetricValue, error) {
	var pods []*corev1.Pod
	for _, pod := range p.src.AgentPods(namespace) {
		if pick(pod) {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return []custom_metrics.MetricValue{}, nil
	}
	list, err := p.src.LauncherMetrics(ctx, namespace)
	if err != nil {
		return nil, launcherMetricsError(namespace, err)
	}
	return guestmetrics.Values(metric, pods, p.src.VMIs(namespace), list), nil
}

// launcherMetricsError says what the failed LIST of launcher PodMetrics
// means for the one who asked (the HPA's condition quotes it).
func launcherMetricsError(namespace string, err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err) {
		return apierrors.NewServiceUnavailable(fmt.Sprintf(
			"listing the launcher Pods' metrics (metrics.k8s.io) in namespace %s: %v; the guests' CPU comes from metrics-server: install it, or check its APIService (kubectl get apiservice v1beta1.metrics.k8s.io)", namespace, err))
	}
	if apierrors.IsForbidden(err) {
		return apierrors.NewServiceUnavailable(fmt.Sprintf(
			"listing the launcher Pods' metrics (metrics.k8s.io) in namespace %s: %v; grant the adapter's ServiceAccount list on pods.metrics.k8s.io", namespace, err))
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("listing the launcher Pods' metrics (metrics.k8s.io) in namespace %s: %v", namespace, err))
}

// slimAgentPod keeps of an agent Pod only what Provider reads: its name,
// namespace, UID and labels. Its signature is client-go's
// cache.TransformFunc.
func slimAgentPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Labels: pod.Labels,
		ResourceVersion: pod.ResourceVersion, DeletionTimestamp: pod.DeletionTimestamp,
	}}, nil
}

// slimVMI keeps of a VMI only what Provider reads: who it is, its labels,
// and what says how many vCPUs it has (guestmetrics.VCPUs).
func slimVMI(obj any) (any, error) {
	vmi, ok := obj.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return obj, nil
	}
	slim := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: vmi.Name, Namespace: vmi.Namespace, UID: vmi.UID, Labels: vmi.Labels,
		ResourceVersion: vmi.ResourceVersion, DeletionTimestamp: vmi.DeletionTimestamp,
	}}
	slim.Spec.Domain.CPU = vmi.Spec.Domain.CPU
	slim.Spec.Domain.Resources = vmi.Spec.Domain.Resources
	slim.Status.CurrentCPUTopology = vmi.Status.CurrentCPUTopology
	return slim, nil
}
