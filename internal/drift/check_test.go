package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
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

func TestCheckAll(t *testing.T) {
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
	elsewhere.Namespace = "elsewhere"
	notOurs := *proto.DeepCopy()
	notOurs.Name = "hand-made"
	notOurs.Annotations = map[string]string{derive.AnnotationPodUID: "x", derive.AnnotationPrototypeName: "fedora"}

	vms := []kubevirtv1.VirtualMachine{*proto, drifted, ok, noProto, *other, otherVM, elsewhere, notOurs}
	tests := []struct {
		name, namespace, prototype string
		want                       []outcome
	}{{
		name: "all namespaces and prototypes",
		want: []outcome{
			{Name: "elsewhere/fedora-web-3"},
			{Name: "vms/db-db-0"},
			{Name: "vms/fedora-web-0"},
			{Name: "vms/fedora-web-1", Drifted: true},
			{Name: "vms/gone-web-2", Err: "prototype vms/gone not found; restore it, or delete the VM's agent Pod"},
		},
	}, {
		name: "one namespace, one prototype", namespace: "vms", prototype: "fedora",
		want: []outcome{{Name: "vms/fedora-web-0"}, {Name: "vms/fedora-web-1", Drifted: true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomes(CheckAll(vms, tt.namespace, tt.prototype))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckAll (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckAllReportsDerivationErrors(t *testing.T) {
	proto := loadPrototype(t)
	live := derivedFor(t, proto, "web-0")
	proto.Spec.Template = nil // derive.VM refuses this prototype
	checks := CheckAll([]kubevirtv1.VirtualMachine{*proto, live}, "", "")
	if len(checks) != 1 || checks[0].Err == nil {
		t.Fatalf("want one check with an error, got %+v", checks)
	}
}

func TestLoad(t *testing.T) {
	proto := loadPrototype(t)
	cross := derivedFor(t, proto, "web-0")
	cross.Namespace = "vms-here"
	virt := kubevirtfake.NewSimpleClientset(proto, &cross)
	var got []string
	virt.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
		return false, nil, nil
	})
	vms, err := Load(t.Context(), virt, "vms-here")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"list virtualmachines vms-here", "list virtualmachines vms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	if len(vms) != 2 {
		t.Errorf("got %d VMs, want the derived VM and its prototype", len(vms))
	}
}
