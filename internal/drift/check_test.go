package drift

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/fakeapi"
)

// derivedFor is the stored VM the agent of Pod name (uid, on node a) made from proto.
func derivedFor(t *testing.T, proto *kubevirtv1.VirtualMachine, pod string) kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(proto, derive.Pod{Name: pod, Namespace: proto.Namespace, UID: types.UID("uid-" + pod), Node: "node-a"}, derive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return *asStored(vm)
}

// sources are the Sources of VMs read through virt, without revision
// stores.
func sources(virt kubevirt.Interface, allNamespaces bool) *Sources {
	return NewSources(kube.Clients{Kube: kubefake.NewClientset(), KubeVirt: virt, Dynamic: fakeapi.NewDynamic()}, allNamespaces)
}

type outcome struct {
	Name    string
	Drifted bool
	Err     string
}

func outcomes(checks []Check) []outcome {
	var out []outcome
	for _, c := range checks {
		o := outcome{Name: c.Namespace + "/" + c.Name, Drifted: c.Drifted()}
		if c.Err != nil {
			o.Err = c.Err.Error()
		}
		out = append(out, o)
	}
	return out
}

func TestEach(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.DataVolumeTemplates = nil // no shared-volume questions here
	proto.Spec.Template.Spec.Volumes = proto.Spec.Template.Spec.Volumes[:1]
	proto.Spec.Template.Spec.Domain.Devices.Disks = proto.Spec.Template.Spec.Domain.Devices.Disks[:1]

	ok := derivedFor(t, proto, "web-0")
	drifted := derivedFor(t, proto, "web-1")
	drifted.Spec.Template.Spec.Domain.CPU.Cores = 16
	orphanProto := proto.DeepCopy()
	orphanProto.Name = "gone"
	noProto := derivedFor(t, orphanProto, "web-2")
	other := proto.DeepCopy()
	other.Name = "db"
	otherVM := derivedFor(t, other, "db-0")
	elsewhere := derivedFor(t, proto, "web-3")
	elsewhere.Namespace, elsewhere.OwnerReferences = "elsewhere", nil // an ownerReference cannot cross namespaces
	notOurs := *proto.DeepCopy()
	notOurs.Name = "hand-made"
	notOurs.Annotations = map[string]string{contract.AnnotationPodUID: "x", contract.AnnotationPrototypeName: "fedora"}

	copied := ok.DeepCopy() // a derived VM copied and renamed: vmctl's labels, not its Pod's ownerReference
	copied.Name, copied.OwnerReferences = "golden", nil
	objs := []runtime.Object{proto, &drifted, &ok, &noProto, other, &otherVM, &elsewhere, &notOurs, copied}
	tests := []struct {
		name, namespace, prototype string
		want                       []outcome
		wantCalls                  []string
	}{{
		name: "all namespaces and prototypes",
		want: []outcome{
			{Name: "elsewhere/fedora-web-3"},
			{Name: "vms/db-db-0"},
			{Name: "vms/fedora-web-0"},
			{Name: "vms/fedora-web-1", Drifted: true},
			{Name: "vms/gone-web-2", Err: "prototype vms/gone not found; restore it, or delete the VM's agent Pod"},
		},
		wantCalls: []string{
			"list virtualmachines  vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype",
			"list virtualmachines vms metadata.name=db",
			"list virtualmachines vms metadata.name=fedora",
			"list virtualmachines vms metadata.name=gone",
		},
	}, {
		name: "one namespace, one prototype", namespace: "vms", prototype: "fedora",
		want: []outcome{{Name: "vms/fedora-web-0"}, {Name: "vms/fedora-web-1", Drifted: true}},
		wantCalls: []string{
			"list virtualmachines vms vmctl.kubevirt.io/pod,vmctl.kubevirt.io/prototype=fedora",
			"list virtualmachines vms metadata.name=fedora",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			virt := kubevirtfake.NewSimpleClientset(objs...)
			var mu sync.Mutex
			var calls []string
			virt.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				r := a.(k8stesting.ListAction).GetListRestrictions()
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, strings.Join([]string{a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), r.Labels.String() + r.Fields.String()}, " "))
				return false, nil, nil
			})
			var checks []Check
			err := sources(virt, tt.namespace == "").Each(t.Context(), tt.namespace, tt.prototype, func(c Check) error {
				checks = append(checks, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(checks)); diff != "" {
				t.Errorf("Each (-want +got):\n%s", diff)
			}
			slices.Sort(calls[1:]) // the prototypes are read at once
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEachStreams serves the derived VMs two a page, as an API server may,
// and checks that every page was compared and handed on before the next
// was asked for: memory holds a page, not every VM.
func TestEachStreams(t *testing.T) {
	proto := loadPrototype(t)
	objs := []runtime.Object{proto}
	for i := range 5 {
		vm := derivedFor(t, proto, fmt.Sprintf("web-%d", i))
		objs = append(objs, &vm)
	}
	virt := kubevirtfake.NewSimpleClientset(objs...)
	seen := 0
	var seenAtPage []int
	virt.PrependReactor("list", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.ListActionImpl)
		if l.GetListRestrictions().Fields.String() != "" {
			return false, nil, nil // a prototype by name
		}
		seenAtPage = append(seenAtPage, seen)
		all, err := virt.Tracker().List(a.GetResource(), kubevirtv1.VirtualMachineGroupVersionKind, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		var derived []kubevirtv1.VirtualMachine
		for _, vm := range all.(*kubevirtv1.VirtualMachineList).Items {
			if vm.Name != proto.Name {
				derived = append(derived, vm)
			}
		}
		from, _ := strconv.Atoi(l.ListOptions.Continue)
		page := &kubevirtv1.VirtualMachineList{Items: derived[from:min(from+2, len(derived))]}
		if from+2 < len(derived) {
			page.Continue = strconv.Itoa(from + 2)
		}
		return true, page, nil
	})
	err := sources(virt, false).Each(t.Context(), "vms", "", func(Check) error {
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 2, 4}, seenAtPage); diff != "" {
		t.Errorf("checks handed on when each page was asked for (-want +got):\n%s", diff)
	}
	if seen != 5 {
		t.Errorf("%d checks, want 5", seen)
	}
}

func TestCheckVMReportsDerivationErrors(t *testing.T) {
	proto := loadPrototype(t)
	live := derivedFor(t, proto, "web-0")
	proto.Spec.Template = nil // derive.VM refuses this prototype
	if c := CheckVM(&live, proto); c.Err == nil {
		t.Fatalf("want a check with an error, got %+v", c)
	}
}

// TestCheckVMSeesAPlacementChange: a prototype's placement is part of what
// its VMs derive, so diff shows a new nodeSelector or toleration as drift,
// which rollout restart rolls out.
func TestCheckVMSeesAPlacementChange(t *testing.T) {
	proto := loadPrototype(t)
	live := derivedFor(t, proto, "web-0")
	if c := CheckVM(&live, proto); c.Err != nil || c.Drifted() {
		t.Fatalf("an unchanged prototype: %+v", c)
	}
	proto.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	proto.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	c := CheckVM(&live, proto)
	if c.Err != nil || !strings.Contains(c.Diff, "-        kubevirt.io/schedulable: \"true\"") || !strings.Contains(c.Diff, "+        pool: gpu") ||
		!strings.Contains(c.Diff, "+      tolerations:") {
		t.Errorf("diff of a prototype with a new placement:\n%s (err %v)", c.Diff, c.Err)
	}
}

// TestEachSeesVMsNamedByAnOlderRule: a VM named by an older rule than
// derive.Name ("<pod>-<prototype>") is still compared, with its data
// volumes and hostname named after it, so it shows no drift for its name.
func TestEachSeesVMsNamedByAnOlderRule(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.Template.Spec.Hostname = "fedora"
	vm, err := derive.VM(proto, derive.Pod{Name: "web-0", Namespace: proto.Namespace, UID: "uid-web-0", Node: "node-a"},
		derive.Options{AllowSharedVolumes: true, Name: "web-0-" + proto.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(vm.Spec.DataVolumeTemplates) == 0 {
		t.Fatal("the prototype has no dataVolumeTemplates; the test needs one named after the VM")
	}
	virt := kubevirtfake.NewSimpleClientset(proto, asStored(vm))
	var got []outcome
	err = sources(virt, true).Each(t.Context(), "", "", func(c Check) error {
		got = append(got, outcomes([]Check{c})...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []outcome{{Name: proto.Namespace + "/web-0-" + proto.Name}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Each (-want +got):\n%s", diff)
	}
}

// TestCheckVMSeesThePodsOwnClaim: a StatefulSet's VM uses its Pod's claim,
// <claim>-<pod>, where the prototype names the claim: no drift. A VM on
// another replica's claim drifted.
func TestCheckVMSeesThePodsOwnClaim(t *testing.T) {
	proto := loadPrototype(t)
	proto.Spec.Template.Spec.Volumes = append(proto.Spec.Template.Spec.Volumes, kubevirtv1.Volume{Name: "data",
		VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}})
	vm, err := derive.VM(proto, derive.Pod{Name: "db-0", Namespace: proto.Namespace, UID: "uid-db-0", Node: "node-a"},
		derive.Options{ReplicaClaims: []string{"data"}})
	if err != nil {
		t.Fatal(err)
	}
	live := asStored(vm)
	if c := CheckVM(live, proto); c.Err != nil || c.Drifted() {
		t.Fatalf("the Pod's own claim: %+v", c)
	}
	claim := &live.Spec.Template.Spec.Volumes[len(live.Spec.Template.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName
	*claim = "data-db-1"
	if c := CheckVM(live, proto); c.Err != nil || !strings.Contains(c.Diff, "-          claimName: data-db-1") {
		t.Errorf("a VM on another replica's claim: want drift naming it, got %+v", c)
	}
}
