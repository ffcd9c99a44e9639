package status

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"
)

// call is a recorded API call: verb, resource, namespace and label selector.
type call struct{ Verb, Resource, Namespace, Selector string }

func calls(actions ...[]k8stesting.Action) []call {
	var out []call
	for _, as := range actions {
		for _, a := range as {
			c := call{Verb: a.GetVerb(), Resource: a.GetResource().Resource, Namespace: a.GetNamespace()}
			if l, ok := a.(k8stesting.ListAction); ok {
				c.Selector = l.GetListRestrictions().Labels.String()
			}
			out = append(out, c)
		}
	}
	return out
}

// record logs the actions of several fakes in the order they happen.
func record(fakes ...*k8stesting.Fake) *[]k8stesting.Action {
	var mu sync.Mutex
	log := &[]k8stesting.Action{}
	for _, f := range fakes {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			*log = append(*log, a)
			return false, nil, nil
		})
	}
	return log
}

func TestLoad(t *testing.T) {
	pod := func(p corev1.Pod) runtime.Object { return &p }
	vm := func(v kubevirtv1.VirtualMachine) runtime.Object { return &v }
	vmiObj := func(v kubevirtv1.VirtualMachineInstance) runtime.Object {
		v.Labels = map[string]string{"vmctl.kubevirt.io/prototype": "web"}
		return &v
	}
	unlabelled := agentPod("ns", "plain", "uid-plain", "n1", "web", time.Hour)
	unlabelled.Labels = nil

	tests := []struct {
		name      string
		query     Query
		kube      []runtime.Object
		virt      []runtime.Object
		wantCalls []call
		wantPods  int
		wantVMs   int
		wantVMIs  int
	}{{
		name:  "one namespace, no cross-namespace agents: one LIST per kind",
		query: Query{Namespace: "ns"},
		kube:  []runtime.Object{pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)), pod(unlabelled)},
		virt: []runtime.Object{vm(prototype("ns", "web", 1)), vm(derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)),
			vmiObj(vmi("ns", "web-a", "n1")), vmiObj(vmi("other", "web-b", "n1"))},
		wantCalls: []call{
			{"list", "virtualmachines", "ns", ""},
			{"list", "virtualmachineinstances", "ns", "vmctl.kubevirt.io/prototype"},
			{"list", "pods", "ns", "app.kubernetes.io/component=agent,app.kubernetes.io/name=vmctl"},
		},
		wantPods: 1, wantVMs: 2, wantVMIs: 1,
	}, {
		name:  "all namespaces, prototype and pod selector",
		query: Query{Prototype: "web", PodSelector: "app.kubernetes.io/instance=web"},
		kube:  []runtime.Object{pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)), pod(agentPod("other", "b", "uid-b", "n1", "web", time.Hour))},
		wantCalls: []call{
			{"list", "virtualmachines", "", ""},
			{"list", "virtualmachineinstances", "", "vmctl.kubevirt.io/prototype=web"},
			{"list", "pods", "", "app.kubernetes.io/component=agent,app.kubernetes.io/instance=web,app.kubernetes.io/name=vmctl"},
		},
		wantPods: 2,
	}, {
		name:  "cross-namespace agents cost one LIST per other namespace and kind needed",
		query: Query{Namespace: "ns"},
		kube: []runtime.Object{
			pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, func(p *corev1.Pod) {
				p.Spec.Containers[0].Args = []string{"web", "-n", "vms", "--proto-namespace=protos"}
			})),
			pod(agentPod("podns", "x", "uid-x", "n1", "web", time.Hour)),
		},
		virt: []runtime.Object{
			vm(derivedVM("ns", "web", 1, "podns", "x", "uid-x", "n1", time.Hour)),
			vm(func() kubevirtv1.VirtualMachine {
				v := derivedVM("vms", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
				v.Annotations["vmctl.kubevirt.io/prototype-namespace"] = "protos"
				return v
			}()),
			vm(prototype("protos", "web", 1)),
		},
		wantCalls: []call{
			{"list", "virtualmachines", "ns", ""},
			{"list", "virtualmachineinstances", "ns", "vmctl.kubevirt.io/prototype"},
			{"list", "pods", "ns", "app.kubernetes.io/component=agent,app.kubernetes.io/name=vmctl"},
			{"list", "pods", "podns", "app.kubernetes.io/component=agent,app.kubernetes.io/name=vmctl"},
			{"list", "virtualmachines", "vms", ""},
			{"list", "virtualmachineinstances", "vms", "vmctl.kubevirt.io/prototype"},
			{"list", "virtualmachines", "protos", ""},
		},
		wantPods: 2, wantVMs: 3,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewClientset(tt.kube...)
			virt := kubevirtfake.NewSimpleClientset(tt.virt...)
			log := record(&kube.Fake, &virt.Fake)
			inv, err := Load(t.Context(), Clients{Kube: kube, KubeVirt: virt}, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got := calls(*log)
			if diff := cmp.Diff(tt.wantCalls, got); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
			if len(inv.Pods) != tt.wantPods || len(inv.VMs) != tt.wantVMs || len(inv.VMIs) != tt.wantVMIs {
				t.Errorf("got %d pods, %d VMs, %d VMIs; want %d, %d, %d",
					len(inv.Pods), len(inv.VMs), len(inv.VMIs), tt.wantPods, tt.wantVMs, tt.wantVMIs)
			}
		})
	}
}

func TestListFollowsPages(t *testing.T) {
	kube := kubefake.NewClientset()
	var seen []metav1.ListOptions
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		seen = append(seen, opts)
		page := &corev1.PodList{}
		switch opts.Continue {
		case "":
			page.Items = []corev1.Pod{agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)}
			page.Continue = "page-2"
		case "page-2":
			page.Items = []corev1.Pod{agentPod("ns", "b", "uid-b", "n1", "web", time.Hour)}
		}
		return true, page, nil
	})
	pods, err := ListPods(t.Context(), kube, "ns", AgentSelector)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Name != "a" || pods[1].Name != "b" {
		t.Errorf("got %d pods, want a and b from two pages", len(pods))
	}
	want := []metav1.ListOptions{
		{LabelSelector: AgentSelector, Limit: 500},
		{LabelSelector: AgentSelector, Limit: 500, Continue: "page-2"},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
}
