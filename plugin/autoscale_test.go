package plugin

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

func agentDeployment(name string, agent bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	if agent {
		labels[contract.LabelAgentPrototype] = "testvm"
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms"},
		Spec:       appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}},
	}
}

// TestAutoscale: the HPA kubectl vmctl autoscale creates scales the
// workload on its guests' CPU share; what it cannot scale, or what runs no
// VMs, is refused with the reason, and nothing is created.
func TestAutoscale(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		objs    []runtime.Object
		out     string // in stdout
		err     string
		created bool
	}{
		{name: "a Deployment of agents", args: []string{"deployment", "web", "--min=2", "--max=10", "--vm-cpu-percent=60"},
			objs: []runtime.Object{agentDeployment("web", true)}, out: "horizontalpodautoscaler.autoscaling/web autoscaled", created: true},
		{name: "TYPE/NAME, server-side dry run", args: []string{"deploy/web", "--max=3", "--dry-run=server"},
			objs: []runtime.Object{agentDeployment("web", true)}, out: "horizontalpodautoscaler.autoscaling/web autoscaled (server dry run)"},
		{name: "not vmctl's", args: []string{"deployment", "plain", "--max=3"},
			objs: []runtime.Object{agentDeployment("plain", false)}, err: "deployment/plain runs no vmctl agents"},
		{name: "missing", args: []string{"statefulset", "db", "--max=3"}, err: "statefulset/db not found in namespace vms"},
		{name: "a DaemonSet", args: []string{"daemonset/web", "--max=3"}, err: "no HorizontalPodAutoscaler can scale it"},
		{name: "min above max", args: []string{"deployment", "web", "--min=4", "--max=3"}, objs: []runtime.Object{agentDeployment("web", true)}, err: "a minimum of 4 replicas is more than the maximum, 3"},
		{name: "a percent over 100", args: []string{"deployment", "web", "--max=3", "--vm-cpu-percent=150"}, err: "1 to 100"},
		{name: "no max", args: []string{"deployment", "web"}, err: `required flag(s) "max" not set`},
		{name: "another kind", args: []string{"replicaset", "web", "--max=3"}, err: `cannot autoscale a "replicaset"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewClientset(tc.objs...)
			f := fakeapi.NewFactory(t, "vms", kube, kubevirtfake.NewSimpleClientset())
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			err := opRun(t.Context(), f, NewCmdAutoscale(f, streams), tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q, want %q", out, tc.out)
			}
			hpas, err := kube.AutoscalingV2().HorizontalPodAutoscalers("vms").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(strings.Join(tc.args, " "), "--dry-run=server") {
				return // the fake clientset writes what a server's dry run would not
			}
			if got := len(hpas.Items) == 1; got != tc.created {
				t.Fatalf("HPAs created: %d, want one: %v", len(hpas.Items), tc.created)
			}
			if !tc.created {
				return
			}
			spec := hpas.Items[0].Spec
			m := spec.Metrics[0]
			if *spec.MinReplicas != 2 || spec.MaxReplicas != 10 || spec.ScaleTargetRef.Kind != "Deployment" || spec.ScaleTargetRef.Name != "web" ||
				m.Pods == nil || m.Pods.Metric.Name != contract.MetricVMCPUUtilization || m.Pods.Target.AverageValue.String() != "60" {
				t.Errorf("HPA spec %+v, want 2 to 10 Pods of deployment web at an average %s of 60", spec, contract.MetricVMCPUUtilization)
			}
		})
	}
}
