package status

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// call is a recorded API call: verb, resource, namespace, label and field
// selector.
type call struct{ Verb, Resource, Namespace, Labels, Fields string }

func calls(actions ...[]k8stesting.Action) []call {
	var out []call
	for _, as := range actions {
		for _, a := range as {
			c := call{Verb: a.GetVerb(), Resource: a.GetResource().Resource, Namespace: a.GetNamespace()}
			if l, ok := a.(k8stesting.ListAction); ok {
				c.Labels = l.GetListRestrictions().Labels.String()
				c.Fields = l.GetListRestrictions().Fields.String()
			}
			out = append(out, c)
		}
	}
	return out
}

// sortedCalls is calls sorted: Load runs the LISTs of a round at once.
func sortedCalls(actions ...[]k8stesting.Action) []call {
	out := calls(actions...)
	slices.SortFunc(out, func(a, b call) int {
		return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
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

const (
	agentLabels   = "app.kubernetes.io/component=agent,app.kubernetes.io/name=vmctl"
	derivedLabels = "vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype"
	vmiLabels     = "vmctl.kubevirt.io/prototype"
	agentEvents   = "involvedObject.kind=Pod,source=vmctl-agent,type=Warning"
)

func TestLoad(t *testing.T) {
	pod := func(p corev1.Pod) runtime.Object { return &p }
	vm := func(v kubevirtv1.VirtualMachine) runtime.Object { return &v }
	vmiObj := func(v kubevirtv1.VirtualMachineInstance) runtime.Object {
		v.Labels = map[string]string{"vmctl.kubevirt.io/prototype": "web"}
		return &v
	}
	unlabelled := func(ns, name, uid string) corev1.Pod {
		p := agentPod(ns, name, uid, "n1", "web", time.Hour)
		p.Labels = nil
		return p
	}
	orphans := func(ns string, n int) []runtime.Object {
		var out []runtime.Object
		for i := range n {
			out = append(out, vm(derivedVM(ns, "web", 1, ns, fmt.Sprintf("gone-%02d", i), fmt.Sprintf("uid-%02d", i), "n1", time.Hour)))
		}
		return out
	}

	tests := []struct {
		name                                                string
		query                                               Query
		kube                                                []runtime.Object
		virt                                                []runtime.Object
		wantCalls                                           []call
		wantPods, wantOwners, wantVMs, wantProtos, wantVMIs int
		wantLaunchers                                       int
	}{{
		name:  "one namespace: VMs, instances and agents by label, the prototype by name, never other VMs",
		query: Query{Namespace: "ns"},
		kube:  []runtime.Object{pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)), pod(unlabelled("ns", "plain", "uid-plain"))},
		virt: []runtime.Object{vm(protoVM("ns", "web", 1)), vm(protoVM("ns", "not-vmctl", 1)), vm(derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)),
			vmiObj(vmi("ns", "web-a", "n1")), vmiObj(vmi("other", "web-b", "n1"))},
		wantCalls: []call{
			{"list", "pods", "ns", agentLabels, ""},
			{"list", "virtualmachineinstances", "ns", vmiLabels, ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
			{"list", "virtualmachines", "ns", derivedLabels, ""},
		},
		wantPods: 1, wantVMs: 1, wantProtos: 1, wantVMIs: 1,
	}, {
		name:  "a VM's Pod without agent labels is read by the name the VM records",
		query: Query{Namespace: "ns"},
		kube:  []runtime.Object{pod(unlabelled("ns", "manual", "uid-m")), pod(unlabelled("ns", "bystander", "uid-b"))},
		virt:  []runtime.Object{vm(protoVM("ns", "web", 1)), vm(derivedVM("ns", "web", 1, "ns", "manual", "uid-m", "n1", time.Hour))},
		wantCalls: []call{
			{"list", "pods", "ns", "", "metadata.name=manual"},
			{"list", "pods", "ns", agentLabels, ""},
			{"list", "virtualmachineinstances", "ns", vmiLabels, ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
			{"list", "virtualmachines", "ns", derivedLabels, ""},
		},
		wantOwners: 1, wantVMs: 1, wantProtos: 1,
	}, {
		name:  "past kube.MaxByName Pods to find in a namespace, one LIST of the namespace reads them",
		query: Query{Namespace: "ns"},
		virt:  append(orphans("ns", kube.MaxByName+1), vm(protoVM("ns", "web", 1))),
		wantCalls: []call{
			{"list", "pods", "ns", "", ""},
			{"list", "pods", "ns", agentLabels, ""},
			{"list", "virtualmachineinstances", "ns", vmiLabels, ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
			{"list", "virtualmachines", "ns", derivedLabels, ""},
		},
		wantVMs: kube.MaxByName + 1, wantProtos: 1,
	}, {
		name:  "all namespaces, past kube.MaxByName sources in all: one LIST over all namespaces",
		query: Query{},
		virt: func() []runtime.Object {
			var out []runtime.Object
			for i := range kube.MaxByName + 1 {
				ns := fmt.Sprintf("ns-%02d", i)
				out = append(out, vm(derivedVM(ns, "web", 1, ns, "gone", "uid-"+ns, "n1", time.Hour)), vm(protoVM(ns, "web", 1)))
			}
			return out
		}(),
		wantCalls: []call{
			{"list", "pods", "", "", ""},
			{"list", "pods", "", agentLabels, ""},
			{"list", "virtualmachineinstances", "", vmiLabels, ""},
			{"list", "virtualmachines", "", "", ""},
			{"list", "virtualmachines", "", derivedLabels, ""},
		},
		wantVMs: kube.MaxByName + 1, wantProtos: 2 * (kube.MaxByName + 1),
	}, {
		name:  "all namespaces, prototype and pod selector: no Pod read by name",
		query: Query{Prototype: "web", PodSelector: "app.kubernetes.io/instance=web"},
		kube:  []runtime.Object{pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)), pod(agentPod("other", "b", "uid-b", "n1", "web", time.Hour))},
		virt:  []runtime.Object{vm(derivedVM("ns", "web", 1, "ns", "gone", "uid-g", "n1", time.Hour))},
		wantCalls: []call{
			// Neither Pod has its VM: one LIST of the agents' Events, of all namespaces.
			{"list", "events", "", "", agentEvents},
			{"list", "pods", "", "app.kubernetes.io/component=agent,app.kubernetes.io/instance=web,app.kubernetes.io/name=vmctl", ""},
			{"list", "virtualmachineinstances", "", "vmctl.kubevirt.io/prototype=web", ""},
			{"list", "virtualmachines", "", "vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype=web", ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
		},
		wantPods: 2, wantVMs: 1,
	}, {
		name:  "cross-namespace agents: the VMs of their namespaces, their Pods and prototypes by name",
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
			vm(protoVM("protos", "web", 1)),
			vm(protoVM("ns", "web", 1)),
		},
		wantCalls: []call{
			{"list", "pods", "ns", agentLabels, ""},
			{"list", "pods", "podns", "", "metadata.name=x"},
			{"list", "virtualmachineinstances", "ns", vmiLabels, ""},
			{"list", "virtualmachineinstances", "vms", vmiLabels, ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
			{"list", "virtualmachines", "ns", derivedLabels, ""},
			{"list", "virtualmachines", "protos", "", "metadata.name=web"},
			{"list", "virtualmachines", "vms", derivedLabels, ""},
		},
		wantPods: 1, wantOwners: 1, wantVMs: 2, wantProtos: 2,
	}, {
		name:  "an agent Pod that holds its VM's room: the VMs' launcher Pods too, by label",
		query: Query{Namespace: "ns"},
		kube: []runtime.Object{
			pod(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=559Mi"))),
			pod(func() corev1.Pod {
				l := launcher("ns", "web-a", "n1", "", "106m", "559Mi")
				l.Labels = map[string]string{"kubevirt.io": "virt-launcher", "vmctl.kubevirt.io/prototype": "web"}
				return l
			}()),
		},
		virt: []runtime.Object{vm(protoVM("ns", "web", 1)), vm(derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour))},
		wantCalls: []call{
			{"list", "pods", "ns", agentLabels, ""},
			{"list", "pods", "ns", "kubevirt.io=virt-launcher,vmctl.kubevirt.io/prototype", ""},
			{"list", "virtualmachineinstances", "ns", vmiLabels, ""},
			{"list", "virtualmachines", "ns", "", "metadata.name=web"},
			{"list", "virtualmachines", "ns", derivedLabels, ""},
		},
		wantPods: 1, wantVMs: 1, wantProtos: 1, wantLaunchers: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, virt := fakes(tt.kube, tt.virt)
			log := record(&kc.Fake, &virt.Fake)
			inv, err := Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores()}, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tt.wantCalls, sortedCalls(*log)); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
			got := []int{len(inv.Pods), len(inv.OwnerPods), len(inv.VMs), len(inv.Prototypes), len(inv.VMIs), len(inv.Launchers)}
			want := []int{tt.wantPods, tt.wantOwners, tt.wantVMs, tt.wantProtos, tt.wantVMIs, tt.wantLaunchers}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("pods, owner pods, VMs, prototypes, VMIs, launchers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadStopsAtTheFirstRefusal(t *testing.T) {
	kc := kubefake.NewClientset()
	virt := kubevirtfake.NewSimpleClientset()
	vm := derivedVM("ns", "web", 1, "other", "a", "uid-a", "n1", time.Hour)
	if _, err := virt.KubevirtV1().VirtualMachines("ns").Create(t.Context(), &vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "other" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "u" cannot list resource "pods" in API group "" in the namespace "other"`))
		}
		return false, nil, nil
	})
	_, err := Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores()}, Query{Namespace: "ns"})
	want := `list pods named "a" in namespace "other": pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace "other"`
	if err == nil || err.Error() != want {
		t.Errorf("Load: %v, want %s", err, want)
	}
}

// TestLoadReadsRevisionStores: where an agent Pod pins a VM revision, Load
// lists the revision stores of its namespace, by label, and keeps of each
// the revisions it holds rewritten; where none does, it lists none.
func TestLoadReadsRevisionStores(t *testing.T) {
	const pin = "1a2b3c4d5e"
	for _, pinned := range []bool{true, false} {
		var mods []func(*corev1.Pod)
		if pinned {
			mods = append(mods, pinning(pin))
		}
		pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, mods...)
		kc, virt := fakes([]runtime.Object{&pod}, nil)
		store := storeWith(t, "ns", map[string]string{pin: "whatever"})
		full := revision.NewStore("ns", "web")
		full.Revisions[pin] = revision.Snapshot(&kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}})
		obj, err := full.Object()
		if err != nil {
			t.Fatal(err)
		}
		dyn := stores(obj).(*dynamicfake.FakeDynamicClient)
		inv, err := Load(t.Context(), kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: dyn}, Query{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		var lists []string
		for _, a := range dyn.Actions() {
			if l, ok := a.(k8stesting.ListAction); ok {
				lists = append(lists, l.GetNamespace()+" "+l.GetListRestrictions().Labels.String())
			}
		}
		if !pinned {
			if len(lists) != 0 || len(inv.Stores) != 0 {
				t.Errorf("no Pod pins a revision, yet Load listed stores %v and kept %d", lists, len(inv.Stores))
			}
			continue
		}
		if diff := gocmp.Diff([]string{"ns " + revision.StoreSelector}, lists); diff != "" {
			t.Errorf("store LISTs (-want +got):\n%s", diff)
		}
		if diff := gocmp.Diff(rewrittenPins([]*unstructured.Unstructured{store}), rewrittenPins(inv.Stores)); diff != "" {
			t.Errorf("rewritten revisions (-want +got):\n%s", diff)
		}
	}
}
