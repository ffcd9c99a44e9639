package adaptercmd

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/guestmetrics"
)

// sources serves fixed agent Pods, VMIs and launcher metrics, and counts
// the LISTs of launcher metrics asked for.
type sources struct {
	pods      []*corev1.Pod
	vmis      []*kubevirtv1.VirtualMachineInstance
	launchers []metricsv1beta1.PodMetrics
	err       error
	synced    bool
	refusal   error
	lists     int
}

func (s *sources) Sources() Sources {
	return Sources{
		AgentPods: func(string) []*corev1.Pod { return s.pods },
		VMIs:      func(string) []*kubevirtv1.VirtualMachineInstance { return s.vmis },
		LauncherMetrics: func(context.Context, string) ([]metricsv1beta1.PodMetrics, error) {
			s.lists++
			return s.launchers, s.err
		},
		Synced:  func() bool { return s.synced },
		Refusal: func() error { return s.refusal },
	}
}

// agentPod, derivedVMI and launcher are an agent Pod of app web, its VMI
// of one vCPU, and its launcher's PodMetrics, its compute container using
// cpu.
func agentPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}}}
}

func derivedVMI(pod, uid string, vcpus uint32) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm-" + pod, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{contract.LabelPod: pod}},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{CurrentCPUTopology: &kubevirtv1.CPUTopology{Sockets: vcpus}},
	}
}

func launcher(name, vmi, cpu string) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{kubevirtv1.CreatedByLabel: vmi}},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "compute", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}},
	}
}

func info(metric string) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: metric}
}

// TestProviderBySelector: an HPA's question, the Pods its selector picks,
// costs one LIST of launcher metrics, and none when it picks no Pod.
func TestProviderBySelector(t *testing.T) {
	other := agentPod("db-a")
	other.Labels = map[string]string{"app": "db"}
	s := &sources{
		pods:      []*corev1.Pod{agentPod("web-a"), agentPod("web-b"), other},
		vmis:      []*kubevirtv1.VirtualMachineInstance{derivedVMI("web-a", "vmi-a", 1), derivedVMI("web-b", "vmi-b", 1), derivedVMI("db-a", "vmi-db", 1)},
		launchers: []metricsv1beta1.PodMetrics{launcher("l-a", "vmi-a", "100m"), launcher("l-b", "vmi-b", "300m"), launcher("l-db", "vmi-db", "1")},
		synced:    true,
	}
	p := NewProvider(s.Sources())
	list, err := p.GetMetricBySelector(t.Context(), "ns", labels.SelectorFromSet(labels.Set{"app": "web"}), info(guestmetrics.MetricVMCPUUtilization), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range list.Items {
		got = append(got, v.DescribedObject.Name+"="+v.Value.String())
	}
	if strings.Join(got, " ") != "web-a=10 web-b=30" || s.lists != 1 {
		t.Errorf("values %q after %d LISTs, want web-a=10 web-b=30 after 1", got, s.lists)
	}
	list, err = p.GetMetricBySelector(t.Context(), "ns", labels.SelectorFromSet(labels.Set{"app": "none"}), info(guestmetrics.MetricVMCPUUsage), labels.Everything())
	if err != nil || len(list.Items) != 0 || s.lists != 1 {
		t.Errorf("no Pod selected: %d values, error %v, %d LISTs; want none, nil, still 1", len(list.Items), err, s.lists)
	}
	v, err := p.GetMetricByName(t.Context(), types.NamespacedName{Namespace: "ns", Name: "db-a"}, info(guestmetrics.MetricVMCPUUsage), labels.Everything())
	if err != nil || v.Value.String() != "1" {
		t.Errorf("db-a: %v, %v; want 1 core", v, err)
	}
}

// TestProviderRefuses: what it does not serve, what it cannot know yet, and
// metrics-server missing, each with a reason that says what to do.
func TestProviderRefuses(t *testing.T) {
	ready := func() *sources {
		return &sources{pods: []*corev1.Pod{agentPod("web-a")}, vmis: []*kubevirtv1.VirtualMachineInstance{derivedVMI("web-a", "vmi-a", 1)}, synced: true}
	}
	everything := labels.Everything()
	web := types.NamespacedName{Namespace: "ns", Name: "web-a"}
	for _, tc := range []struct {
		name   string
		src    *sources
		info   provider.CustomMetricInfo
		metric labels.Selector
		is     func(error) bool
		says   string
	}{
		{"another metric", ready(), info("cpu_usage"), everything, apierrors.IsNotFound, "metric cpu_usage for pods"},
		{"another resource", ready(), provider.CustomMetricInfo{GroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Metric: guestmetrics.MetricVMCPUUsage}, everything, apierrors.IsNotFound, "deployments.apps"},
		{"a metric selector", ready(), info(guestmetrics.MetricVMCPUUsage), labels.SelectorFromSet(labels.Set{"a": "b"}), apierrors.IsBadRequest, "has no labels to select by"},
		{"not listed yet", &sources{}, info(guestmetrics.MetricVMCPUUsage), everything, apierrors.IsServiceUnavailable, "still listing"},
		{"its list refused", &sources{refusal: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied"))},
			info(guestmetrics.MetricVMCPUUsage), everything, apierrors.IsServiceUnavailable, "cannot list agent Pods and VMIs: pods is forbidden: RBAC: access denied; grant its ServiceAccount"},
		{"metrics-server absent", func() *sources {
			s := ready()
			s.err = apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
			return s
		}(), info(guestmetrics.MetricVMCPUUsage), everything, apierrors.IsServiceUnavailable, "install it"},
		{"not sampled yet", ready(), info(guestmetrics.MetricVMCPUUsage), everything, apierrors.IsNotFound, "web-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewProvider(tc.src.Sources()).GetMetricByName(t.Context(), web, tc.info, tc.metric)
			if err == nil || !tc.is(err) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v, want one of its kind saying %q", err, tc.says)
			}
		})
	}
}

// TestKeepRefusal: the latest refusal the Follower hears is the one read,
// and none is read before any.
func TestKeepRefusal(t *testing.T) {
	errs := make(chan error)
	refusal := keepRefusal(t.Context(), errs)
	if err := refusal(); err != nil {
		t.Fatalf("before any refusal: %v", err)
	}
	errs <- errors.New("first")
	errs <- errors.New("second")
	errs <- errors.New("third") // received only once "second" is kept
	if err := refusal(); err == nil || err.Error() == "first" {
		t.Errorf("after three refusals read %v, want a later one", err)
	}
}
