package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// TestTop: each agent Pod with its VM's vCPUs, its guest's CPU in cores
// and as a share of them, and its launcher's memory; a VM not measured
// yet and a Pod without a VM show <none>; no metrics-server is an error
// that says to install it.
func TestTop(t *testing.T) {
	pod := func(name string) runtime.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", UID: types.UID("uid-" + name),
			Labels: map[string]string{contract.LabelAgentPrototype: "testvm"}}}
	}
	vmi := func(pod string, cores uint32) runtime.Object {
		return &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Name: "testvm-" + pod, Namespace: "vms", UID: types.UID("vmi-" + pod), Labels: map[string]string{contract.LabelPod: pod}},
			Spec:       kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: cores}}},
		}
	}
	launcher := &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-a", Namespace: "vms",
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", contract.LabelPod: "web-a", kubevirtv1.CreatedByLabel: "vmi-web-a"}},
		Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "compute", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("600Mi")}},
			{Name: "guest-console-log", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("10Mi")}},
		},
	}
	for _, tc := range []struct {
		name      string
		noMetrics bool
		out, err  string
		stderr    string
	}{
		{name: "figures", out: "POD     VM             VCPUS   CPU(cores)   CPU(%)   MEMORY(bytes)\n" +
			"web-a   testvm-web-a   2       1500m        75%      610Mi\n" +
			"web-b   testvm-web-b   1       <none>       <none>   <none>\n" +
			"web-c   <none>         <none>  <none>       <none>   <none>\n",
			stderr: "has not measured the launchers of 1 VMs yet"},
		{name: "no metrics-server", noMetrics: true, err: "install it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewClientset(pod("web-a"), pod("web-b"), pod("web-c"))
			f := fakeapi.NewFactory(t, "vms", kube, kubevirtfake.NewSimpleClientset(vmi("web-a", 2), vmi("web-b", 1)))
			// The fake's tracker files PodMetrics under another resource
			// than the "pods" its client lists: answer the LIST here.
			m := metricsfake.NewSimpleClientset()
			m.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.noMetrics {
					return true, nil, apierrorsNotFound()
				}
				return true, &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{*launcher}}, nil
			})
			f.Metrics = m
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			err := opRun(t.Context(), f, NewCmdTop(f, streams), "--color=never")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(strings.Fields(out.String()), " "); got != strings.Join(strings.Fields(tc.out), " ") {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.out)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q, want %q", errOut, tc.stderr)
			}
		})
	}
}

func apierrorsNotFound() error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
}
